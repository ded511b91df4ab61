"""`servetriage serve`: pick the mode from the tokens, warm in the background, serve until stopped."""

from __future__ import annotations

import json
import logging
import signal
import sys
from typing import Any
from collections.abc import Iterable

from servetriage._errors import ConfigError
from servetriage._settings import Settings

from ._metrics import Metrics
from ._protocols import Diagnoser, FeedbackService, ReplyRecorder
from .app import Extension, build_app

log = logging.getLogger(__name__)

MISSING = ("Slack is not configured: set SLACK_BOT_TOKEN (xoxb-…) and either SLACK_APP_TOKEN (xapp-…, Socket Mode) "
           "or SLACK_SIGNING_SECRET (HTTP mode). See docs/slack.md.")


def serve(settings: Settings, diagnoser: Diagnoser | None = None, recorder: ReplyRecorder | None = None,
          feedback: FeedbackService | None = None, extensions: Iterable[Extension] = (),
          metrics: Metrics | None = None) -> int:
    """Run the bot until SIGINT/SIGTERM; Socket Mode when SLACK_APP_TOKEN is set, else HTTP on host:port."""
    if not settings.slack_bot_token or not (settings.slack_app_token or settings.slack_signing_secret):
        raise ConfigError(MISSING)
    _configure_logging(settings)
    if diagnoser is None:
        from servetriage.classifier import Engine  # noqa: PLC0415 (the bot imports the engine only to serve)
        diagnoser = Engine(settings)
    bot = build_app(settings, diagnoser, recorder=recorder, feedback=feedback, extensions=extensions, metrics=metrics)
    bot.warm_in_background()
    previous = _sigterm_as_interrupt()
    try:
        if settings.slack_app_token:
            from .adapter import SocketModeAdapter  # noqa: PLC0415 (one adapter per mode is loaded)
            adapter = SocketModeAdapter(bot)
            log.info("servetriage: Socket Mode, Web API at %s", settings.slack_api_url)
            adapter.start()
        else:
            from .adapter import HttpAdapter, HttpServer  # noqa: PLC0415 (one adapter per mode is loaded)
            server = HttpServer(HttpAdapter(bot).asgi(), settings.host, settings.port)
            log.info("servetriage: HTTP mode on %s/slack/events, Web API at %s", server.url, settings.slack_api_url)
            server.run()
    except KeyboardInterrupt:
        pass
    finally:
        bot.close()
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    return 0


def _configure_logging(settings: Settings) -> None:
    if logging.getLogger().handlers:
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonLines() if settings.log_format == "json" else
                         logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.INFO, handlers=[handler])


class JsonLines(logging.Formatter):
    """One JSON object per line (SERVETRIAGE_LOG_FORMAT=json), for a log pipeline to parse."""

    def format(self, record: logging.LogRecord) -> str:
        out = {"time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"), "level": record.levelname,
               "logger": record.name, "message": record.getMessage()}
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False)


def _sigterm_as_interrupt() -> Any:
    """SIGTERM (docker stop) ends the bot like Ctrl-C: queued diagnoses finish, the exit status is 0.

    Socket Mode blocks in Bolt's handler, which has no signal handling; uvicorn shuts down
    gracefully and then re-raises the signal it caught, which lands here instead of killing us."""
    def _raise(*_: object) -> None:
        raise KeyboardInterrupt

    try:
        return signal.signal(signal.SIGTERM, _raise)
    except ValueError:  # not the main thread: leave signals alone
        return None
