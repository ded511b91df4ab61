"""The failure chain that ended the run: severity and outcome decide which faults are the diagnosis.

Every fault line (a rule hit, an exception, an error-level record) gets a severity (fatal, error,
warning, info) and an outcome: handled, when the same run (for a rank's error, that rank) went on
making progress after it; orderly,
when it belongs to an operator's stop that ended in a clean exit; otherwise it is part of the chain
that ended the run. The paste is diagnosed on the chain of the last run that failed: a warning the
server handled hours earlier is context ("earlier: …"), never the answer, and a warning of another
category does not outrank the fatal chain that follows it.
"""

from __future__ import annotations

import bisect
import dataclasses
import enum
from collections.abc import Iterable, Mapping, Sequence

from ._shape import BANNER, READY, LifecyclePatterns, LogShape, Run
from ._types import Hit, Line

CONTEXT_BEFORE = 30   # lines before a chain's first serious fault that the learned passes still read
MAX_CONTEXT = 4       # handled faults reported as context
MAX_OTHER_RUNS = 5
EXCERPT_LINES = 200   # a paste this short that shows no start-up is an excerpt: what it holds is its subject


class Severity(enum.IntEnum):
    INFO = 0
    WARNING = 1
    ERROR = 2
    FATAL = 3


_LEVELS = {"WARNING": Severity.WARNING, "WARN": Severity.WARNING, "ERROR": Severity.ERROR,
           "CRITICAL": Severity.FATAL, "FATAL": Severity.FATAL, "INFO": Severity.INFO, "DEBUG": Severity.INFO}


def severity(line: Line, patterns: LifecyclePatterns) -> Severity:
    """Fatal ends a process (a traceback's exception, a CUDA error, a signal, an exit code); the level
    prefix and the words of lifecycle.yaml decide the rest."""
    if line.exception:
        return Severity.FATAL
    level = _LEVELS.get(line.level or "")
    if patterns.any_severity is None or patterns.any_severity.search(line.text) is None:
        return level if level is not None else Severity.INFO  # no severity word at all: the level decides
    if patterns.fatal is not None and patterns.fatal.search(line.body):
        return Severity.FATAL
    if level is not None and level >= Severity.ERROR:
        return level
    if patterns.error is not None and patterns.error.search(line.body):
        return Severity.ERROR if level is None else max(level, Severity.WARNING)
    if level is not None:
        return level
    if patterns.warning is not None and patterns.warning.search(line.text):
        return Severity.WARNING
    return Severity.INFO


class Outcome(enum.StrEnum):
    HANDLED = "handled"    # the run went on making progress after it
    ORDERLY = "orderly"    # part of an operator's stop that ended in a clean exit
    ENDED = "ended"        # no progress after it: the run ended in it (or the paste did)


@dataclasses.dataclass(frozen=True)
class Fault:
    line: Line
    severity: Severity
    outcome: Outcome
    run: int
    category: str | None = None  # the rule category on its line, when a rule named it


@dataclasses.dataclass(frozen=True)
class FailedRun:
    """Another run of the paste that ended in a failure (the rule category of its first fault)."""

    first: int
    last: int
    line: int
    category: str | None


@dataclasses.dataclass(frozen=True)
class Chain:
    """What the diagnosis reads: the failing run's chain region, and what is reported beside it."""

    runs: tuple[Run, ...]
    run: Run | None                   # the run diagnosed (the last that failed); None when none failed
    first: int                        # the chain region, inclusive line numbers
    last: int
    focus_from: int                   # where the learned passes start reading
    faults: tuple[Fault, ...]         # the chain's own faults
    context: tuple[Fault, ...]        # handled faults before the chain, reported as "earlier"
    other_failed: tuple[FailedRun, ...]
    orderly_stop: bool                # the last run ended in an operator's stop and nothing failed

    @property
    def failed(self) -> bool:
        return self.run is not None

    def contains(self, line_no: int) -> bool:
        return self.run is not None and self.first <= line_no <= self.last

    def in_focus(self, line_no: int) -> bool:
        return self.run is not None and self.focus_from <= line_no <= self.last


def find_chain(shape: LogShape, fault_lines: Iterable[Line], hits: Sequence[Hit],
               quiet_categories: frozenset[str] = frozenset(),
               known: Mapping[int, Severity] | None = None) -> Chain:
    """`quiet_categories`: categories whose lines inside an orderly stop are part of it (shutdown);
    `known`: severities the caller already read, by line number (each line is read once)."""
    category_of: Mapping[int, str] = _categories(hits)
    lines = {l.no: l for l in fault_lines}
    for h in hits:
        lines.setdefault(h.line.no, h.line)
    ordered = sorted(lines.values(), key=lambda l: l.no)
    known = known or {}
    severities = [known[line.no] if line.no in known else severity(line, shape.patterns) for line in ordered]
    runs = shape.runs([l.no for l, sev in zip(ordered, severities) if sev >= Severity.FATAL])
    starts = [r.first for r in runs]
    handled_after = _HandledAfter(shape)
    faults = []
    for line, sev in zip(ordered, severities):
        run = runs[max(0, bisect.bisect_right(starts, line.no) - 1)]
        faults.append(_fault(line, sev, run, handled_after, category_of.get(line.no), shape, quiet_categories))
    ended = [f for f in faults if f.outcome is Outcome.ENDED]
    # A whole log's run fails on an error or worse, or on a line a rule names; an unnamed warning at
    # its end (a deprecation, a fallback notice) ends no run. An excerpt's lines are its subject.
    excerpt = {r.index: _excerpt(shape, r) for r in runs}
    failed_runs = sorted({f.run for f in ended
                          if f.severity >= Severity.ERROR or f.category is not None or excerpt[f.run]})
    if not failed_runs:
        last_run = runs[-1]
        own = [f for f in faults if f.run == last_run.index and f.outcome is not Outcome.ORDERLY]
        # A few lines cut around a handled fault a rule names, or an error: it is the subject. A notice
        # printed at info level (a stall note during start-up compilation) or a warning no rule names
        # (a tuning hint), both served past, is not.
        subject = tuple(f for f in own if f.severity >= Severity.ERROR
                        or (f.severity >= Severity.WARNING and f.category is not None))
        if subject and excerpt[last_run.index]:
            return Chain(runs, last_run, last_run.first, last_run.last, last_run.first, subject, (), (), False)
        context = tuple(f for f in own if f.outcome is Outcome.HANDLED)
        stopped = last_run.orderly_end or (not own and len(runs) > 1 and runs[-2].orderly_end)
        return Chain(runs, None, 0, -1, 0, (), _distinct(context), (), stopped)
    run = runs[failed_runs[-1]]
    chain_faults = [f for f in ended if f.run == run.index]
    start = chain_faults[0].line.no
    worked = shape.last_progress(run.first, start)
    first = (worked + 1) if worked is not None else run.first
    serious = next((f for f in chain_faults if f.severity >= Severity.ERROR), chain_faults[0])
    focus_from = max(first, serious.line.no - CONTEXT_BEFORE)
    context = tuple(f for f in faults if f.run == run.index and f.line.no < first and f.outcome is Outcome.HANDLED)
    others = tuple(_failed_run(runs[i], [f for f in ended if f.run == i]) for i in failed_runs[:-1])
    return Chain(runs, run, first, run.last, focus_from, tuple(chain_faults), _distinct(context),
                 others[-MAX_OTHER_RUNS:], False)


def chain_hits(chain: Chain, hits: Sequence[Hit], explains: Mapping[str, frozenset[str]] | None = None) -> list[Hit]:
    """The rule hits the diagnosis ranks: those on the chain's own fault lines. When the chain holds an
    error or worse that a rule names, a warning or info line keeps its say only when a serious line
    shares its category or explains it (`explains`, precedence.yaml: a watchdog timeout explains the
    stall before it). Errors no rule names silence nothing: a `/health` 500 before an unplaced
    `Exception in ASGI application` is still the evidence there is. Nor does a symptom a rule names
    (SGLang's `Received sigquit from a child process` under the traceback it follows): it is the
    consequence, not what the lines before it are about."""
    own = {f.line.no: f for f in chain.faults}
    kept = [h for h in hits if h.line.no in own]
    serious = {f.line.no for f in chain.faults if f.severity >= Severity.ERROR}
    if not serious or not any(h.line.no in serious and not h.symptom for h in kept):
        return kept
    related = {h.category for h in kept if h.line.no in serious and not h.symptom}
    related |= {c for cat in tuple(related) for c in (explains or {}).get(cat, ())}
    return [h for h in kept if h.line.no in serious or h.category in related]


def _excerpt(shape: LogShape, run: Run) -> bool:
    """An excerpt rather than a whole log: short, no start-up shown, no orderly end."""
    if run.orderly_end or run.last - run.first + 1 > EXCERPT_LINES:
        return False
    return not any(m.kind in (BANNER, READY) for m in shape.markers_between(run.first, run.last + 1))


class _HandledAfter:
    """Whether a run went on after a line (made progress, or finished starting), looked for forward from
    its faults in line order: each run's lines are read at most once however many faults it holds (a log
    restarted ten thousand times with a notice in every start-up asks once per start, and each answer is
    a few lines away)."""

    def __init__(self, shape: LogShape) -> None:
        self._shape = shape
        self._known: dict[int, tuple[int, int | None]] = {}  # run -> (searched from line, first such line found)

    def __call__(self, line_no: int, run: Run) -> bool:
        known = self._known.get(run.index)
        if known is not None and line_no + 1 >= known[0]:
            found = known[1]
            if found is None:
                return False  # none from an earlier line on, so none from this one
            if line_no < found:
                return True
        found = self._shape.next_handling(line_no + 1, run.last + 1)
        self._known[run.index] = (line_no + 1, found)
        return found is not None


def _fault(line: Line, sev: Severity, run: Run, handled_after: _HandledAfter, category: str | None, shape: LogShape,
           quiet: frozenset[str]) -> Fault:
    in_stop = run.stop_from is not None and run.stop_from <= line.no <= run.last
    if in_stop and (sev < Severity.ERROR or _part_of_stop(line, category, shape, quiet)):
        outcome = Outcome.ORDERLY  # a warning while stopping, or the stop's own lines
    elif shape.is_progress(line) or (handled_after(line.no, run) and (
            line.rank is None or sev < Severity.ERROR or shape.progress_by(line.rank, line.no, run.last))):
        outcome = Outcome.HANDLED  # the server (a rank's fault: that rank) went on working
    else:
        outcome = Outcome.ENDED
    return Fault(line, sev, outcome, run.index, category)


def _part_of_stop(line: Line, category: str | None, shape: LogShape, quiet: frozenset[str]) -> bool:
    rx = shape.patterns.stopping
    return (category in quiet) or (rx is not None and rx.search(line.text) is not None) or line.frame


def _categories(hits: Sequence[Hit]) -> dict[int, str]:
    out: dict[int, Hit] = {}
    for h in hits:
        best = out.get(h.line.no)
        if best is None or (not h.symptom, h.specificity) > (not best.symptom, best.specificity):
            out[h.line.no] = h
    return {no: h.category for no, h in out.items()}


def _distinct(faults: Sequence[Fault]) -> tuple[Fault, ...]:
    """The first handled fault of each category (or, unnamed, each error wording), at most MAX_CONTEXT."""
    seen: set[str] = set()
    out: list[Fault] = []
    for f in faults:
        if f.category is None and f.severity < Severity.ERROR:
            continue  # a start-up notice the server got past says nothing worth a line in the answer
        key = f.category or f.line.body[:60]
        if key in seen:
            continue
        seen.add(key)
        out.append(f)
    return tuple(out[:MAX_CONTEXT])


def _failed_run(run: Run, ended: Sequence[Fault]) -> FailedRun:
    named = next((f for f in ended if f.category is not None and f.severity >= Severity.ERROR),
                 next((f for f in ended if f.category is not None), ended[0]))
    return FailedRun(run.first, run.last, named.line.no, named.category)
