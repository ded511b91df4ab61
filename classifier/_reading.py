"""Reading one log for the passes: its shape, its failure chain, the rule ordering and the lines in focus.

The engine and the calibration read a log the same way, through `read_log`, so what is served is what
was calibrated: the same printouts set aside, the same chain chosen, the same rule hits ranked.
"""

from __future__ import annotations

import dataclasses

from servetriage.corpus import Corpus

from ._chain import Chain, Severity, chain_hits, find_chain, severity
from ._codepath import attribute, attribute_native, attribute_subject
from ._extract import Extract, extract
from ._messages import MessageIndex
from ._precedence import Ordering, order
from ._rules import Scanner
from ._shape import LifecyclePatterns, LogShape
from ._types import Hit, Line


@dataclasses.dataclass(frozen=True)
class Reading:
    shape: LogShape
    whole: Extract          # the salient lines of the whole log, printouts removed
    hits: tuple[Hit, ...]   # every rule hit and code-path attribution outside printouts
    chain: Chain
    ordering: Ordering      # the rule ordering of the chain's own hits
    focus: Extract          # the lines the learned passes read

    @property
    def has_faults(self) -> bool:
        return bool(self.chain.faults)

    @property
    def stopping_at(self) -> int | None:
        """The first line of an operator's stop (a signal, a shutdown notice) in the failed run."""
        run = self.chain.run
        if run is None:
            return None
        return self.shape.first_stop(run.first, run.last + 1)


def read_log(log: str | bytes, scanner: Scanner, corpus: Corpus, patterns: LifecyclePatterns,
             symptom_roles: frozenset[str], messages: MessageIndex | None = None) -> Reading:
    """`log`: the text, or the text as UTF-8 bytes (a whole log is read as bytes, a line decoded when
    it is looked at); `messages`: the mined catalogue, which places an error line no signature names."""
    shape = LogShape(log, patterns)
    whole = extract(shape.data)
    whole = dataclasses.replace(whole, lines=tuple(l for l in whole.lines if not shape.is_printout(l)))
    hits = [h for h in scanner.scan(shape.data) if not shape.is_printout(h.line)]
    levels = {l.no: severity(l, patterns) for l in whole.lines if not l.frame}  # each line read once
    if messages is not None:
        # An unprefixed line an error template names is an error: a C++ library's exception text
        # printed raw (`/workspace/cpp/matcher.cc:296: Token id 0 … cannot be accepted`) has no level.
        errors = [l for l in whole.lines if not l.frame and (levels[l.no] >= Severity.ERROR or (
            l.level is None and levels[l.no] == Severity.WARNING))]
        placed = messages.attribute(errors, {h.line.no for h in hits}, symptom_roles)
        for h in placed:
            levels[h.line.no] = max(levels[h.line.no], Severity.ERROR)
        hits += placed
        warnings = [l for l in whole.lines if not l.frame and levels[l.no] == Severity.WARNING]
        hits += messages.warned(warnings, {h.line.no for h in hits}, symptom_roles)
    serious = [l for l in whole.lines if not l.frame and (l.exception or levels[l.no] >= Severity.ERROR)]
    # A crash handler's line names only a symptom (`Caught signal 7 (Bus error …)`: a worker died); the
    # native backtrace under it still says whose code faulted.
    hits += attribute_native(shape.data, shape.offset, serious, corpus.code_paths,
                             {h.line.no for h in hits if not h.symptom}, symptom_roles)
    attributed = attribute(whole, corpus.code_paths, {h.line.no for h in hits}, symptom_roles)
    for h in attributed.cut:  # a traceback cut before its exception still ended something
        levels[h.line.no] = max(levels.get(h.line.no, Severity.INFO), Severity.ERROR)
    hits += attributed.raised + attributed.cut
    hits += attribute_subject(serious, corpus.code_paths, {h.line.no for h in hits}, symptom_roles)
    faults = [l for l in whole.lines if not l.frame and (l.exception or levels[l.no] >= Severity.WARNING)]
    chain = find_chain(shape, faults, hits, frozenset(corpus.lifecycle.stop_categories), levels)
    ordering = order(chain_hits(chain, hits, corpus.explains), corpus.explains, corpus.details)
    first_serious = next((f.line.no for f in chain.faults if f.severity >= Severity.ERROR), None)
    routine = _Routine(levels, {h.line.no for h in hits}, first_serious)
    focus = tuple(l for l in whole.lines
                  if chain.in_focus(l.no)
                  and not (first_serious is not None and shape.is_stats(l))  # stats never explain an error
                  and not (messages is not None and not l.exception and messages.is_noise(l))
                  and not routine(l))
    return Reading(shape, whole, tuple(hits), chain, ordering, dataclasses.replace(whole, lines=focus))


@dataclasses.dataclass(frozen=True)
class _Routine:
    """A record that explains no error beside it, whether or not the catalogue knows its wording (a
    release it was not mined from): in a chain that holds an error, a line its engine logged at info
    or debug level, or a warning before the first error, that no rule or placed template names (a
    warm-up step, a workspace notice the server printed while it was still working). A warning after
    the error is its consequence and stays read."""

    levels: dict[int, Severity]
    named: set[int]
    first_serious: int | None

    def __call__(self, line: Line) -> bool:
        if self.first_serious is None or line.level is None or line.frame or line.exception or line.no in self.named:
            return False
        sev = self.levels.get(line.no, Severity.FATAL)
        return sev is Severity.INFO or (sev is Severity.WARNING and line.no < self.first_serious)
