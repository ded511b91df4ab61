"""A whole log's shape: where each run of the server starts and ends, where it made progress, and
which lines only print its configuration.

People paste whole server logs: start-up output, hours of serving, a handled warning or two, sometimes
a restart, and only then the failure. Reading such a paste like an excerpt makes the first alarming
word win, wherever it is. This module reads the log's life from the patterns of `corpus/lifecycle.yaml`
in a few linear RE2 passes over the bytes (never line by line in Python), so that the failure chain
can be told from what came before it (`_chain`).
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import time
from collections.abc import Iterable, Sequence

import numpy as np
import re2

from servetriage._re2 import quiet_options
from servetriage.corpus import Lifecycle

from ._extract import matching_lines, parse_prefix
from ._ingest import as_utf8
from ._types import Line

MAX_MARKERS = 20000      # lifecycle marker lines read at a huge log's head before jumping to its tail
MARKER_TAIL = 2 << 20
STOP_TAIL_LINES = 8      # clean-exit lines within this many lines of each other end one run together
BACKWARD_WINDOW = 4 << 10  # the last progress line before a point is looked for in growing windows
RANKED_PROGRESS = 64        # progress lines read after a rank's fault to find that rank's own
NEWLINE_CHUNK = 8 << 20     # bytes compared at a time when indexing newlines: a 100 MB log needs no 100 MB mask

_OPTIONS = quiet_options(max_mem=64 << 20)
# A record of Python's warnings module (`…/torch/cuda/__init__.py:287: UserWarning:`) is the runtime
# speaking, not the printout: collect_env imports torch, whose warning that this GPU is too new for
# the build lands inside the environment report.
_PY_WARNING = re2.compile(r"\.py:\d+: [A-Z]\w*Warning\b", _OPTIONS)

BANNER, READY, STOPPING, STOPPED, BLOCK, PRINTOUT = "banner", "ready", "stopping", "stopped", "block", "printout"


def _joined(patterns: Iterable[str]) -> str:
    return "|".join(f"(?:{p})" for p in patterns)


def _union(patterns: Iterable[str], over_bytes: bool = False, per_line: bool = False) -> re2._Regexp | None:
    """`over_bytes`: searched over a whole text's bytes; `per_line`: over one line's bytes."""
    joined = _joined(patterns)
    if not joined:
        return None
    if over_bytes:
        joined = "(?m)" + joined  # over a whole text, `^` is the start of each line
    return re2.compile(joined.encode() if over_bytes or per_line else joined, _OPTIONS)


class LifecyclePatterns:
    """The lifecycle patterns compiled once per corpus (RE2 over bytes for scans, over str per line)."""

    def __init__(self, lifecycle: Lifecycle) -> None:
        self.lifecycle = lifecycle
        # A marker line's kinds, told by one set match over its bytes (a log restarted thousands of times
        # has tens of thousands of marker lines: one search per kind and line was a third of its reading).
        kinds = tuple((kind, joined) for kind, pats in ((BANNER, lifecycle.banners), (READY, lifecycle.ready),
                                                        (STOPPING, lifecycle.stopping), (STOPPED, lifecycle.stopped),
                                                        (BLOCK, tuple(b.start for b in lifecycle.printout_blocks)),
                                                        (PRINTOUT, lifecycle.printouts))
                      if (joined := _joined(pats)))
        self.kinds: tuple[str, ...] = tuple(kind for kind, _ in kinds)
        self.kind_set = re2.Set.SearchSet(_OPTIONS)
        for _, joined in kinds:
            self.kind_set.Add(joined.encode())
        self.kind_set.Compile()
        every = [p for kind in (lifecycle.banners, lifecycle.ready, lifecycle.stopping, lifecycle.stopped) for p in kind]
        every += [b.start for b in lifecycle.printout_blocks] + list(lifecycle.printouts)
        self.markers = _union(every, over_bytes=True)
        self.progress = _union((*lifecycle.progress, *lifecycle.ready), over_bytes=True)
        # what handles a fault before it: progress, and an engine that finished starting although its HTTP
        # server's banner (which opens no new run) is still to come
        self.handled = _union((*lifecycle.progress, *lifecycle.ready, *lifecycle.started), over_bytes=True)
        self.printout = _union(lifecycle.printouts)
        self.stats = _union(lifecycle.stats)
        self.stopping = _union(lifecycle.stopping)
        self.blocks = tuple((re2.compile(b.start, _OPTIONS), b.max_lines) for b in lifecycle.printout_blocks)
        self.setup = tuple((name, tuple(re2.compile(p, _OPTIONS) for p in pats)) for name, pats in lifecycle.setup)
        self.any_severity = _union((*lifecycle.fatal, *lifecycle.error, *lifecycle.warning))  # one pre-check
        self.fatal = _union(lifecycle.fatal)
        self.error = _union(lifecycle.error)
        self.warning = _union(lifecycle.warning)


@dataclasses.dataclass(frozen=True)
class Marker:
    line: int
    kind: str


@dataclasses.dataclass(frozen=True)
class Run:
    """One start of the server: lines `first`..`last`; `stop_from` is where an ordered stop began
    when the run ended in a clean exit (None: it did not)."""

    index: int
    first: int
    last: int
    stop_from: int | None = None

    @property
    def orderly_end(self) -> bool:
        return self.stop_from is not None

    def __contains__(self, line_no: object) -> bool:
        return isinstance(line_no, int) and self.first <= line_no <= self.last


class LogShape:
    """Markers, printout spans and progress of one log; runs are split once the faults are known."""

    def __init__(self, log: str | bytes, patterns: LifecyclePatterns) -> None:
        """`log`: the text, or the text as UTF-8 bytes (as a whole log is held); extract and the scanner
        read the same bytes."""
        started = time.perf_counter()
        self.patterns = patterns
        self.data = as_utf8(log)
        self.total_lines = self.data.count(b"\n") + (0 if self.data.endswith(b"\n") or not self.data else 1)
        self.markers = self._markers()
        self.blocks = self._printout_blocks()
        self.seconds = time.perf_counter() - started

    # -- reading --------------------------------------------------------------------------------
    @functools.cached_property
    def _newlines(self) -> np.ndarray:
        view = np.frombuffer(self.data, dtype=np.uint8)
        parts = [np.flatnonzero(view[at:at + NEWLINE_CHUNK] == 10) + at for at in range(0, len(view), NEWLINE_CHUNK)]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.intp)

    def offset(self, line_no: int) -> int:
        """Byte offset where line `line_no` starts (the end of the data past the last line)."""
        if line_no <= 1:
            return 0
        nl = self._newlines
        return int(nl[line_no - 2]) + 1 if line_no - 2 < len(nl) else len(self.data)

    def line_at(self, offset: int) -> int:
        return int(np.searchsorted(self._newlines, offset, side="left")) + 1

    @functools.cached_property
    def _marker_lines(self) -> list[int]:
        return [m.line for m in self.markers]

    def markers_between(self, first: int, before: int) -> tuple[Marker, ...]:
        """The markers on lines `first`..`before - 1` (markers are in line order): a log that restarts
        a thousand times asks this once per restart, so it never walks every marker."""
        lines = self._marker_lines
        return self.markers[bisect.bisect_left(lines, first):bisect.bisect_left(lines, before)]

    def first_stop(self, first: int, before: int) -> int | None:
        """The first line of an operator's stop (a signal, a shutdown notice) in `first`..`before - 1`."""
        return next((m.line for m in self.markers_between(first, before) if m.kind == STOPPING), None)

    def _markers(self) -> tuple[Marker, ...]:
        if self.patterns.markers is None:
            return ()
        out: list[Marker] = []
        kinds = self.patterns.kinds
        for no, start, end in matching_lines(self.patterns.markers, self.data, MAX_MARKERS, tail_bytes=MARKER_TAIL):
            for i in sorted(self.patterns.kind_set.Match(self.data[start:end]) or ()):  # None when no kind matches
                out.append(Marker(no, kinds[i]))
        return tuple(out)

    def _printout_blocks(self) -> tuple[tuple[int, int], ...]:
        spans: list[tuple[int, int]] = []
        for m in self.markers:
            if m.kind != BLOCK or (spans and spans[-1][0] <= m.line <= spans[-1][1]):
                continue
            start = self.offset(m.line)
            end = self.data.find(b"\n", start)
            raw = self.data[start: end if end >= 0 else len(self.data)]
            limit = next((n for rx, n in self.patterns.blocks if rx.search(raw.decode("utf-8", "replace"))), 200)
            spans.append((m.line, self._block_end(m.line, limit)))
        return tuple(spans)

    def _block_end(self, first: int, limit: int) -> int:
        pos, last = self.offset(first + 1), first
        for no in range(first + 1, min(self.total_lines, first + limit) + 1):
            nl = self.data.find(b"\n", pos)
            raw = self.data[pos: nl if nl >= 0 else len(self.data)].decode("utf-8", "replace")
            pos = nl + 1 if nl >= 0 else len(self.data)
            body, _, stamp, level = parse_prefix(raw)
            if (stamp is not None or level is not None or "Traceback (most recent call last)" in body
                    or _PY_WARNING.search(body)):
                break
            last = no
        return last

    # -- questions ------------------------------------------------------------------------------
    def is_printout(self, line: Line) -> bool:
        """A configuration or environment printout: its words are never evidence."""
        k = bisect.bisect_right(self.blocks, (line.no, self.total_lines + 1)) - 1  # blocks are in line order
        if k >= 0 and self.blocks[k][0] <= line.no <= self.blocks[k][1]:
            return True
        rx = self.patterns.printout
        return rx is not None and (rx.search(line.text) is not None or rx.search(line.body) is not None)

    def progress_between(self, after: int, upto: int) -> bool:
        """Whether a line after `after` and up to `upto` shows the server working (or becoming ready)."""
        rx = self.patterns.progress
        if rx is None or upto <= after:
            return False
        return rx.search(self.data, self.offset(after + 1), self.offset(upto + 1)) is not None

    def setup(self) -> dict[str, str]:
        """The served setup (model, tensor-parallel size) the configuration printouts name."""
        found: dict[str, str] = {}
        for m in self.markers:
            if m.kind != PRINTOUT or len(found) == len(self.patterns.setup):
                continue
            start = self.offset(m.line)
            end = self.data.find(b"\n", start)
            raw = self.data[start: end if end >= 0 else len(self.data)].decode("utf-8", "replace")
            for name, patterns in self.patterns.setup:
                if name not in found:
                    hit = next((g.group(1) for rx in patterns if (g := rx.search(raw))), None)
                    if hit:
                        found[name] = hit
        return found

    def is_stats(self, line: Line) -> bool:
        """A periodic statistics line (throughput, batch sizes), whatever its figures."""
        rx = self.patterns.stats
        return rx is not None and rx.search(line.text) is not None

    def is_progress(self, line: Line) -> bool:
        rx = self.patterns.progress
        return rx is not None and rx.search(line.text.encode("utf-8", "surrogatepass")) is not None

    def progress_by(self, rank: str | None, after: int, upto: int) -> bool:
        """Whether `rank` itself (or a line of no rank, the server as a whole) made progress after
        line `after`: other ranks' batches after one rank's crash do not mean it was handled."""
        rx = self.patterns.progress
        if rx is None or upto <= after:
            return False
        for n, m in enumerate(rx.finditer(self.data, self.offset(after + 1), self.offset(upto + 1))):
            if n >= RANKED_PROGRESS:
                return False
            start = self.data.rfind(b"\n", 0, m.start()) + 1
            end = self.data.find(b"\n", m.end())
            other = parse_prefix(self.data[start: end if end >= 0 else len(self.data)].decode("utf-8", "replace"))[1]
            if other is None or rank is None or other == rank:
                return True
        return False

    def next_handling(self, first: int, before: int) -> int | None:
        """The first line in `first`..`before - 1` that handles a fault before it (progress, or the
        engine's start-up finished)."""
        rx = self.patterns.handled
        if rx is None or before <= first:
            return None
        m = rx.search(self.data, self.offset(first), self.offset(before))
        return None if m is None else self.line_at(m.start())

    def last_progress(self, first: int, before: int) -> int | None:
        """The last progress line in `first`..`before - 1`, looked for backwards in growing windows."""
        rx = self.patterns.progress
        if rx is None or before <= first:
            return None
        lo_limit, hi = self.offset(first), self.offset(before)
        window = BACKWARD_WINDOW
        while hi > lo_limit:
            lo = max(lo_limit, hi - window)
            if lo > lo_limit:  # windows split between lines, so no line is cut between two of them
                lo = max(lo_limit, self.data.rfind(b"\n", lo_limit, lo) + 1)
            found = None
            for m in rx.finditer(self.data, lo, hi):
                found = m.start()
            if found is not None:
                return self.line_at(found)
            hi, window = lo, window * 2
        return None

    def runs(self, faults: Sequence[int]) -> tuple[Run, ...]:
        """Split on banners and clean exits. A banner opens a new run only when the current run has
        shown progress, a fatal fault (`faults`) or a stop since it began: one start prints several
        banners (every rank, the API server and uvicorn), with warnings and handled errors between them."""
        ordered = sorted(faults)
        runs: list[Run] = []
        first = 1
        i = 0
        while i < len(self.markers):
            m = self.markers[i]
            if m.kind == BANNER and m.line > first and self._active(first, m.line, ordered):
                runs.append(Run(len(runs), first, m.line - 1))
                first = m.line
            elif m.kind == STOPPED:
                last = m.line
                while i + 1 < len(self.markers) and self.markers[i + 1].kind in (STOPPED, STOPPING) \
                        and self.markers[i + 1].line - last <= STOP_TAIL_LINES:
                    i += 1
                    last = self.markers[i].line
                runs.append(Run(len(runs), first, last, self._stop_start(first, m.line)))
                first = last + 1
            i += 1
        if first <= self.total_lines or not runs:
            runs.append(Run(len(runs), first, max(first, self.total_lines)))
        return tuple(runs)

    def _stop_start(self, first: int, stopped: int) -> int:
        """Where the stop that ended a run began: its first stop line after the run's last progress."""
        worked = self.last_progress(first, stopped) or first - 1
        found = self.first_stop(worked + 1, stopped)
        return stopped if found is None else found

    def _active(self, first: int, before: int, faults: Sequence[int]) -> bool:
        k = bisect.bisect_left(faults, first)
        if k < len(faults) and faults[k] < before:
            return True
        if any(m.kind in (READY, STOPPING) for m in self.markers_between(first, before)):
            return True
        return self.progress_between(first - 1, before - 1)
