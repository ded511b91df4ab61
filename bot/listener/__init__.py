"""Bolt listeners, one module per trigger; each parses the payload, acknowledges, and submits a job."""

from __future__ import annotations

from slack_bolt import App

from servetriage._settings import Settings

from ..triage import Triage
from ._commands import COMMAND, CommandListener
from ._fallbacks import register_fallbacks
from ._feedback import FeedbackListener, reaction_direction
from ._mentions import MentionListener
from ._messages import MessageListener
from ._shortcuts import SHORTCUT, ShortcutListener
from ._views import ViewListener


def register_listeners(app: App, triage: Triage, settings: Settings) -> None:
    for listener in (MessageListener(triage, settings.channels), MentionListener(triage),
                     CommandListener(triage), ViewListener(triage), ShortcutListener(triage)):
        listener.register(app)


__all__ = ["COMMAND", "CommandListener", "FeedbackListener", "MentionListener", "MessageListener", "SHORTCUT", "ShortcutListener",
           "ViewListener", "reaction_direction", "register_fallbacks", "register_listeners"]
