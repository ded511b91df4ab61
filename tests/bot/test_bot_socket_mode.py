"""Socket Mode at the handler level: a SocketModeRequest dispatched into Bolt's handler, no network."""

from __future__ import annotations

import dataclasses
import logging

import pytest
from slack_harness import OOM_CATEGORY, OOM_LOG, replies
from slack_sdk.socket_mode.request import SocketModeRequest
from slack_sdk.socket_mode.response import SocketModeResponse

from servetriage import ConfigError
from servetriage.bot import SocketModeAdapter, build_app
from servetriage.bot.standin import event_envelope, message_event


class RecordingSocket:
    """Stands in for slack-sdk's SocketModeClient on the sending side: keeps the envelopes acknowledged."""

    def __init__(self) -> None:
        self.logger = logging.getLogger("socket-test")
        self.sent: list[SocketModeResponse] = []

    def send_socket_mode_response(self, response: SocketModeResponse) -> None:
        self.sent.append(response)


@pytest.fixture
def socket_bot(settings, engine, slack):
    settings = dataclasses.replace(settings, slack_app_token="xapp-1-A0001-stand-in", slack_signing_secret=None)
    bot = build_app(settings, engine)
    adapter = SocketModeAdapter(bot)
    yield adapter
    adapter.handler.client.close()
    bot.close()


def _request(payload: dict, envelope_id: str, retry_attempt: int | None = None, type_: str = "events_api"):
    return SocketModeRequest(type=type_, envelope_id=envelope_id, payload=payload, retry_attempt=retry_attempt,
                             retry_reason="timeout" if retry_attempt else None)


def test_an_event_envelope_is_acknowledged_and_answered(socket_bot, slack):
    socket = RecordingSocket()
    body = event_envelope(message_event("```\n" + OOM_LOG + "```", ts="1712000400.000100"), event_id="Ev0SOCK")
    socket_bot.handler.handle(socket, _request(body, "env-1"))
    assert [r.envelope_id for r in socket.sent] == ["env-1"]
    [reply] = slack.wait_for("chat.postMessage")
    assert reply.args["thread_ts"] == "1712000400.000100" and OOM_CATEGORY in reply.text


def test_a_redelivered_envelope_is_acknowledged_but_not_answered_again(socket_bot, slack):
    socket = RecordingSocket()
    body = event_envelope(message_event("```\n" + OOM_LOG + "```"), event_id="Ev0SOCKDUP")
    socket_bot.handler.handle(socket, _request(body, "env-2"))
    slack.wait_for("chat.postMessage")
    socket_bot.handler.handle(socket, _request(body, "env-3", retry_attempt=1))
    socket_bot.bot.close()
    assert [r.envelope_id for r in socket.sent] == ["env-2", "env-3"]
    assert len(replies(slack)) == 1


def test_a_slash_command_envelope_is_acknowledged_with_its_text(socket_bot, slack):
    socket = RecordingSocket()
    payload = {"command": "/diagnose", "text": OOM_LOG, "channel_id": "C0001", "user_id": "U0001",
               "team_id": "T0001", "response_url": slack.response_url("sock"), "trigger_id": "trig.s"}
    socket_bot.handler.handle(socket, _request(payload, "env-4", type_="slash_commands"))
    [ack] = socket.sent
    assert ack.envelope_id == "env-4" and "Diagnosing" in str(ack.payload)
    [answer] = slack.wait_for("response_url")
    assert OOM_CATEGORY in answer.text


def test_socket_mode_needs_an_app_token(settings, engine):
    bot = build_app(settings, engine)
    try:
        with pytest.raises(ConfigError, match="SLACK_APP_TOKEN"):
            SocketModeAdapter(bot)
    finally:
        bot.close()
