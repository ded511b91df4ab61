"""A local Slack for tests, benchmarks and trying the bot offline: a recording Web API stand-in,
and builders for the signed requests Slack sends (events, commands, interactivity)."""

from ._payloads import (command_body, event_envelope, interactive_body, message_event, message_shortcut,
                        signed_headers, slack_escape, view_submission)
from ._server import DEFAULT_TOKEN, Call, SlackStandIn

__all__ = ["Call", "DEFAULT_TOKEN", "SlackStandIn", "command_body", "event_envelope", "interactive_body",
           "message_event", "message_shortcut", "signed_headers", "slack_escape", "view_submission"]
