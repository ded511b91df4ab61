"""Messages and file shares noticed in a channel: the implicit triggers, so they stay quiet on doubt.

Edits, deletions, joins and other subtypes are ignored, and so is every bot (this one included);
a message that mentions the bot is left to the mention listener. A file share arrives twice
(`message` with subtype `file_share`, and `file_shared`); both lead to the same ledger claim, so
whichever is first answers.
"""

from __future__ import annotations

from typing import Any

from slack_bolt import App, BoltContext

from ..detect import looks_like_log, mentions, unformat
from ..triage import Job, SlackFile, Target, Triage, delivery_key

HANDLED_SUBTYPES = frozenset({None, "file_share", "thread_broadcast"})


class MessageListener:
    """`message` events: a pasted log or shared log files get a reply in their thread."""

    def __init__(self, triage: Triage, channels: tuple[str, ...] = ()) -> None:
        self._triage = triage
        self._channels = frozenset(channels)

    def register(self, app: App) -> None:
        app.event("message")(self.on_message)
        app.event("file_shared")(self.on_file_shared)

    def watching(self, channel: str | None) -> bool:
        return bool(channel) and (not self._channels or channel in self._channels)

    def on_message(self, event: dict[str, Any], context: BoltContext, body: dict[str, Any]) -> None:
        if event.get("subtype") not in HANDLED_SUBTYPES or event.get("bot_id") or event.get("bot_profile"):
            return
        user = event.get("user")
        channel = event.get("channel")
        if not user or user == context.bot_user_id or not self.watching(channel):
            return
        raw = event.get("text") or ""
        if mentions(raw, context.bot_user_id):
            return  # the app_mention event answers this one
        text = unformat(raw)
        files = tuple(SlackFile.from_payload(f) for f in event.get("files") or ())
        if not files and not looks_like_log(text):
            return
        ts = str(event["ts"])
        target = Target(channel=str(channel), thread_ts=event.get("thread_ts") or ts, user=user,
                        team=event.get("team") or context.team_id)
        self._triage.submit(Job(source="file" if files else "message", target=target,
                                text=text if looks_like_log(text) else None, files=files, message_ts=ts),
                            delivery_key(body, f"message:{channel}:{ts}"))

    def on_file_shared(self, event: dict[str, Any], context: BoltContext, body: dict[str, Any]) -> None:
        """`file_shared` names only the file; the worker looks up where it was shared (files.info)."""
        channel, file_id, user = event.get("channel_id"), event.get("file_id"), event.get("user_id")
        if not file_id or not self.watching(channel) or user == context.bot_user_id:
            return
        target = Target(channel=str(channel), thread_ts=None, user=user, team=context.team_id)
        self._triage.submit(Job(source="file", target=target, shared_file=str(file_id)),
                            delivery_key(body, f"file_shared:{channel}:{file_id}"))
