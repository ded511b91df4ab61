"""Socket Mode: Bolt's own handler over a WebSocket Slack opens for us (no public URL needed).

The handler uses the app's WebClient, so `apps.connections.open` goes to `SLACK_API_URL` too.
The same probes as in HTTP mode are served on host:port for the orchestrator, when the port is free.

slack-sdk's built-in client reconnects by itself, checking its connection every `ping_interval`
seconds: at once on a `disconnect` message; at the next check after a reset or a close frame; after
no pong for 4 intervals; but after a bare FIN (no close frame) only once 5 checks in a row failed,
its reader spinning on the EOF meanwhile. `tests/bot/test_bot_socket_e2e.py` drives all of these.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading

from slack_bolt.adapter.socket_mode import SocketModeHandler
from slack_sdk.errors import SlackApiError
from starlette.applications import Starlette

from servetriage._errors import ConfigError

from ..app import BotApp
from ._http import HttpServer, built_manual, health_routes, manual_routes, metrics_routes

log = logging.getLogger(__name__)


class SocketModeAdapter:
    """`start()` blocks serving Slack's envelopes until `stop()` (or Ctrl-C / SIGTERM in `serve`)."""

    def __init__(self, bot: BotApp, app_token: str | None = None, ping_interval: float = 10.0) -> None:
        token = app_token or bot.settings.slack_app_token
        if not token:
            raise ConfigError("Socket Mode needs SLACK_APP_TOKEN (an xapp- app-level token with connections:write)")
        self.bot = bot
        self.handler = SocketModeHandler(bot.app, app_token=token, concurrency=max(4, bot.settings.workers),
                                         ping_interval=ping_interval)
        self._stop = threading.Event()

    def probes(self) -> HttpServer | None:
        """Start /healthz, /readyz, /metrics and the manual (/manual/) on host:port; a busy port is logged, not fatal."""
        routes = [*health_routes(self.bot.readiness), *metrics_routes(self.bot.metrics),
                  *manual_routes(built_manual(tuple(self.bot.settings.extra_corpus_dirs)))]
        try:
            return HttpServer(Starlette(routes=routes),
                              self.bot.settings.host, self.bot.settings.port).start()
        except ConfigError as exc:
            log.warning("health probes not served: %s", exc)
            return None

    def start(self) -> None:
        """Connect and block until interrupted or `stop()`; a refused token is a configuration error, in one line."""
        probes = self.probes()
        try:
            try:
                self.handler.connect()  # type: ignore[no-untyped-call]  # slack_bolt leaves it unannotated
            except SlackApiError as exc:
                raise ConfigError(f"Socket Mode could not connect: Slack said {exc.response.get('error')!r}; "
                                  "check SLACK_APP_TOKEN (an xapp- token with connections:write)") from None
            if self.handler.client.is_connected():
                log.info("connected to Slack in Socket Mode")
            else:  # slack-sdk logs the WebSocket's failure and does not raise; its checks retry it
                log.warning("Socket Mode: the WebSocket did not open; retrying every %.0f s", self.handler.client.ping_interval)
            self._stop.wait()
        finally:
            if probes is not None:
                probes.stop()
            self._wake_client_threads()
            self.handler.close()  # type: ignore[no-untyped-call]

    def stop(self) -> None:
        """End `start()` from another thread: it closes the connection and the probes, then returns."""
        self._stop.set()

    def _wake_client_threads(self) -> None:
        """Wake the client's threads that its close() joins, so it returns at once rather than after
        their timeouts: the reader (3 s on the socket) and the message processor (1 s on its queue)."""
        client = self.handler.client
        client.closed = True  # the processor's loop condition; close() sets it too, after the wait starts
        client.message_queue.put(None)  # a None message is skipped
        session = client.current_session
        sock = session.sock if session is not None else None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
