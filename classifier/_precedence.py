"""Which fault came first: rule hits grouped per line, ordered in time, symptoms set aside.

The labelling rule of the spec: the diagnosis is the earliest initiating fault; lines of categories
marked `role: symptom` (a dead worker, a failed health check) are its consequences. Among faults, a
specific signature beats a generic one, so an early vague line does not outrank a precise later one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from ._types import Hit

GENERIC_RATIO = 0.75  # an earlier event wins only if its signature is at least this specific relative to the best
DETAIL_LINES = 4      # a message's detail lines follow its headline this closely (NCCL's 'Last error:' block)


@dataclasses.dataclass(frozen=True)
class Event:
    """All hits on one line, represented by the most specific one."""

    best: Hit
    hits: tuple[Hit, ...]

    @property
    def category(self) -> str:
        return self.best.category

    @property
    def line_no(self) -> int:
        return self.best.line.no


@dataclasses.dataclass(frozen=True)
class Ordering:
    initiating: Event | None
    symptoms: tuple[Event, ...]       # later events of other categories, the first of each
    scores: dict[str, float]          # category -> rule score in 0..1
    events: tuple[Event, ...]


def events_from_hits(hits: list[Hit]) -> list[Event]:
    by_line: dict[int, list[Hit]] = {}
    for hit in hits:
        by_line.setdefault(hit.line.no, []).append(hit)
    events = []
    for group in by_line.values():
        best = max(group, key=lambda h: (not h.symptom, h.specificity, len(h.pattern)))
        events.append(Event(best=best, hits=tuple(group)))
    return _in_time_order(events)


def _in_time_order(events: list[Event]) -> list[Event]:
    """Timestamps order events when every event has one (logs pasted rank after rank); else line order."""
    if events and all(e.best.line.timestamp for e in events):
        return sorted(events, key=lambda e: (e.best.line.timestamp, e.line_no))
    return sorted(events, key=lambda e: e.line_no)


def order(hits: list[Hit], explains: Mapping[str, frozenset[str]] | None = None,
          details: Mapping[str, frozenset[str]] | None = None) -> Ordering:
    """`explains`: category -> the categories whose earlier lines it accounts for; `details`: category ->
    the categories of a headline it details when it follows within DETAIL_LINES (precedence.yaml)."""
    events = events_from_hits(hits)
    if not events:
        return Ordering(None, (), {}, ())
    faults = [e for e in events if not e.best.symptom] or events
    strongest = max(e.best.specificity for e in faults)
    initiating = next(e for e in faults if e.best.specificity >= strongest * GENERIC_RATIO)
    if explains:
        later = events[events.index(initiating) + 1:]
        initiating = next((e for e in later if initiating.category in explains.get(e.category, ())
                           and e.best.specificity >= strongest * GENERIC_RATIO), initiating)
    if details:
        head = initiating
        initiating = next((e for e in events[events.index(head) + 1:]
                           if 0 < e.line_no - head.line_no <= DETAIL_LINES and not e.best.symptom
                           and head.category in details.get(e.category, ())
                           and e.best.specificity >= strongest * GENERIC_RATIO), head)
    scores: dict[str, float] = {}
    for e in events:
        for h in e.hits:
            scores[h.category] = max(scores.get(h.category, 0.0), h.specificity * (0.6 if h.symptom else 1.0))
    scores[initiating.category] = max(scores.get(initiating.category, 0.0), initiating.best.specificity)
    start = events.index(initiating)
    symptoms: list[Event] = []
    seen = {initiating.category}
    explained = (explains or {}).get(initiating.category, frozenset())
    for e in [e for e in events[:start] if e.category in explained] + list(events[start + 1:]):
        if e.category not in seen:
            seen.add(e.category)
            symptoms.append(e)
    return Ordering(initiating, tuple(symptoms), scores, tuple(events))
