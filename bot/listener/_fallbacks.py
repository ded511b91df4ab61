"""Quiet acknowledgements for what the feedback extension handles when it is not installed.

Registered after the extensions, so theirs match first (Bolt runs the first matching listener);
without them a 👍 click would show an error mark and every reaction would log "unhandled".
"""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt import Ack, App

from ..render import FEEDBACK_DOWN, FEEDBACK_UP

log = logging.getLogger(__name__)


def register_fallbacks(app: App) -> None:
    def ack_feedback(ack: Ack, action: dict[str, Any]) -> None:
        ack()
        log.info("feedback %s on %s (no feedback store installed)", action.get("action_id"), action.get("value"))

    def ignore_event(event: dict[str, Any]) -> None:
        log.debug("%s not handled (no feedback store installed)", event.get("type"))

    app.action(FEEDBACK_UP)(ack_feedback)
    app.action(FEEDBACK_DOWN)(ack_feedback)
    for name in ("reaction_added", "reaction_removed"):
        app.event(name)(ignore_event)
