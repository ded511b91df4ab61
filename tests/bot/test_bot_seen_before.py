"""Seen before here: the same failure answered earlier in this workspace is linked from the new reply,
with its votes, or with the correction on-call made there; only where Slack still gives the bot a
link, never from another workspace, never the thread itself."""

from __future__ import annotations

import time

import pytest
from slack_harness import OOM_LOG

from servetriage.bot.standin import message_event
from servetriage.corpus import load_corpus
from servetriage.feedback import FeedbackStore, StoreFeedback


@pytest.fixture
def with_store(start_bot, settings):
    store = FeedbackStore(settings.db_path)
    running = start_bot(settings, recorder=store.replies, feedback=StoreFeedback(store, load_corpus()))
    yield running, store
    running.close()
    store.close()


def _answer(slack, n: int):
    return slack.wait_for("chat.postMessage", n)[n - 1]


def _posted(store, n: int) -> None:
    deadline = time.monotonic() + 10
    while sum(1 for r in store.db.query("SELECT message_ts FROM diagnoses") if r["message_ts"]) < n:
        assert time.monotonic() < deadline, "the replies were not linked to their messages"
        time.sleep(0.02)


def _first_answer(bot, store, slack):
    """The OOM log pasted in C1, answered, and the answer linked to its message."""
    bot.event(message_event(OOM_LOG, channel="C1", user="UA", ts="1700000000.000100"))
    first = _answer(slack, 1)
    _posted(store, 1)
    return first


def test_an_earlier_answer_is_linked_with_its_votes_and_a_correction(with_store, slack):
    bot, store = with_store
    first = _first_answer(bot, store, slack)
    assert "Seen before" not in first.text + str(first.blocks)
    [row] = store.db.query("SELECT id, message_ts FROM diagnoses")
    store.votes.vote(row["id"], "U1", True)
    store.votes.vote(row["id"], "U2", True)

    bot.event(message_event(OOM_LOG, channel="C2", user="UB", ts="1700000100.000100"))
    second = _answer(slack, 2)
    context = " ".join(e["text"] for b in second.blocks if b["type"] == "context" for e in b["elements"])
    assert "*Seen before here:*" in context and "(👍 2 · 👎 0)" in context
    link = "https://stand-in.slack.com/archives/C1/p" + row["message_ts"].replace(".", "")
    assert f"<{link}|" in context  # chat.getPermalink of the first reply
    _posted(store, 2)

    # on-call corrects the second answer (two voices: the answer gave `host-memory` no support); a third
    # paste names that correction
    ids = [r["id"] for r in store.db.query("SELECT id FROM diagnoses ORDER BY created")]
    store.votes.correct(ids[1], "U3", "host-memory")
    store.votes.correct(ids[1], "U4", "host-memory")
    bot.event(message_event(OOM_LOG, channel="C3", user="UC", ts="1700000200.000100"))
    third = _answer(slack, 3)
    context = " ".join(e["text"] for b in third.blocks if b["type"] == "context" for e in b["elements"])
    assert "corrected to `host-memory` by on-call" in context and context.count("archives/") == 2
    asked = [c for c in slack.calls_to("chat.getPermalink") if c.args.get("message_ts") == row["message_ts"]]
    assert len(asked) == 1  # linked by the second and the third answer, asked of Slack once


def test_no_link_to_a_channel_the_bot_left_nor_to_the_same_thread(with_store, slack):
    bot, store = with_store
    _first_answer(bot, store, slack)
    slack.left_channels.add("C1")
    bot.event(message_event(OOM_LOG, channel="C2", user="UB", ts="1700000100.000100"))
    assert "Seen before" not in str(_answer(slack, 2).blocks)
    _posted(store, 2)
    # a re-paste in the thread of the second answer: the second answer is this thread's own
    bot.event(message_event(OOM_LOG, channel="C2", user="UB", ts="1700000150.000100", thread_ts="1700000100.000100"))
    assert "Seen before" not in str(_answer(slack, 3).blocks)


def test_nothing_crosses_workspaces(with_store, slack):
    bot, store = with_store
    _first_answer(bot, store, slack)
    with store.db.transaction() as tx:
        tx.execute("UPDATE diagnoses SET team = 'TOTHER'")
    bot.event(message_event(OOM_LOG, channel="C2", user="UB", ts="1700000100.000100"))
    assert "Seen before" not in str(_answer(slack, 2).blocks)


def test_in_a_storm_the_same_failure_in_one_channel_gets_a_pointer_not_a_copy(with_store, slack):
    bot, store = with_store
    _first_answer(bot, store, slack)
    [row] = store.db.query("SELECT id, message_ts FROM diagnoses")
    store.votes.vote(row["id"], "U1", True)
    for n in range(2):
        bot.event(message_event(OOM_LOG, channel="C1", user=f"U{n}", ts=f"17000001{n}0.000100"))
    replies = slack.wait_for("chat.postMessage", 3)
    link = "https://stand-in.slack.com/archives/C1/p" + row["message_ts"].replace(".", "")
    for pointer in replies[1:]:
        assert pointer.text.startswith("🔁 Same failure as") and link in pointer.text and "👍 1" in pointer.text
        assert not any(b.get("block_id") == "servetriage_feedback" for b in pointer.blocks)  # no copy of the answer
    assert {r.args["thread_ts"] for r in replies[1:]} == {"1700000100.000100", "1700000110.000100"}
    # asked for explicitly, the answer is given in full
    bot.event({"type": "app_mention", "user": "U9", "channel": "C1", "ts": "1700000200.000100",
               "text": "<@UBOT> ```\n" + OOM_LOG + "```"})
    full = slack.wait_for("chat.postMessage", 4)[3]
    assert any(b.get("block_id") == "servetriage_feedback" for b in full.blocks)
