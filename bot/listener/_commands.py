"""`/diagnose <log>` answers in the channel; `/diagnose` alone opens a modal to paste into.

The slash command must be acknowledged within 3 s and `views.open` needs the trigger id within
3 s too, so both happen on the listener thread before anything slow; the diagnosis is queued.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any
from collections.abc import Callable

from slack_bolt import Ack, App, Respond
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError

from ..detect import unformat
from ..render import diagnose_modal, notices
from ..triage import Job, Target, Triage

log = logging.getLogger(__name__)

COMMAND = "/diagnose"


class CommandListener:
    def __init__(self, triage: Triage, command: str = COMMAND) -> None:
        self._triage = triage
        self.command = command

    def register(self, app: App) -> None:
        app.command(self.command)(self.on_command)

    def on_command(self, ack: Ack, command: dict[str, Any], client: WebClient, respond: Respond) -> None:
        text = unformat(command.get("text") or "")
        if text.strip().lower() in {"help", "-h", "--help"}:
            ack(response_type="ephemeral", text=notices.HELP)
            return
        channel = str(command.get("channel_id") or "")
        if not text.strip():
            ack()
            self._open_modal(client, command, channel, respond)
            return
        ack(response_type="ephemeral", text="🔎 Diagnosing…")
        target = Target(channel=channel, thread_ts=None, user=command.get("user_id"), team=command.get("team_id"),
                        response_url=command.get("response_url"), prefer_response_url=True)
        self._triage.submit(Job(source="command", target=target, text=text, explicit=True),
                            f"command:{command.get('trigger_id') or uuid.uuid4().hex}")

    def _open_modal(self, client: WebClient, command: dict[str, Any], channel: str,
                    respond: Callable[..., object]) -> None:
        metadata = {"channel": channel, "response_url": command.get("response_url")}
        try:
            client.views_open(trigger_id=command["trigger_id"], view=diagnose_modal(metadata))
        except (SlackApiError, SlackClientError, OSError, KeyError) as exc:
            error = exc.response.get("error") if isinstance(exc, SlackApiError) else type(exc).__name__
            log.warning("views.open failed: %s", error)
            try:
                respond(response_type="ephemeral", text=f"⚠️ I could not open the form ({error}). "
                                                        f"Use `{self.command} <log>` instead.")
            except Exception as inner:  # noqa: BLE001 — the response_url may be unreachable too: logged, never raised
                log.warning("could not report the views.open failure: %s", inner)
