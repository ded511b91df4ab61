"""The two seams of the bot: what diagnoses a log, and what remembers a reply for feedback.

`bot/` never builds a diagnosis itself; it is handed a `Diagnoser` (the real one is
`servetriage.classifier.Engine`) so that Slack concerns and the engine can change apart.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:  # only for annotations: importing the bot must not pull the engine in
    from servetriage.classifier import Diagnosis, LogText


@runtime_checkable
class Diagnoser(Protocol):
    """Turns one decoded log into a `Diagnosis`; `warm()` loads what is costly before traffic."""

    def diagnose(self, log: "LogText") -> "Diagnosis": ...

    def warm(self) -> object: ...


@runtime_checkable
class ReplyRecorder(Protocol):
    """Keeps each answered diagnosis so that 👍/👎 and corrections can find it again.

    `record` returns the id the feedback buttons carry as their `value`; `attach_reply` links it
    to the Slack message once `chat.postMessage` has given that message a timestamp (answers sent
    through a `response_url` get none). `thread_ts` is "" when the answer starts a new message
    (`/diagnose`, the form); `source` is one of message, file, mention, command, modal, shortcut;
    `excerpt` is the log, or the lines around the evidence when long, with secrets masked.
    """

    def record(self, diagnosis: "Diagnosis", excerpt: str, *, team: str | None, channel: str, thread_ts: str,
               user: str | None, source: str) -> str: ...

    def attach_reply(self, diagnosis_id: str, reply_ts: str) -> None: ...
