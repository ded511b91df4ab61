"""The explicit triggers: `/diagnose`, its modal, the message shortcut, and mentions in a thread."""

from __future__ import annotations

import json

from slack_harness import OOM_CATEGORY, OOM_LOG, replies

from servetriage.bot import MODAL_CALLBACK
from servetriage.bot.standin import (command_body, interactive_body, message_event, message_shortcut, slack_escape,
                                     view_submission)


def test_diagnose_command_is_acknowledged_then_answered_via_response_url(bot, slack):
    url = slack.response_url("cmd1")
    ack = bot.post(command_body(OOM_LOG, response_url=url))
    assert ack.status == 200 and "Diagnosing" in ack.body
    [answer] = slack.wait_for("response_url")
    assert answer.path.endswith("/cmd1")
    assert answer.args["response_type"] == "in_channel" and OOM_CATEGORY in answer.text
    assert any(b["type"] == "actions" for b in answer.blocks)


def test_diagnose_command_falls_back_to_chat_post_message(bot, slack):
    ack = bot.post(command_body(OOM_LOG, response_url="http://127.0.0.1:9/unreachable", channel="C0CMD"))
    assert ack.status == 200
    [reply] = slack.wait_for("chat.postMessage")
    assert reply.args["channel"] == "C0CMD" and OOM_CATEGORY in reply.text


def test_diagnose_alone_opens_the_modal_and_its_submission_is_answered(bot, slack):
    ack = bot.post(command_body("", trigger_id="trig.modal", channel="C0MODAL", response_url=slack.response_url()))
    assert ack.status == 200
    [opened] = slack.wait_for("views.open")
    assert opened.args["trigger_id"] == "trig.modal"
    view = opened.args["view"] if isinstance(opened.args["view"], dict) else json.loads(opened.args["view"])
    assert view["callback_id"] == MODAL_CALLBACK
    assert any(b["element"].get("multiline") for b in view["blocks"] if b["type"] == "input")

    empty = bot.post(interactive_body(view_submission(view, {})))
    assert empty.status == 200 and json.loads(empty.body)["response_action"] == "errors"

    values = {"log_block": {"log_input": {"type": "plain_text_input", "value": OOM_LOG}}}
    assert bot.post(interactive_body(view_submission(view, values))).status == 200
    [reply] = slack.wait_for("chat.postMessage")
    assert reply.args["channel"] == "C0MODAL" and OOM_CATEGORY in reply.text


def test_modal_open_failure_is_reported_to_the_user(bot, slack):
    slack.fail_next("views.open", error="expired_trigger_id")
    assert bot.post(command_body("", response_url=slack.response_url("m2"))).status == 200
    [said] = slack.wait_for("response_url")
    assert "expired_trigger_id" in said.text


def test_message_shortcut_diagnoses_the_message_in_its_thread(bot, slack):
    message = {"type": "message", "user": "U0002", "ts": "1712000200.000100", "text": slack_escape(OOM_LOG)}
    assert bot.post(interactive_body(message_shortcut(message, response_url=slack.response_url()))).status == 200
    [reply] = slack.wait_for("chat.postMessage")
    assert reply.args["thread_ts"] == "1712000200.000100" and OOM_CATEGORY in reply.text


def test_shortcut_outside_the_bots_channels_answers_through_response_url(bot, slack):
    slack.fail_next("chat.postMessage", error="not_in_channel")
    message = {"type": "message", "user": "U0002", "ts": "1712000200.000200", "text": slack_escape(OOM_LOG)}
    bot.post(interactive_body(message_shortcut(message, response_url=slack.response_url("sc2"))))
    [said] = slack.wait_for("response_url")
    assert said.args["response_type"] == "ephemeral" and OOM_CATEGORY in said.text and "/invite" in said.text


def test_shortcut_on_a_message_without_a_log_says_so(bot, slack):
    message = {"type": "message", "user": "U0002", "ts": "1712000200.000300", "text": "lunch?"}
    bot.post(interactive_body(message_shortcut(message)))
    [reply] = slack.wait_for("chat.postMessage")
    assert reply.args["thread_ts"] == "1712000200.000300"
    assert "Not recognised" in reply.text or "found no log" in reply.text


def test_mention_in_a_thread_diagnoses_the_parent_and_its_files(bot, slack):
    f = slack.add_file("parent.log", OOM_LOG.encode(), channel="C0001", ts="1712000300.000100")
    slack.add_thread("C0001", [
        {"type": "message", "user": "U0001", "ts": "1712000300.000100", "text": "prod is down, log attached",
         "files": [f]},
        {"type": "message", "user": "U0002", "ts": "1712000300.000200", "thread_ts": "1712000300.000100",
         "text": "<@UBOT> what is this?"},
    ])
    mention = {"type": "app_mention", "user": "U0002", "channel": "C0001", "text": "<@UBOT> what is this?",
               "ts": "1712000300.000200", "thread_ts": "1712000300.000100"}
    bot.event(mention)
    [reply] = slack.wait_for("chat.postMessage")
    [fetched] = slack.calls_to("conversations.replies")
    assert fetched.args["ts"] == "1712000300.000100"
    assert reply.args["thread_ts"] == "1712000300.000100" and OOM_CATEGORY in reply.text


def test_mention_in_a_thread_whose_parent_holds_pasted_text(bot, slack):
    slack.add_thread("C0001", [
        {"type": "message", "user": "U0001", "ts": "1712000300.000300", "text": slack_escape("```\n" + OOM_LOG + "```")},
    ])
    bot.event({"type": "app_mention", "user": "U0002", "channel": "C0001", "text": "<@UBOT>",
               "ts": "1712000300.000400", "thread_ts": "1712000300.000300"})
    [reply] = slack.wait_for("chat.postMessage")
    assert OOM_CATEGORY in reply.text


def test_mention_with_the_log_in_the_same_message_answers_once(bot, slack):
    event = message_event("```\n" + OOM_LOG + "```", ts="1712000300.000500", mention="UBOT")
    bot.event(event)
    bot.event({**event, "type": "app_mention"})
    slack.wait_for("chat.postMessage")
    bot.drain()
    assert len(replies(slack)) == 1


def test_mention_without_any_log_explains_how_to_ask(bot, slack):
    bot.event({"type": "app_mention", "user": "U0002", "channel": "C0001", "text": "<@UBOT> hi",
               "ts": "1712000300.000600"})
    [reply] = slack.wait_for("chat.postMessage")
    assert "found no log" in reply.text and "/diagnose" in reply.text


def test_feedback_buttons_are_acknowledged_without_a_feedback_store(bot, slack):
    payload = {"type": "block_actions", "user": {"id": "U0001"}, "team": {"id": "T0001"}, "api_app_id": "A0001",
               "trigger_id": "trig.x", "container": {"type": "message", "channel_id": "C0001"},
               "channel": {"id": "C0001"}, "message": {"ts": "1"}, "response_url": slack.response_url(),
               "actions": [{"type": "button", "action_id": "feedback_up", "block_id": "servetriage_feedback",
                            "value": "abc", "action_ts": "1"}]}
    assert bot.post(interactive_body(payload)).status == 200


def test_extensions_register_listeners_that_take_precedence(start_bot, settings, slack):
    clicks: list[str] = []

    def feedback_extension(app):
        @app.action("feedback_down")
        def on_down(ack, action):
            ack()
            clicks.append(action["value"])

    bot = start_bot(settings, extensions=[feedback_extension])
    payload = {"type": "block_actions", "user": {"id": "U0001"}, "team": {"id": "T0001"}, "api_app_id": "A0001",
               "trigger_id": "trig.y", "channel": {"id": "C0001"}, "response_url": slack.response_url(),
               "actions": [{"type": "button", "action_id": "feedback_down", "block_id": "servetriage_feedback",
                            "value": "d-42", "action_ts": "1"}]}
    assert bot.post(interactive_body(payload)).status == 200
    bot.drain()
    assert clicks == ["d-42"]


def test_past_the_queue_depth_an_explicit_request_is_told_it_waits_and_is_still_answered(start_bot, settings, slack,
                                                                                         engine):
    import dataclasses
    import time

    class Slow:
        def diagnose(self, log):
            time.sleep(0.3)  # so the later requests find the first still running
            return engine.diagnose(log)

        def warm(self):
            return self

    bot = start_bot(dataclasses.replace(settings, queue_depth=1, workers=1), diagnoser=Slow())
    for i in range(3):
        bot.event({"type": "app_mention", "user": "U0002", "channel": "C0RATE", "ts": f"1712000600.00010{i}",
                   "text": "<@UBOT> " + slack_escape("```\n" + OOM_LOG + "```")})
    bot.drain()
    waits = [c for c in slack.calls_to("chat.postEphemeral") if "queued" in c.text]
    assert waits and all(c.args["user"] == "U0002" and c.args["channel"] == "C0RATE" for c in waits)
    assert len(replies(slack)) == 3  # every one answered
