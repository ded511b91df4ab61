"""The feedback service the bot's buttons talk to: the store's repositories behind one Slack-free API.

It satisfies `bot.FeedbackService` structurally (feedback/ does not import the bot). A change that
moves what trains calls `on_change` (the retrainer's `notify`), handed in at construction.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any
from collections.abc import Callable

from ._derive import Tally
from ._incidents import NewIncident
from ._replies import DiagnosisRow
from ._store import FeedbackStore
from ._votes import VoteResult

if TYPE_CHECKING:
    from servetriage.corpus import Corpus


@dataclasses.dataclass(frozen=True)
class Choice:
    """One label a correction may pick (the bot's `Choice`)."""

    category: str
    title: str
    incident: str | None = None
    on_call: bool = False


def _nothing() -> None:
    return None


class StoreFeedback:
    def __init__(self, store: FeedbackStore, corpus: Corpus, *, on_change: Callable[[], None] = _nothing) -> None:
        self._store = store
        self._corpus = corpus
        self._on_change = on_change

    # -- writes ------------------------------------------------------------------------------------
    def vote(self, diagnosis_id: str, user: str, up: bool, *, source: str) -> VoteResult:
        result = self._store.votes.vote(diagnosis_id, user, up, source=source)
        if result.changed:
            self._on_change()
        return result

    def retract(self, diagnosis_id: str, user: str, *, direction: int, source: str) -> bool:
        done = self._store.votes.retract(diagnosis_id, user, direction=direction, source=source)
        if done:
            self._on_change()
        return done

    def correct(self, diagnosis_id: str, user: str, category: str, incident: str | None, *,
                source: str) -> VoteResult:
        if incident and self._corpus.incident(incident) is None:
            category = self._store.incidents.get(incident).category  # on-call's own: its category rules
        result = self._store.votes.correct(diagnosis_id, user, category, incident, source=source)
        self._on_change()
        return result

    def new_incident(self, diagnosis_id: str, user: str, *, category: str, title: str, cause: str,
                     first_action: str) -> tuple[NewIncident, VoteResult]:
        out = self._store.votes.new_incident(diagnosis_id, user, category=category, title=title, cause=cause,
                                             first_action=first_action)
        self._on_change()
        return out

    def keep_layout(self, diagnosis_id: str, blocks: list[dict[str, Any]]) -> None:
        self._store.replies.set_blocks(diagnosis_id, blocks)

    def set_group_members(self, group_id: str, members: list[str]) -> None:
        self._store.trust.set_group_members(group_id, members)

    # -- reads -------------------------------------------------------------------------------------
    def answer(self, diagnosis_id: str) -> DiagnosisRow:
        return self._store.replies.get(diagnosis_id)

    def answer_for_reply(self, channel: str, ts: str) -> DiagnosisRow | None:
        return self._store.replies.by_reply(channel, ts)

    def tally(self, diagnosis_id: str) -> Tally:
        return self._store.votes.tally(diagnosis_id)

    def trusted_groups(self) -> tuple[str, ...]:
        return self._store.trust.allowlist.groups

    def choices(self) -> tuple[Choice, ...]:
        """Every category, then every corpus incident, then the incidents on-call wrote."""
        corpus = self._corpus
        out = [Choice(c, cat.title) for c, cat in corpus.categories.items()]
        out += [Choice(i.category, i.title, i.id) for i in corpus.incidents if i.category != "unknown"]
        out += [Choice(n.category, n.title, n.id, on_call=True) for n in self._store.incidents.all()]
        return tuple(out)
