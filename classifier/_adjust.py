"""What runs after fusion, in one explicit order: each adjustment a small named object.

The calibrated ranking of `fuse` is adjusted by knowledge a logistic model over per-category features
cannot hold: a symptom never outranks the fault before it, a kernel fault inside a feature's code is
that feature's bug, a worker that dies once the operator's stop began is the stop going wrong, and a
log in which nothing failed is judged by its own figures. The engine runs `AFTER_FUSION` on every
diagnosis, and the cross-validation that fits the threshold runs the very same sequence, so the served
confidence is the one that was fitted. (The earlier-fault step runs before
fusion, on the ordering; the feedback memory, when serving, runs after this sequence.)
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Protocol

from servetriage.corpus import Corpus

from ._extract import Extract
from ._feature import feature_of
from ._features import first_fault_line
from ._fuse import UNKNOWN, Fusion, symptoms_after_fault
from ._metrics import MetricsVerdict, assess
from ._precedence import Ordering


class AdjustContext:
    """What the adjustments may read about one log (its figures are read once, when first asked)."""

    def __init__(self, ordering: Ordering, focus: Extract, log: str | bytes, has_faults: bool, corpus: Corpus,
                 symptom_roles: frozenset[str], figures_text: Callable[[], str] | None = None,
                 stopping_at: int | None = None) -> None:
        """`log`: the text, or the text as UTF-8 bytes; `figures_text`: the text the figures are read
        from (the diagnosed run), when not all of it; `stopping_at`: the first line of an operator's stop
        in the failed run (Reading.stopping_at)."""
        self.ordering, self.focus, self.log, self.has_faults = ordering, focus, log, has_faults
        self.corpus, self.symptom_roles, self.stopping_at = corpus, symptom_roles, stopping_at
        self._figures_text = figures_text or (lambda: log if isinstance(log, str) else log.decode("utf-8", "replace"))

    @functools.cached_property
    def figures(self) -> MetricsVerdict | None:
        """The log's own figures decide only a log in which nothing failed: no rule hit, no fault line."""
        if self.has_faults or self.ordering.events or first_fault_line(self.focus) is not None:
            return None
        return assess(self._figures_text())


class Adjustment(Protocol):
    @property
    def name(self) -> str: ...  # read-only, so that a frozen dataclass is one

    def apply(self, fusion: Fusion, ctx: AdjustContext) -> Fusion: ...


@dataclasses.dataclass(frozen=True)
class SymptomPrecedence:
    """A symptom category never outranks the initiating fault the rules found before it."""

    name: str = "symptom-precedence"

    def apply(self, fusion: Fusion, ctx: AdjustContext) -> Fusion:
        ranked = symptoms_after_fault(list(fusion.ranking), ctx.ordering, ctx.symptom_roles)
        return dataclasses.replace(fusion, ranking=tuple(ranked), confidence=ranked[0][1] if ranked else 0.0)


@dataclasses.dataclass(frozen=True)
class FeatureRule:
    """The spec's rule: a kernel fault inside a feature's code path is labelled by the feature."""

    name: str = "feature-rule"

    def apply(self, fusion: Fusion, ctx: AdjustContext) -> Fusion:
        corpus = ctx.corpus
        if not fusion.ranking or fusion.ranking[0][0] not in corpus.kernel_faults:
            return fusion
        feature = feature_of(ctx.focus, corpus.feature_code_paths, corpus.feature_markers, ctx.log)
        if feature is None:
            return fusion
        top = fusion.ranking[0][1]
        ranking = ((feature, top),) + tuple((c, s) for c, s in fusion.ranking if c != feature)
        return dataclasses.replace(fusion, ranking=ranking)


@dataclasses.dataclass(frozen=True)
class FigureVerdict:
    """A log with no fault in it is what its figures say: a crawl, a hang, or an ordinary report."""

    name: str = "figures"

    def apply(self, fusion: Fusion, ctx: AdjustContext) -> Fusion:
        figures = ctx.figures
        if figures is None:
            return fusion
        if figures.category == UNKNOWN:  # an ordinary report or an idle server: nothing to diagnose
            return dataclasses.replace(fusion, confidence=0.0)
        ranking = ((figures.category, figures.confidence),) + tuple(
            (c, min(s, figures.confidence)) for c, s in fusion.ranking if c != figures.category)
        return dataclasses.replace(fusion, ranking=ranking, confidence=figures.confidence)


@dataclasses.dataclass(frozen=True)
class CrashWhileStopping:
    """A worker that died after the operator's stop began, with no fault of its own before it, is the
    stop going wrong (the spec's shutdown: a crash reported while being stopped, children killed
    before the parent drained), not a dead worker to explain."""

    name: str = "crash-while-stopping"
    category: str = "shutdown"

    def apply(self, fusion: Fusion, ctx: AdjustContext) -> Fusion:
        if ctx.stopping_at is None or not fusion.ranking or fusion.ranking[0][0] not in ctx.symptom_roles:
            return fusion
        events = ctx.ordering.events
        if not events or any(e.line_no < ctx.stopping_at or e.category not in ctx.symptom_roles for e in events):
            return fusion  # something failed before the stop, or a cause is named: that is the diagnosis
        top = fusion.ranking[0][1]
        ranking = ((self.category, top),) + tuple((c, s) for c, s in fusion.ranking if c != self.category)
        return dataclasses.replace(fusion, ranking=ranking)


AFTER_FUSION: tuple[Adjustment, ...] = (SymptomPrecedence(), FeatureRule(), CrashWhileStopping(), FigureVerdict())


def adjust(fusion: Fusion, ctx: AdjustContext, steps: tuple[Adjustment, ...] = AFTER_FUSION) -> Fusion:
    for step in steps:
        fusion = step.apply(fusion, ctx)
    return fusion

