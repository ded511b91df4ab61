"""A local Slack for tests, benchmarks and trying the bot offline: a recording Web API stand-in, a
Socket Mode WebSocket stand-in, and builders for the signed requests Slack sends (events, commands,
interactivity)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._payloads import (command_body, event_envelope, interactive_body, message_event, message_shortcut,
                        posted_button, signed_headers, slack_escape, view_submission)
from ._server import DEFAULT_APP_TOKEN, DEFAULT_TOKEN, Call, SlackStandIn

if TYPE_CHECKING:
    from ._socket import SocketModeStandIn

__all__ = [
    "Call", "command_body", "DEFAULT_APP_TOKEN", "DEFAULT_TOKEN", "event_envelope", "interactive_body",
    "message_event", "message_shortcut", "posted_button", "signed_headers", "slack_escape", "SlackStandIn",
    "SocketModeStandIn", "view_submission",
]


def __getattr__(name: str) -> Any:
    if name == "SocketModeStandIn":
        from ._socket import SocketModeStandIn  # noqa: PLC0415 (websockets is a dev dependency: loaded on use)
        return SocketModeStandIn
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
