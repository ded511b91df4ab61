"""Socket Mode end to end: the real adapter (Bolt's handler, slack-sdk's built-in client) connected over
loopback to a WebSocket stand-in for Slack, with the Web API stand-in answering `apps.connections.open`.

The same scenarios as over HTTP: a pasted log, its redelivery, a 👍 click; and the reconnections Slack
asks for (`disconnect`) or forces (a connection reset, or closed without a close frame), and a WebSocket
that does not open at first, after each of which a paste is still answered once. The client checks its
connection every PING_INTERVAL seconds here (10 in production), which sets how fast a dead one is replaced."""

from __future__ import annotations

import dataclasses
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from slack_harness import OOM_CATEGORY, OOM_LOG, replies

from servetriage.bot import SocketModeAdapter, build_app
from servetriage.bot.standin import SlackStandIn, SocketModeStandIn, event_envelope, message_event
from servetriage.corpus import load_corpus
from servetriage.feedback import FeedbackStore, StoreFeedback

PING_INTERVAL = 0.5  # how often the client checks its connection, so a reset one is replaced within a second


@dataclasses.dataclass
class Connected:
    adapter: SocketModeAdapter
    store: FeedbackStore
    socket: SocketModeStandIn
    slack: SlackStandIn
    thread: threading.Thread
    errors: list[BaseException]  # what start() raised, if anything
    closed: bool = False

    def paste(self, ts: str) -> tuple[str, dict[str, Any]]:
        """A pasted log as an `events_api` envelope; returns the envelope id and the event body."""
        body = event_envelope(message_event("```\n" + OOM_LOG + "```", ts=ts))
        return self.socket.send_envelope("events_api", body), body

    def close(self) -> None:
        """Stop the adapter (its start() returns, closing the client), then drain the bot. Idempotent."""
        if self.closed:
            return
        self.closed = True
        self.adapter.stop()
        self.thread.join(15)
        assert not self.thread.is_alive(), "SocketModeAdapter.start() did not return after stop()"
        self.adapter.bot.close()
        if self.errors:
            raise self.errors[0]


@pytest.fixture
def socket_mode() -> Iterator[SocketModeStandIn]:
    with SocketModeStandIn() as stand_in:
        yield stand_in


def _run(settings, engine, store: FeedbackStore, socket: SocketModeStandIn, slack: SlackStandIn) -> Connected:
    """The bot with its feedback store, and `SocketModeAdapter.start()` on a thread, as `servetriage serve`
    runs them (warming in the background)."""
    bot = build_app(settings, engine, recorder=store.replies, feedback=StoreFeedback(store, load_corpus()))
    bot.warm_in_background()
    adapter = SocketModeAdapter(bot, ping_interval=PING_INTERVAL)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            adapter.start()
        except BaseException as exc:  # noqa: BLE001 (re-raised in the test's thread by close())
            errors.append(exc)

    thread = threading.Thread(target=run, name="socket-mode-adapter", daemon=True)
    thread.start()
    return Connected(adapter, store, socket, slack, thread, errors)


@pytest.fixture
def socket_settings(settings, slack: SlackStandIn):
    return dataclasses.replace(settings, slack_app_token=slack.app_token, slack_signing_secret=None,
                               port=0)  # the probes on a free port


@pytest.fixture
def connected(socket_settings, engine, slack: SlackStandIn, socket_mode: SocketModeStandIn) -> Iterator[Connected]:
    slack.socket_url = socket_mode.url
    store = FeedbackStore(socket_settings.db_path)
    running = _run(socket_settings, engine, store, socket_mode, slack)
    try:
        socket_mode.wait_for_connections(1)
        assert running.adapter.bot.readiness.wait(10)
        yield running
    finally:
        running.close()
        store.close()


def _wait_until(condition: Callable[[], Any], timeout: float = 10.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {timeout:.0f} s for {what}")
        time.sleep(0.02)
    return value


def test_the_client_opens_one_connection_with_the_app_token(connected: Connected, slack: SlackStandIn):
    [opened] = slack.calls_to("apps.connections.open")
    assert opened.headers["authorization"] == f"Bearer {slack.app_token}"
    assert connected.socket.connections == connected.socket.open_connections == 1
    assert connected.socket.sent[0]["type"] == "hello"


def test_a_pasted_log_is_acknowledged_and_answered_once_in_its_thread_also_when_redelivered(
        connected: Connected, slack: SlackStandIn):
    envelope, body = connected.paste("1712000700.000100")
    assert connected.socket.wait_for_ack(envelope) == {"envelope_id": envelope}
    [reply] = slack.wait_for("chat.postMessage")
    assert reply.args["thread_ts"] == "1712000700.000100" and OOM_CATEGORY in reply.text

    # Slack redelivers when it thinks the ack was late: same event_id, a new envelope, retry_attempt 1.
    retry = connected.socket.send_envelope("events_api", body, retry_attempt=1)
    assert retry != envelope
    assert connected.socket.wait_for_ack(retry) == {"envelope_id": retry}
    connected.close()  # every acknowledged envelope's work done
    assert len(replies(slack)) == 1


def test_a_thumbs_up_click_is_acknowledged_and_stored(connected: Connected, slack: SlackStandIn):
    connected.paste("1712000700.000200")
    [reply] = slack.wait_for("chat.postMessage")
    [feedback] = [b for b in reply.blocks if b.get("block_id") == "servetriage_feedback"]
    up = feedback["elements"][0]
    assert up["action_id"] == "feedback_up"
    diagnosis_id = up["value"]
    reply_ts = _wait_until(lambda: connected.store.replies.get(diagnosis_id).message_ts, what="the reply's ts")

    click = {"type": "block_actions", "user": {"id": "U0002"}, "team": {"id": "T0001"}, "api_app_id": "A0001",
             "token": "legacy", "trigger_id": f"trig.{uuid.uuid4().hex[:12]}",
             "container": {"type": "message", "message_ts": reply_ts, "channel_id": "C0001", "is_ephemeral": False},
             "channel": {"id": "C0001", "name": "incidents"}, "response_url": slack.response_url(),
             "message": {"type": "message", "ts": reply_ts, "text": reply.args.get("text"), "blocks": reply.blocks},
             "actions": [{"type": "button", "action_id": up["action_id"], "block_id": "servetriage_feedback",
                          "value": diagnosis_id, "action_ts": f"{time.time():.6f}"}]}
    envelope = connected.socket.send_envelope("interactive", click)
    assert connected.socket.wait_for_ack(envelope)["envelope_id"] == envelope
    [vote] = connected.store.votes.all(diagnosis_id)  # stored before the ack
    assert vote["user"] == "U0002"
    [update] = slack.wait_for("chat.update")  # the tally, after the ack
    assert update.args["ts"] == reply_ts


def test_the_client_reconnects_when_asked_to_and_when_the_connection_is_reset(connected: Connected,
                                                                              slack: SlackStandIn):
    socket = connected.socket
    socket.disconnect("refresh_requested")
    socket.wait_for_connections(2, timeout=5)  # at once: a new URL, a new connection
    slack.wait_for("apps.connections.open", 2)
    envelope, _ = connected.paste("1712000700.000300")
    socket.wait_for_ack(envelope)
    slack.wait_for("chat.postMessage", where=lambda c: c.args.get("thread_ts") == "1712000700.000300")

    socket.drop()  # a TCP reset, no close frame, no disconnect message: found dead at the client's next check
    socket.wait_for_connections(3, timeout=10 * PING_INTERVAL + 5)
    slack.wait_for("apps.connections.open", 3)
    envelope, _ = connected.paste("1712000700.000400")
    socket.wait_for_ack(envelope)
    slack.wait_for("chat.postMessage", where=lambda c: c.args.get("thread_ts") == "1712000700.000400")
    # The connection replaced on `disconnect` is closed by the client (its reader lets go within 3 s).
    _wait_until(lambda: socket.open_connections == 1, what="the replaced connection to close")

    connected.close()
    threads = [c.args.get("thread_ts") for c in replies(slack)]
    assert threads == ["1712000700.000300", "1712000700.000400"]
    assert socket.connections == 3 and len(slack.calls_to("apps.connections.open")) == 3


def test_a_connection_closed_without_a_close_frame_is_replaced_within_a_few_checks(connected: Connected,
                                                                                   slack: SlackStandIn):
    # slack-sdk's reader takes the EOF for "no data yet" and spins; its checks' pings fail with EPIPE,
    # and after 5 failed checks in a row it gives the connection up: some 5 ping intervals.
    connected.socket.drop(reset=False)
    connected.socket.wait_for_connections(2, timeout=12 * PING_INTERVAL + 5)
    envelope, _ = connected.paste("1712000700.000500")
    connected.socket.wait_for_ack(envelope)
    [reply] = slack.wait_for("chat.postMessage")
    assert reply.args["thread_ts"] == "1712000700.000500"


def test_a_websocket_that_does_not_open_is_retried(socket_settings, engine, slack: SlackStandIn,
                                                  socket_mode: SocketModeStandIn, caplog):
    # `socket_url` unset: apps.connections.open answers a URL where nothing speaks WebSocket (a 404).
    store = FeedbackStore(socket_settings.db_path)
    running = _run(socket_settings, engine, store, socket_mode, slack)
    try:
        slack.wait_for("apps.connections.open", 2)  # connect(), then the client's first check
        slack.socket_url = socket_mode.url
        socket_mode.wait_for_connections(1, timeout=5)
        envelope, _ = running.paste("1712000700.000600")
        running.socket.wait_for_ack(envelope)
        slack.wait_for("chat.postMessage")
    finally:
        running.close()
        store.close()
    assert "the WebSocket did not open; retrying" in caplog.text
