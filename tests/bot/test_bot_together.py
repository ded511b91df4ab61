"""Several logs of one failure in Slack, answered once: the files of one message, the members of one
archive, and a follow-up pasted in the thread of an answer that said what was missing."""

from __future__ import annotations

import io
import time
import zipfile

import pytest
from ranklogs import RANK0, RANK3

from servetriage.bot.standin import message_event
from servetriage.corpus import load_corpus
from servetriage.feedback import FeedbackStore, StoreFeedback


def _text(reply) -> str:
    return reply.text + " " + str(reply.blocks)


def test_two_files_in_one_message_get_one_answer_naming_the_first_failing_file(bot, slack):
    files = [slack.add_file(name, body.encode(), channel="C0001", ts="1712000300.000100")
             for name, body in (("rank0.log", RANK0), ("rank3.log", RANK3))]
    bot.event(message_event("both ranks", ts="1712000300.000100", subtype="file_share", files=files))
    [reply] = slack.wait_for("chat.postMessage")
    time.sleep(0.5)
    assert len(slack.calls_to("chat.postMessage")) == 1
    assert "gpu-oom" in reply.text and "rank3.log" in _text(reply) and "2 logs read together" in _text(reply)


def test_an_archive_of_rank_logs_is_read_as_its_members_together(bot, slack):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("rank0.log", RANK0)
        z.writestr("rank3.log", RANK3)
    f = slack.add_file("ranks.zip", buf.getvalue(), channel="C0001", ts="1712000400.000100",
                       mimetype="application/zip", filetype="zip")
    bot.event(message_event("", ts="1712000400.000100", subtype="file_share", files=[f]))
    [reply] = slack.wait_for("chat.postMessage")
    assert "gpu-oom" in reply.text and "rank3.log" in _text(reply) and "2 logs read together" in _text(reply)


@pytest.fixture
def remembering(start_bot, settings):
    store = FeedbackStore(settings.db_path)
    running = start_bot(settings, recorder=store.replies, feedback=StoreFeedback(store, load_corpus()))
    yield running
    running.close()
    store.close()


def test_a_follow_up_in_the_thread_is_read_with_the_log_that_was_missing_its_cause(remembering, slack):
    remembering.event(message_event(RANK0, channel="C0001", user="UA", ts="1712000500.000100"))
    [first] = slack.wait_for("chat.postMessage")
    assert "distributed-comm" in first.text and "timeout names" in _text(first)  # it says what to fetch
    time.sleep(0.3)  # the answer is recorded with its reply's ts
    remembering.event(message_event(RANK3, channel="C0001", user="UA", ts="1712000600.000100",
                                    thread_ts="1712000500.000100"))
    second = slack.wait_for("chat.postMessage", 2)[1]
    assert second.args["thread_ts"] == "1712000500.000100"
    assert "gpu-oom" in second.text and "2 logs read together" in _text(second)
