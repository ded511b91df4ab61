"""`@servetriage` mentions: the explicit "look at this" of a channel.

In a thread it diagnoses the thread's first message and its files (the log people are talking
about); outside a thread, the mentioning message itself. Either way the answer goes in the thread,
and "I found no log" is said rather than nothing.
"""

from __future__ import annotations

from typing import Any

from slack_bolt import App, BoltContext

from ..detect import looks_like_log, signals, strip_mention, unformat
from ..triage import Job, SlackFile, Target, Triage, delivery_key


class MentionListener:
    """Not limited to `settings.channels`: that allowlist is for unasked-for replies only."""

    def __init__(self, triage: Triage) -> None:
        self._triage = triage

    def register(self, app: App) -> None:
        app.event("app_mention")(self.on_mention)

    def on_mention(self, event: dict[str, Any], context: BoltContext, body: dict[str, Any]) -> None:
        channel, ts = str(event.get("channel") or ""), str(event.get("ts") or "")
        if not channel or not ts or event.get("bot_id"):
            return
        thread_ts = event.get("thread_ts")
        target = Target(channel=channel, thread_ts=thread_ts or ts, user=event.get("user"),
                        team=event.get("team") or context.team_id)
        if thread_ts and thread_ts != ts:
            self._triage.submit(Job(source="mention", target=target, explicit=True, from_thread_parent=True),
                                delivery_key(body, f"mention:{channel}:{ts}"))
            return
        text = unformat(strip_mention(event.get("text") or "", context.bot_user_id))
        files = tuple(SlackFile.from_payload(f) for f in event.get("files") or ())
        # "@servetriage hi" is a greeting, not a log: it gets the how-to-ask notice, not "unknown"
        wanted = text if looks_like_log(text) or signals(text).strong else None
        self._triage.submit(Job(source="mention", target=target, text=wanted, files=files, explicit=True,
                                message_ts=ts), delivery_key(body, f"mention:{channel}:{ts}"))
