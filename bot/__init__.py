"""The Slack bot: pasted logs, log files, mentions, `/diagnose` and the "Diagnose this log" shortcut.

    >>> from servetriage.bot import build_app, serve
    >>> serve(Settings.from_env())            # Socket Mode with SLACK_APP_TOKEN, else HTTP

The bot knows nothing of how a diagnosis is made: it is handed a `Diagnoser` (the real one is
`servetriage.classifier.Engine`), a `ReplyRecorder` (the feedback store; in memory by default) and
a `FeedbackService` that stores 👍/👎 and corrections (the listeners and Block Kit for them are the
bot's). Subpackages follow slack-bolt's layout: `app` (building the App), `adapter` (serving it),
`listener`, `middleware`, `render` (Block Kit),
`triage` (the work after the ack), `store`, `detect`, and `standin` (a local Slack Web API).
"""

from ._metrics import Metrics
from ._protocols import Diagnoser, FeedbackService, ReplyRecorder
from ._serve import JsonLines, serve
from .adapter import EVENTS_PATH, HttpAdapter, HttpServer, SocketModeAdapter
from .app import BotApp, Extension, build_app
from .render import FEEDBACK_DOWN, FEEDBACK_UP, MODAL_CALLBACK, Reply, render_diagnosis
from .listener import COMMAND, SHORTCUT
from .store import EventLedger, InMemoryRecorder

__all__ = [
    "BotApp", "build_app", "COMMAND", "Diagnoser", "EventLedger", "EVENTS_PATH", "Extension", "FEEDBACK_DOWN",
    "FEEDBACK_UP", "FeedbackService", "HttpAdapter", "HttpServer", "InMemoryRecorder", "JsonLines", "Metrics",
    "MODAL_CALLBACK", "render_diagnosis", "Reply", "ReplyRecorder", "serve", "SHORTCUT", "SocketModeAdapter",
]
