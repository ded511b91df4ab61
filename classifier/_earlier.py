"""An earlier fault the rules did not name, found before a symptom they did.

The spec's precedence: when a symptom (a dead worker, a failed health check) follows an earlier
fault of another category, the earlier fault is the diagnosis. The rules often know the symptom's
wording but not the fault's (a new assertion, a reworded error); the learned passes read the lines
before the symptom, and when they name a fault with enough probability it becomes the initiating
event, the symptom its consequence.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable

from ._extract import Extract
from ._fuse import UNKNOWN, PassScores
from ._precedence import Event, Ordering
from ._types import Hit

MIN_PROBABILITY = 0.35
_ERRORISH = ("ERROR", "FATAL", "CRITICAL")


def earlier_fault(ex: Extract, ordering: Ordering, score: Callable[[Extract], Iterable[PassScores]],
                  symptom_roles: frozenset[str]) -> Ordering | None:
    """A new ordering whose initiating event is the earlier fault, or None to keep the rules' one."""
    init = ordering.initiating
    if init is None or init.category not in symptom_roles:
        return None
    before = tuple(l for l in ex.lines if l.no < init.line_no)
    faults = [l for l in before if not l.frame and (l.exception or l.level in _ERRORISH)]
    if not faults:
        return None
    sub = dataclasses.replace(ex, lines=before)
    best: tuple[float, str, str | None] | None = None
    incidents: dict[str, str] = {}
    for scores in score(sub):
        incidents.update(scores.incidents)
        for cat, p in scores.scores.items():
            if cat in symptom_roles or cat == UNKNOWN or not 0.0 <= p <= 1.0:
                continue
            if best is None or p > best[0]:
                best = (p, cat, scores.incidents.get(cat))
    if best is None or best[0] < MIN_PROBABILITY:
        return None
    p, cat, incident = best
    line = faults[0]
    hit = Hit(incident=incident or incidents.get(cat, ""), category=cat, pattern="", specificity=p, line=line,
              symptom=False)
    event = Event(best=hit, hits=(hit,))
    merged = dict(ordering.scores)
    merged[cat] = max(merged.get(cat, 0.0), p)
    later = (init,) + tuple(e for e in ordering.symptoms if e.category != cat)
    return Ordering(initiating=event, symptoms=later, scores=merged, events=(event,) + ordering.events)
