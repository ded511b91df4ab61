"""Pasted logs in a channel: one reply, in the right thread, naming the cause; and the quiet cases."""

from __future__ import annotations

import dataclasses
import json

from slack_harness import OOM_CATEGORY, OOM_LOG, replies

from servetriage.bot import FEEDBACK_DOWN, FEEDBACK_UP, InMemoryRecorder
from servetriage.bot.standin import message_event


def _fenced(text: str) -> str:
    return "here is what we got:\n```\n" + text + "```"


def test_pasted_log_gets_one_reply_in_its_thread_naming_the_cause(start_bot, settings, slack):
    recorder = InMemoryRecorder()
    bot = start_bot(settings, recorder=recorder)
    event = message_event(_fenced(OOM_LOG), channel="C0001", ts="1712000000.000100")
    resp = bot.event(event)
    assert resp.status == 200
    [reply] = slack.wait_for("chat.postMessage")
    bot.drain()
    assert len(replies(slack)) == 1
    assert reply.args["channel"] == "C0001"
    assert reply.args["thread_ts"] == "1712000000.000100"
    assert OOM_CATEGORY in reply.text
    assert reply.headers["authorization"] == f"Bearer {slack.token}"
    # the feedback buttons carry the id the recorder gave, and the reply ts was attached to it
    actions = [b for b in reply.blocks if b["type"] == "actions"][0]["elements"]
    assert [a["action_id"] for a in actions] == [FEEDBACK_UP, FEEDBACK_DOWN]
    recorded = recorder.get(actions[0]["value"])
    assert recorded is not None and recorded.diagnosis.category == OOM_CATEGORY
    assert recorded.channel == "C0001" and recorded.thread_ts == "1712000000.000100" and recorded.source == "message"
    assert recorded.reply_ts is not None and "CUDA out of memory" in recorded.excerpt


def test_slack_escaping_is_undone_before_diagnosing(bot, slack):
    log = OOM_LOG + "ERROR <stdin> & shell: python -c 'x' > /dev/null\n"
    bot.event(message_event(_fenced(log)))
    [reply] = slack.wait_for("chat.postMessage")
    assert OOM_CATEGORY in reply.text


def test_reply_goes_into_an_existing_thread(bot, slack):
    bot.event(message_event(_fenced(OOM_LOG), ts="1712000000.000300", thread_ts="1712000000.000200"))
    [reply] = slack.wait_for("chat.postMessage")
    assert reply.args["thread_ts"] == "1712000000.000200"


def test_retried_and_duplicate_events_are_answered_once_also_after_a_restart(start_bot, settings, slack):
    event = message_event(_fenced(OOM_LOG), ts="1712000000.000400")
    first = start_bot(settings)
    assert first.event(event, event_id="Ev0DUP").status == 200
    slack.wait_for("chat.postMessage")
    assert first.event(event, event_id="Ev0DUP", retry=1).status == 200
    assert first.event(event, event_id="Ev0DUP").status == 200
    first.close()
    # a new process on the same data dir still knows the event
    second = start_bot(settings)
    assert second.event(event, event_id="Ev0DUP", retry=2).status == 200
    second.drain()
    assert len(replies(slack)) == 1


def test_a_retry_whose_first_delivery_never_arrived_is_answered(bot, slack):
    bot.event(message_event(_fenced(OOM_LOG)), event_id="Ev0LOST", retry=1)
    slack.wait_for("chat.postMessage")


def test_the_bots_own_messages_and_other_bots_are_ignored(bot, slack):
    bot.event(message_event(_fenced(OOM_LOG), user="UBOT"))  # its own user
    bot.event(message_event(_fenced(OOM_LOG), user="UBOT", bot_id="BBOT"))
    bot.event(message_event(_fenced(OOM_LOG), user="U0BOT2", bot_id="B0OTHER"))
    bot.event({**message_event(_fenced(OOM_LOG)), "subtype": "bot_message"})
    bot.drain()
    assert replies(slack) == []


def test_chit_chat_edits_and_deletions_are_ignored(bot, slack):
    bot.event(message_event("anyone seen a RuntimeError: CUDA error today? lunch at 12"))
    bot.event(message_event("the deploy went fine\nthanks all"))
    edited = message_event(_fenced(OOM_LOG))
    bot.event({"type": "message", "subtype": "message_changed", "channel": "C0001", "ts": "1712000000.9",
               "message": edited, "previous_message": {"text": "x"}})
    bot.event({"type": "message", "subtype": "message_deleted", "channel": "C0001", "ts": "1712000000.8"})
    bot.drain()
    assert replies(slack) == []


def test_a_mention_is_left_to_the_mention_listener(bot, slack):
    bot.event(message_event(_fenced(OOM_LOG), mention="UBOT"))
    bot.drain()
    assert replies(slack) == []


def test_channel_allowlist(start_bot, settings, slack):
    bot = start_bot(dataclasses.replace(settings, channels=("C0WATCHED",)))
    bot.event(message_event(_fenced(OOM_LOG), channel="C0OTHER"))
    bot.event(message_event(_fenced(OOM_LOG), channel="C0WATCHED"))
    bot.drain()
    assert [c.args["channel"] for c in replies(slack)] == ["C0WATCHED"]


def test_a_storm_in_one_channel_is_paced_not_dropped(start_bot, settings, slack):
    bot = start_bot(dataclasses.replace(settings, channel_rate_per_minute=120))  # one reply every 0.5 s
    for _ in range(4):
        bot.event(message_event(_fenced(OOM_LOG), channel="C0BUSY"))
    bot.event(message_event(_fenced(OOM_LOG), channel="C0CALM"))
    bot.drain()
    busy = [c.at for c in replies(slack) if c.args["channel"] == "C0BUSY"]
    assert len(busy) == 4 and len([c for c in replies(slack) if c.args["channel"] == "C0CALM"]) == 1
    assert all(b - a >= 0.45 for a, b in zip(busy, busy[1:]))  # paced, every paste answered


def test_past_a_long_wait_the_job_goes_back_to_the_queue_until_its_turn(start_bot, settings, slack):
    bot = start_bot(dataclasses.replace(settings, channel_rate_per_minute=2))  # one reply every 30 s
    for _ in range(3):
        bot.event(message_event(_fenced(OOM_LOG), channel="C0BUSY"))
    bot.drain()
    assert len(replies(slack)) == 1
    assert bot.bot.triage.queue.counts()["queued"] == 2  # waiting their turn: recorded, not dropped


def test_ratelimited_post_is_retried_after_retry_after(bot, slack):
    slack.fail_next("chat.postMessage", error="ratelimited", headers={"Retry-After": "1"})
    bot.event(message_event(_fenced(OOM_LOG)))
    first, second = slack.wait_for("chat.postMessage", count=2)
    assert second.at - first.at >= 0.9  # waited as Slack asked
    bot.drain()
    assert len(replies(slack)) == 2 and OOM_CATEGORY in second.text
    assert 'servetriage_pace_waits_total{how="retry_after"} 1.0' in bot.bot.metrics.exposition().decode()


def test_web_api_errors_are_survived(bot, slack):
    slack.fail_next("chat.postMessage", error="not_in_channel")
    slack.fail_next("chat.postMessage", error="internal_error", status=500)
    bot.event(message_event(_fenced(OOM_LOG)))
    bot.event(message_event(_fenced(OOM_LOG)))
    slack.wait_for("chat.postMessage", count=2)
    # the process is still serving
    assert bot.get("/healthz").status == 200
    bot.event(message_event(_fenced(OOM_LOG), ts="1712000001.000001"))
    slack.wait_for("chat.postMessage", count=3)


def test_unknown_log_says_so_plainly(bot, slack):
    log = "```\n2024-05-12 10:00:01 INFO starting\n2024-05-12 10:00:02 ERROR widget frobnication failed: code 7\n```"
    bot.event(message_event(log))
    [reply] = slack.wait_for("chat.postMessage")
    assert "Not recognised" in reply.text
    assert json.dumps(reply.blocks).count("feedback_") == 2


def test_the_bot_answers_even_while_auth_test_fails(start_bot, settings, slack):
    slack.fail_next("auth.test", error="internal_error", status=500, times=5)
    bot = start_bot(settings)
    assert bot.bot.authorize.bot_user_id is None
    bot.event(message_event(_fenced(OOM_LOG)))
    [reply] = slack.wait_for("chat.postMessage")
    assert OOM_CATEGORY in reply.text


def test_rejected_blocks_fall_back_to_plain_text(bot, slack):
    slack.fail_next("chat.postMessage", error="invalid_blocks")
    bot.event(message_event(_fenced(OOM_LOG)))
    first, second = slack.wait_for("chat.postMessage", count=2)
    assert "blocks" in first.args and "blocks" not in second.args and OOM_CATEGORY in second.text
