"""The spec's feature rule: a kernel fault raised inside a feature's code path is that feature's bug.

A device-side assert or illegal memory access is where a grammar-mask or draft-model bug ends; the
traceback's frames show whose code was running, and some features announce themselves in the lines
they print while they work. `feature_code_paths` and `feature_markers` (corpus/precedence.yaml) name
each feature's path fragments and marker phrases.
"""

from __future__ import annotations

from collections.abc import Mapping

from ._extract import FRAME, Extract

MAX_MARKER_COUNT = 3


def feature_of(ex: Extract, code_paths: Mapping[str, tuple[str, ...]],
               markers: Mapping[str, tuple[str, ...]] | None = None, log: str | bytes = "") -> str | None:
    """The feature whose code the log ran through (the one named by most frames and marker lines).

    Marker lines are not salient (a progress bar, a metrics line), so they are counted in the whole
    `log` (its text, or the text as UTF-8 bytes), each phrase at most `MAX_MARKER_COUNT` times.
    """
    counts: dict[str, int] = {}
    for feature, phrases in (markers or {}).items():
        n = sum(min(_count(log, p), MAX_MARKER_COUNT) for p in phrases)
        if n:
            counts[feature] = n
    for line in ex.lines:
        if not line.frame:
            continue
        m = FRAME.search(line.body)
        if not m:
            continue
        where = f"{m.group(1)} {m.group(2)}".lower()
        for feature, fragments in code_paths.items():
            if any(f.lower() in where for f in fragments):
                counts[feature] = counts.get(feature, 0) + 1
    return max(counts, key=lambda f: counts[f]) if counts else None


def _count(log: str | bytes, phrase: str) -> int:
    return log.count(phrase.encode()) if isinstance(log, bytes) else log.count(phrase)
