"""Requests as Slack sends them: Events API envelopes, slash commands, interactivity, signed (v0).

Used by the tests and the benchmark to drive the real app over HTTP exactly as Slack would.
"""

from __future__ import annotations

import json
import time
import urllib.parse
import uuid
from typing import Any

from slack_sdk.signature import SignatureVerifier


def signed_headers(secret: str, body: str, timestamp: int | None = None, content_type: str | None = None) -> dict[str, str]:
    """`X-Slack-Signature` = v0=HMAC-SHA256(secret, "v0:{timestamp}:{body}"), as Slack computes it."""
    ts = str(int(time.time()) if timestamp is None else timestamp)
    sig = SignatureVerifier(secret).generate_signature(timestamp=ts, body=body)
    ctype = content_type or ("application/json" if body.startswith("{") else "application/x-www-form-urlencoded")
    return {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": sig or "", "Content-Type": ctype}


def event_envelope(event: dict[str, Any], *, event_id: str | None = None, team_id: str = "T0001",
                   api_app_id: str = "A0001") -> dict[str, Any]:
    return {"token": "legacy", "team_id": team_id, "api_app_id": api_app_id, "type": "event_callback",
            "event_id": event_id or "Ev" + uuid.uuid4().hex[:10].upper(), "event_time": int(time.time()),
            "authorizations": [{"team_id": team_id, "user_id": "UBOT", "is_bot": True}], "event": event}


def message_event(text: str, *, channel: str = "C0001", user: str = "U0001", ts: str | None = None,
                  thread_ts: str | None = None, mention: str | None = None, **extra: Any) -> dict[str, Any]:
    """`text` is escaped as Slack escapes it (&, <, >); `mention` prefixes `<@user>` markup."""
    body = (f"<@{mention}> " if mention else "") + slack_escape(text)
    event: dict[str, Any] = {"type": "message", "channel": channel, "user": user, "channel_type": "channel",
                             "text": body, "ts": ts or f"{time.time():.6f}", **extra}
    if thread_ts:
        event["thread_ts"] = thread_ts
    return event


def slack_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def command_body(text: str, *, command: str = "/diagnose", channel: str = "C0001", user: str = "U0001",
                 team_id: str = "T0001", response_url: str = "", trigger_id: str | None = None) -> str:
    """A slash command as Slack posts it: form-encoded."""
    return urllib.parse.urlencode({
        "token": "legacy", "team_id": team_id, "channel_id": channel, "channel_name": "incidents", "user_id": user,
        "user_name": "oncall", "command": command, "text": slack_escape(text), "api_app_id": "A0001",
        "response_url": response_url, "trigger_id": trigger_id or f"trig.{uuid.uuid4().hex[:12]}"})


def interactive_body(payload: dict[str, Any]) -> str:
    """Interactivity (shortcuts, view submissions, button clicks): `payload=<json>`, form-encoded."""
    return urllib.parse.urlencode({"payload": json.dumps(payload)})


def message_shortcut(message: dict[str, Any], *, callback_id: str = "diagnose_log", channel: str = "C0001",
                     user: str = "U0001", team_id: str = "T0001", response_url: str = "") -> dict[str, Any]:
    return {"type": "message_action", "callback_id": callback_id, "trigger_id": f"trig.{uuid.uuid4().hex[:12]}",
            "team": {"id": team_id}, "user": {"id": user}, "channel": {"id": channel, "name": "incidents"},
            "message_ts": message.get("ts"), "message": message, "response_url": response_url, "token": "legacy"}


def view_submission(view: dict[str, Any], values: dict[str, Any], *, user: str = "U0001",
                    team_id: str = "T0001") -> dict[str, Any]:
    return {"type": "view_submission", "team": {"id": team_id}, "user": {"id": user}, "api_app_id": "A0001",
            "trigger_id": f"trig.{uuid.uuid4().hex[:12]}",
            "view": {**view, "id": "V0001", "state": {"values": values}}}


def posted_button(blocks: list[dict[str, Any]], label: str) -> dict[str, Any]:
    """The button of a posted message whose text starts with `label`, as a click on it carries it
    (`block_id`, `action_id`, `value`): clicks in tests use what the bot really rendered."""
    for block in blocks:
        for element in block.get("elements") or ():
            if element.get("type") == "button" and element["text"]["text"].startswith(label):
                return {"block_id": block.get("block_id"), "action_id": element["action_id"], "value": element["value"]}
    raise LookupError(f"no {label!r} button in the message")
