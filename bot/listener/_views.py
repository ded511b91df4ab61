"""The modal's submission: validate in the ack (so errors show in the form), then diagnose."""

from __future__ import annotations

import json
import uuid
from typing import Any

from slack_bolt import Ack, App

from ..render import FILE_ACTION, FILE_BLOCK, LOG_ACTION, LOG_BLOCK, MODAL_CALLBACK
from ..triage import Job, SlackFile, Target, Triage


class ViewListener:
    def __init__(self, triage: Triage) -> None:
        self._triage = triage

    def register(self, app: App) -> None:
        app.view(MODAL_CALLBACK)(self.on_submit)

    def on_submit(self, ack: Ack, body: dict[str, Any], view: dict[str, Any]) -> None:
        values = (view.get("state") or {}).get("values") or {}
        text = ((values.get(LOG_BLOCK) or {}).get(LOG_ACTION) or {}).get("value") or ""
        attached = ((values.get(FILE_BLOCK) or {}).get(FILE_ACTION) or {}).get("files") or ()
        files = tuple(SlackFile.from_payload(f) for f in attached)
        if not text.strip() and not files:
            ack(response_action="errors", errors={LOG_BLOCK: "Paste a log here, or attach a file below."})
            return
        ack()
        try:
            meta = json.loads(view.get("private_metadata") or "{}")
        except ValueError:
            meta = {}
        user = (body.get("user") or {}).get("id")
        target = Target(channel=str(meta.get("channel") or user or ""), thread_ts=None, user=user,
                        team=(body.get("team") or {}).get("id"), response_url=meta.get("response_url"),
                        dm_fallback=True)
        # A modal's input is what the user typed: not Slack-escaped, so it is not unformatted.
        self._triage.submit(Job(source="modal", target=target, text=text or None, files=files, explicit=True),
                            f"view:{view.get('id') or uuid.uuid4().hex}:{view.get('hash') or ''}")
