"""The "Diagnose this log" message shortcut: any message, on request, answered in its thread."""

from __future__ import annotations

import uuid
from typing import Any

from slack_bolt import Ack, App

from ..detect import unformat
from ..triage import Job, SlackFile, Target, Triage

SHORTCUT = "diagnose_log"


class ShortcutListener:
    def __init__(self, triage: Triage, callback_id: str = SHORTCUT) -> None:
        self._triage = triage
        self.callback_id = callback_id

    def register(self, app: App) -> None:
        app.message_shortcut(self.callback_id)(self.on_shortcut)

    def on_shortcut(self, ack: Ack, shortcut: dict[str, Any]) -> None:
        ack()
        message = shortcut.get("message") or {}
        channel = str((shortcut.get("channel") or {}).get("id") or "")
        ts = message.get("ts") or shortcut.get("message_ts")
        target = Target(channel=channel, thread_ts=message.get("thread_ts") or ts,
                        user=(shortcut.get("user") or {}).get("id"), team=(shortcut.get("team") or {}).get("id"),
                        response_url=shortcut.get("response_url"))
        files = tuple(SlackFile.from_payload(f) for f in message.get("files") or ())
        self._triage.submit(Job(source="shortcut", target=target, text=unformat(message.get("text") or ""),
                                files=files, explicit=True),
                            f"shortcut:{shortcut.get('trigger_id') or uuid.uuid4().hex}")
