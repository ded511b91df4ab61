"""Fusion: rule precedence and the learned passes' scores become one calibrated ranking.

Each candidate category gets a few features (its rule specificity, whether it came first, its best
retrieval similarity, its classifier probability, …); a logistic model fitted on held-out corpus
folds turns them into the probability that the candidate is right. That probability is the
confidence, and below the threshold the answer is `unknown`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

from ._precedence import Ordering

UNKNOWN = "unknown"
FEATURES = ("rule", "initiating", "symptom_role", "retrieval", "retrieval_top", "classifier", "classifier_top",
            "healthy", "rules_fired", "fault_lines")


@dataclasses.dataclass(frozen=True)
class PassScores:
    """One pass's opinion: a score per category, and the incident it would name for each."""

    scores: Mapping[str, float]
    incidents: Mapping[str, str] = dataclasses.field(default_factory=dict)
    incident_scores: Mapping[str, float] = dataclasses.field(default_factory=dict)  # how alike, per incident


@dataclasses.dataclass(frozen=True)
class Calibrator:
    """A logistic model over `FEATURES`; the defaults are a hand-set prior used until one is fitted."""

    coef: tuple[float, ...] = (5.0, 1.0, -0.5, 2.0, 0.5, 3.0, 0.5, -2.0, 0.0, 1.0)
    intercept: float = -3.0
    threshold: float = 0.35  # below it: `unknown`; fitted on the same held-out folds

    def prob(self, x: Sequence[float]) -> float:
        z = self.intercept + sum(w * v for w, v in zip(self.coef, x))
        return 1.0 / (1.0 + math.exp(-max(-40.0, min(40.0, z))))


@dataclasses.dataclass(frozen=True)
class Fusion:
    ranking: tuple[tuple[str, float], ...]  # (category, probability), best first
    confidence: float
    incident_for: dict[str, str]


def candidates(ordering: Ordering, retrieval: PassScores | None, classifier: PassScores | None, k: int = 4) -> list[str]:
    cats: list[str] = list(ordering.scores)
    for p in (retrieval, classifier):
        if p is not None:
            cats.extend(c for c, _ in sorted(p.scores.items(), key=lambda kv: -kv[1])[:k])
    return [c for c in dict.fromkeys(cats) if c != UNKNOWN]


def features(category: str, ordering: Ordering, retrieval: PassScores | None, classifier: PassScores | None,
             symptom_roles: frozenset[str], faulty: bool = True) -> list[float]:
    """`faulty`: the log has a line that reports something wrong (see `_features.has_fault`); a log
    without one is most often a healthy start-up or a report, whatever it resembles."""
    r_top = max(retrieval.scores.items(), key=lambda kv: kv[1])[0] if retrieval and retrieval.scores else None
    known = {c: s for c, s in classifier.scores.items() if c != UNKNOWN} if classifier else {}
    c_top = max(known.items(), key=lambda kv: kv[1])[0] if known else None
    return [
        ordering.scores.get(category, 0.0),
        1.0 if ordering.initiating is not None and ordering.initiating.category == category else 0.0,
        1.0 if category in symptom_roles else 0.0,
        retrieval.scores.get(category, 0.0) if retrieval else 0.0,
        1.0 if category == r_top else 0.0,
        classifier.scores.get(category, 0.0) if classifier else 0.0,
        1.0 if category == c_top else 0.0,
        classifier.scores.get(UNKNOWN, 0.0) if classifier else 0.0,
        1.0 if ordering.scores else 0.0,
        1.0 if faulty else 0.0,
    ]


def fuse(ordering: Ordering, retrieval: PassScores | None, classifier: PassScores | None,
         calibrator: Calibrator, symptom_roles: frozenset[str], rule_incidents: Mapping[str, str],
         faulty: bool = True) -> Fusion:
    ranked = sorted(((c, calibrator.prob(features(c, ordering, retrieval, classifier, symptom_roles, faulty)))
                     for c in candidates(ordering, retrieval, classifier)), key=lambda kv: -kv[1])
    incident_for: dict[str, str] = {}
    for source in (retrieval, classifier):  # the classifier compares whole logs, so it has the last word
        if source is not None:
            incident_for.update(source.incidents)
    incident_for.update(rule_incidents)
    confidence = ranked[0][1] if ranked else 0.0
    return Fusion(tuple(ranked), confidence, incident_for)


def symptoms_after_fault(ranked: list[tuple[str, float]], ordering: Ordering,
                          symptom_roles: frozenset[str]) -> list[tuple[str, float]]:
    """A symptom category never outranks the initiating fault the rules found before it; and when the
    rules found only a symptom, a category with no line of its own in the log does not replace it
    (an earlier fault the learned passes can point at has already become the initiating event)."""
    if not ranked or ordering.initiating is None:
        return ranked
    init = ordering.initiating.category
    top = ranked[0][0]
    if init in symptom_roles and top != init and top not in ordering.scores:
        probs = dict(ranked)
        if init in probs:
            return [(init, max(probs[init], ranked[0][1]))] + [(c, p) for c, p in ranked if c != init]
    if ranked[0][0] in symptom_roles and init != ranked[0][0] and init not in symptom_roles:
        probs = dict(ranked)
        if init in probs:
            top_p = ranked[0][1]
            rest = [(c, p) for c, p in ranked if c != init]
            return [(init, max(probs[init], top_p))] + rest
    return ranked
