"""Fusion: the rule ordering and the learned passes' scores become one ranked, calibrated answer."""

from __future__ import annotations

import dataclasses
import math
from typing import Mapping

from ._precedence import Ordering

UNKNOWN = "unknown"


@dataclasses.dataclass(frozen=True)
class PassScores:
    """One pass's opinion: a score in 0..1 per category, and the incident it would name for each."""

    scores: Mapping[str, float]
    incidents: Mapping[str, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Fusion:
    ranking: tuple[tuple[str, float], ...]  # (category, fused score), best first
    confidence: float
    incident_for: dict[str, str]


@dataclasses.dataclass(frozen=True)
class Weights:
    """Linear weights of each pass's score, and a logistic map from the margin to a probability.

    The defaults are replaced by weights fitted on held-out corpus folds (see `Calibrator`)."""

    rules: float = 1.0
    retrieval: float = 0.6
    classifier: float = 0.8
    bias: float = -2.2
    scale: float = 4.5


def fuse(ordering: Ordering, retrieval: PassScores | None, classifier: PassScores | None,
         weights: Weights = Weights(), rule_incidents: Mapping[str, str] | None = None) -> Fusion:
    cats: set[str] = set(ordering.scores)
    for p in (retrieval, classifier):
        if p is not None:
            cats.update(p.scores)
    cats.discard(UNKNOWN)
    fused: dict[str, float] = {}
    for c in cats:
        s = weights.rules * ordering.scores.get(c, 0.0)
        if retrieval is not None:
            s += weights.retrieval * retrieval.scores.get(c, 0.0)
        if classifier is not None:
            s += weights.classifier * classifier.scores.get(c, 0.0)
        fused[c] = s
    if ordering.initiating is not None:
        # The rule pass's precedence decides between categories that the rules saw: the initiating
        # fault is first even when a later symptom line is more frequent in the learned passes.
        init = ordering.initiating.category
        top_other = max((v for k, v in fused.items() if k != init), default=0.0)
        fused[init] = max(fused[init], top_other + 1e-6) if fused.get(init, 0) >= 0.5 * top_other else fused[init]
    ranking = tuple(sorted(fused.items(), key=lambda kv: -kv[1]))
    incident_for: dict[str, str] = {}
    for source in (classifier, retrieval):
        if source is not None:
            incident_for.update(source.incidents)
    incident_for.update(rule_incidents or {})
    if not ranking:
        return Fusion((), 0.0, incident_for)
    best = ranking[0][1]
    second = ranking[1][1] if len(ranking) > 1 else 0.0
    confidence = _logistic(weights.bias + weights.scale * (0.7 * best + 0.3 * (best - second)))
    return Fusion(ranking, confidence, incident_for)


def _logistic(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))
