"""`/metrics` in Prometheus's text format: what the bot answered, how long it took, the queue, Slack's
errors, the votes; and the JSON log lines."""

from __future__ import annotations

import json
import logging
import time

from prometheus_client.parser import text_string_to_metric_families
from slack_harness import OOM_CATEGORY, OOM_LOG

from servetriage.bot import JsonLines
from servetriage.bot.standin import interactive_body, message_event
from servetriage.corpus import load_corpus
from servetriage.feedback import FeedbackStore, StoreFeedback


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_metrics_count_answers_replies_the_queue_errors_and_votes(start_bot, settings, slack):
    store = FeedbackStore(settings.db_path)
    bot = start_bot(settings, recorder=store.replies, feedback=StoreFeedback(store, load_corpus()))
    slack.fail_next("chat.postMessage", error="not_in_channel")
    bot.event(message_event("```\n" + OOM_LOG + "```", channel="C1", ts="1712000000.000100"))
    bot.event(message_event("```\n" + OOM_LOG + "```", channel="C2", ts="1712000001.000100"))
    [reply] = slack.wait_for("chat.postMessage", 2)[1:]
    [button] = [b for b in reply.blocks if b.get("block_id") == "servetriage_feedback"]
    up = button["elements"][0]
    payload = {"type": "block_actions", "user": {"id": "U1"}, "team": {"id": "T0001"}, "api_app_id": "A0001",
               "token": "legacy", "trigger_id": "trig.1", "channel": {"id": "C2"},
               "container": {"type": "message", "message_ts": "1712000001.9", "channel_id": "C2"},
               "actions": [{"type": "button", "action_id": up["action_id"], "block_id": button["block_id"],
                            "value": up["value"], "action_ts": f"{time.time():.6f}"}]}
    assert bot.post(interactive_body(payload)).status == 200
    deadline = time.monotonic() + 10
    while True:
        got = bot.get("/metrics")
        samples = _samples(got.body)
        if samples.get(("servetriage_queue_jobs", (("state", "done"),))) == 2 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert got.status == 200
    assert samples[("servetriage_diagnoses_total", (("category", OOM_CATEGORY), ("outcome", "answered")))] == 2
    assert samples[("servetriage_diagnosis_seconds_count", ())] == 2
    assert samples[("servetriage_event_to_reply_seconds_count", ())] == 1  # the refused post has no reply
    assert samples[("servetriage_web_api_errors_total", (("error", "not_in_channel"), ("method", "chat.postMessage")))] == 1
    assert samples[("servetriage_votes_total", (("kind", "up"),))] == 1
    assert samples[("servetriage_queue_jobs", (("state", "done"),))] == 2
    bot.close()
    store.close()


def test_json_log_lines_are_one_object_each():
    record = logging.LogRecord("servetriage.bot", logging.WARNING, __file__, 1, "queue depth %d", (7,), None)
    line = JsonLines().format(record)
    assert "\n" not in line
    assert json.loads(line) | {"time": "t"} == {"time": "t", "level": "WARNING", "logger": "servetriage.bot",
                                                "message": "queue depth 7"}
