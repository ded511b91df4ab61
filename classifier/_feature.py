"""The spec's feature rule: a kernel fault raised inside a feature's code path is that feature's bug.

A device-side assert or illegal memory access is where a grammar-mask or draft-model bug ends; the
traceback's frames show whose code was running. `feature_code_paths` (corpus/precedence.yaml) names
the path fragments of each feature.
"""

from __future__ import annotations

import re
from typing import Mapping

from ._extract import Extract

_FRAME = re.compile(r'File "([^"]+)", line \d+, in (\S+)')


def feature_of(ex: Extract, code_paths: Mapping[str, tuple[str, ...]]) -> str | None:
    """The feature whose code the log's tracebacks ran through (the one named by most frames)."""
    counts: dict[str, int] = {}
    for line in ex.lines:
        if not line.frame:
            continue
        m = _FRAME.search(line.body)
        if not m:
            continue
        where = f"{m.group(1)} {m.group(2)}".lower()
        for feature, fragments in code_paths.items():
            if any(f.lower() in where for f in fragments):
                counts[feature] = counts.get(feature, 0) + 1
    return max(counts, key=lambda f: counts[f]) if counts else None
