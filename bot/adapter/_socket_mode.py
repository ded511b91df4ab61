"""Socket Mode: Bolt's own handler over a WebSocket Slack opens for us (no public URL needed).

The handler uses the app's WebClient, so `apps.connections.open` goes to `SLACK_API_URL` too.
The same probes as in HTTP mode are served on host:port for the orchestrator, when the port is free.
"""

from __future__ import annotations

import logging
import threading

from slack_bolt.adapter.socket_mode import SocketModeHandler
from slack_sdk.errors import SlackApiError
from starlette.applications import Starlette

from servetriage._errors import ConfigError

from ..app import BotApp
from ._http import HttpServer, built_manual, health_routes, manual_routes

log = logging.getLogger(__name__)


class SocketModeAdapter:
    def __init__(self, bot: BotApp, app_token: str | None = None) -> None:
        token = app_token or bot.settings.slack_app_token
        if not token:
            raise ConfigError("Socket Mode needs SLACK_APP_TOKEN (an xapp- app-level token with connections:write)")
        self.bot = bot
        self.handler = SocketModeHandler(bot.app, app_token=token, concurrency=max(4, bot.settings.workers))

    def probes(self) -> HttpServer | None:
        """Start /healthz, /readyz and the manual (/manual/) on host:port; a busy port is logged, not fatal."""
        routes = [*health_routes(self.bot.readiness),
                  *manual_routes(built_manual(tuple(self.bot.settings.extra_corpus_dirs)))]
        try:
            return HttpServer(Starlette(routes=routes),
                              self.bot.settings.host, self.bot.settings.port).start()
        except ConfigError as exc:
            log.warning("health probes not served: %s", exc)
            return None

    def start(self) -> None:
        """Connect and block until interrupted; a refused token is a configuration error, said in one line."""
        probes = self.probes()
        try:
            try:
                self.handler.connect()  # type: ignore[no-untyped-call]  # slack_bolt leaves it unannotated
            except SlackApiError as exc:
                raise ConfigError(f"Socket Mode could not connect: Slack said {exc.response.get('error')!r}; "
                                  "check SLACK_APP_TOKEN (an xapp- token with connections:write)") from None
            log.info("connected to Slack in Socket Mode")
            threading.Event().wait()
        finally:
            if probes is not None:
                probes.stop()
            self.handler.close()  # type: ignore[no-untyped-call]
