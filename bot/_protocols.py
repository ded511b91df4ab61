"""The seams of the bot: what diagnoses a log, what remembers a reply, and what stores feedback.

`bot/` never builds a diagnosis itself; it is handed a `Diagnoser` (the real one is
`servetriage.classifier.Engine`) so that Slack concerns and the engine can change apart.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable
from collections.abc import Sequence

if TYPE_CHECKING:  # only for annotations: importing the bot must not pull the engine in
    from servetriage.classifier import Diagnosis, LogText


@runtime_checkable
class Diagnoser(Protocol):
    """Turns one decoded log into a `Diagnosis`; `warm()` loads what is costly before traffic."""

    def diagnose(self, log: LogText) -> Diagnosis: ...

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

    def record(self, diagnosis: Diagnosis, excerpt: str, *, team: str | None, channel: str, thread_ts: str,
               user: str | None, source: str) -> str: ...

    def attach_reply(self, diagnosis_id: str, reply_ts: str) -> None: ...


class EarlierAnswer(Protocol):
    """An earlier posted answer of this workspace to the same failure, with its votes."""

    @property
    def created(self) -> float: ...

    @property
    def channel(self) -> str: ...

    @property
    def thread_ts(self) -> str | None: ...

    @property
    def message_ts(self) -> str: ...

    @property
    def category(self) -> str: ...

    @property
    def up(self) -> int: ...

    @property
    def down(self) -> int: ...

    @property
    def corrected_to(self) -> str | None: ...


@runtime_checkable
class ReplyHistory(Protocol):
    """What a recorder that keeps its answers can say about earlier ones (the feedback store's does)."""

    def earlier(self, *, team: str | None, category: str, incident: str | None, limit: int = ...,
                channel: str | None = ..., since: float | None = ...) -> Sequence[EarlierAnswer]: ...

    def asked_for_more(self, *, channel: str, thread_ts: str) -> str | None:
        """The log (redacted) of the thread's latest answer that said what was missing, if any."""


class TallyLabel(Protocol):
    """What trusted voters agreed on: `kind` is "confirmed" or "corrected"."""

    @property
    def kind(self) -> str: ...

    @property
    def category(self) -> str: ...


class Tally(Protocol):
    @property
    def up(self) -> int: ...

    @property
    def down(self) -> int: ...

    @property
    def label(self) -> TallyLabel | None: ...

    @property
    def suggested(self) -> tuple[tuple[str, int], ...]: ...

    @property
    def waiting(self) -> str | None:
        """A correction that waits for a second voice before it teaches."""
        ...


class VoteOutcome(Protocol):
    """A stored vote: `changed` is False for the same vote cast again; `throttled`/`trusted` say
    whether it trains."""

    @property
    def diagnosis_id(self) -> str: ...

    @property
    def user(self) -> str: ...

    @property
    def direction(self) -> int: ...

    @property
    def changed(self) -> bool: ...

    @property
    def throttled(self) -> bool: ...

    @property
    def trusted(self) -> bool: ...

    @property
    def tally(self) -> Tally: ...


class Answer(Protocol):
    """A recorded answer: where it was posted, what it said and its current layout."""

    @property
    def id(self) -> str: ...

    @property
    def channel(self) -> str: ...

    @property
    def thread_ts(self) -> str | None: ...

    @property
    def message_ts(self) -> str | None: ...

    @property
    def category(self) -> str: ...

    @property
    def alternatives(self) -> list[dict[str, Any]]: ...

    @property
    def diagnosis(self) -> dict[str, Any]: ...

    @property
    def blocks(self) -> list[dict[str, Any]] | None: ...


class WrittenIncident(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def title(self) -> str: ...


class Choice(Protocol):
    """One label a correction may pick: a category (`incident` None) or an incident of it;
    `on_call`: written by on-call through the bot, not reviewed yet."""

    @property
    def category(self) -> str: ...

    @property
    def title(self) -> str: ...

    @property
    def incident(self) -> str | None: ...

    @property
    def on_call(self) -> bool: ...


@runtime_checkable
class FeedbackService(Protocol):
    """What the 👍/👎 buttons, reactions and the correction modal need, with no Slack in it.

    Every write is durable when the call returns (the listener acknowledges Slack after it).
    Unknown ids raise `servetriage.NotFound`; refused input raises another `ServetriageError`,
    whose message is one line for the user."""

    def vote(self, diagnosis_id: str, user: str, up: bool, *, source: str) -> VoteOutcome: ...

    def retract(self, diagnosis_id: str, user: str, *, direction: int, source: str) -> bool: ...

    def correct(self, diagnosis_id: str, user: str, category: str, incident: str | None, *,
                source: str) -> VoteOutcome: ...

    def new_incident(self, diagnosis_id: str, user: str, *, category: str, title: str, cause: str,
                     first_action: str) -> tuple[WrittenIncident, VoteOutcome]: ...

    def answer(self, diagnosis_id: str) -> Answer: ...

    def answer_for_reply(self, channel: str, ts: str) -> Answer | None: ...

    def keep_layout(self, diagnosis_id: str, blocks: list[dict[str, Any]]) -> None: ...

    def tally(self, diagnosis_id: str) -> Tally: ...

    def trusted_groups(self) -> tuple[str, ...]: ...

    def set_group_members(self, group_id: str, members: list[str]) -> None: ...

    def choices(self) -> Sequence[Choice]: ...
