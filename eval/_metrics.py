"""Scoring predictions against labels: top-k, abstention, initiating-vs-surface, macro-F1, reliability."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

UNKNOWN = "unknown"


@dataclasses.dataclass(frozen=True)
class Prediction:
    case_id: str
    label: str
    surface: str | None
    category: str
    candidates: tuple[str, ...]  # the answer first, then alternatives
    confidence: float
    seconds: float = 0.0


@dataclasses.dataclass(frozen=True)
class CategoryRow:
    category: str
    support: int
    predicted: int
    correct: int

    @property
    def precision(self) -> float:
        return self.correct / self.predicted if self.predicted else 0.0

    @property
    def recall(self) -> float:
        return self.correct / self.support if self.support else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0


def top_k(preds: Sequence[Prediction], k: int) -> float:
    if not preds:
        return 0.0
    return sum(p.label in _dedupe(p.candidates)[:k] for p in preds) / len(preds)


def _dedupe(items: Iterable[str]) -> list[str]:
    seen: list[str] = []
    for x in items:
        if x not in seen:
            seen.append(x)
    return seen


def per_category(preds: Sequence[Prediction]) -> list[CategoryRow]:
    cats = sorted({p.label for p in preds} | {p.category for p in preds})
    return [CategoryRow(c, sum(p.label == c for p in preds), sum(p.category == c for p in preds),
                        sum(p.label == c and p.category == c for p in preds)) for c in cats]


def macro_f1(preds: Sequence[Prediction]) -> float:
    rows = [r for r in per_category(preds) if r.support]
    return sum(r.f1 for r in rows) / len(rows) if rows else 0.0


def abstention(preds: Sequence[Prediction]) -> float | None:
    unk = [p for p in preds if p.label == UNKNOWN]
    return sum(p.category == UNKNOWN for p in unk) / len(unk) if unk else None


def false_abstention(preds: Sequence[Prediction]) -> float | None:
    known = [p for p in preds if p.label != UNKNOWN]
    return sum(p.category == UNKNOWN for p in known) / len(known) if known else None


def initiating_accuracy(preds: Sequence[Prediction]) -> float | None:
    """On cases whose last error is only a symptom: the share answered with the initiating cause."""
    surf = [p for p in preds if p.surface]
    return sum(p.category == p.label for p in surf) / len(surf) if surf else None


def reliability(preds: Sequence[Prediction], bins: int = 5) -> list[dict[str, float]]:
    """Confidence against accuracy, in equal-width bins: a calibrated model's rows lie on the diagonal."""
    rows = []
    for b in range(bins):
        lo, hi = b / bins, (b + 1) / bins
        inside = [p for p in preds if lo <= p.confidence < hi or (b == bins - 1 and p.confidence == 1.0)]
        if inside:
            rows.append({"low": lo, "high": hi, "n": len(inside),
                         "confidence": sum(p.confidence for p in inside) / len(inside),
                         "accuracy": sum(p.category == p.label for p in inside) / len(inside)})
    return rows


def summary(preds: Sequence[Prediction]) -> dict[str, object]:
    return {
        "cases": len(preds),
        "top1": round(top_k(preds, 1), 4),
        "top3": round(top_k(preds, 3), 4),
        "macro_f1": round(macro_f1(preds), 4),
        "abstention": _r(abstention(preds)),
        "false_abstention": _r(false_abstention(preds)),
        "initiating": _r(initiating_accuracy(preds)),
    }


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 4)
