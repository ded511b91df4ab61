"""What is built from a corpus alone: the rules' scanner, the lifecycle patterns, the catalogue's index.

Serving, the promotion gate and training all read logs through these; each is built once per corpus
per process, so a candidate model's engine, or a retrain, costs nothing to build them again.
"""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path

from servetriage.corpus import Corpus

from ._messages import MessageIndex, message_index
from ._rules import Scanner
from ._shape import LifecyclePatterns


@dataclasses.dataclass(frozen=True)
class CorpusParts:
    """The parts of one corpus, shared by every engine and every training over it in a process."""

    scanner: Scanner
    lifecycle: LifecyclePatterns
    messages: MessageIndex


_PARTS: list[tuple[Corpus, CorpusParts]] = []   # by the corpus object itself (identity, held here)
_PARTS_LOCK = threading.Lock()
PARTS_KEPT = 2   # corpora whose parts stay built (the current one and the one it replaced)


def corpus_parts(corpus: Corpus, cache_dir: Path | None = None) -> CorpusParts:
    """The parts of `corpus` (built once per process; the catalogue's index kept in `cache_dir`)."""
    with _PARTS_LOCK:
        for known, parts in _PARTS:
            if known is corpus:
                return parts
        parts = CorpusParts(Scanner(corpus), LifecyclePatterns(corpus.lifecycle), message_index(corpus, cache_dir))
        _PARTS.append((corpus, parts))
        del _PARTS[:-PARTS_KEPT]
        return parts
