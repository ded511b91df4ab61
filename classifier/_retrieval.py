"""Embedding retrieval: the corpus's example lines and signatures in a faiss index.

A query is the log's few most fault-like lines (not the whole log); each finds its nearest entries,
and a category scores the best similarity any of its entries reached.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from pathlib import Path

import faiss
import numpy as np

from ._embed import Embedder

TOP_K = 12
# A query is a handful of vectors against a few thousand: one thread answers in a fraction of a
# millisecond, while OpenMP's thread team costs ~10 ms per search on a two-core machine.
faiss.omp_set_num_threads(1)


@dataclasses.dataclass(frozen=True)
class Entry:
    text: str
    category: str
    incident: str
    kind: str  # "example", "signature" or "feedback"


STOP_CATEGORIES = 3  # a line seen in examples of this many categories tells none of them apart


def stop_lines(entries: Sequence[Entry]) -> frozenset[str]:
    """Lines shared by examples of several categories ("The above exception was the direct cause…")."""
    cats: dict[str, set[str]] = {}
    for e in entries:
        cats.setdefault(e.text, set()).add(e.category)
    return frozenset(t for t, c in cats.items() if len(c) >= STOP_CATEGORIES)


class Index:
    def __init__(self, entries: Sequence[Entry], vectors: np.ndarray, stoplines: frozenset[str] = frozenset()) -> None:
        if len(entries) != len(vectors):
            raise ValueError("one vector per entry")
        self.stoplines = stoplines
        self.entries = tuple(entries)
        self._index = faiss.IndexFlatIP(vectors.shape[1])
        self._index.add(np.ascontiguousarray(vectors, dtype=np.float32))
        self.vectors = vectors

    @classmethod
    def build(cls, entries: Sequence[Entry], embedder: Embedder) -> Index:
        stop = stop_lines(entries)
        kept = [e for e in entries if e.text not in stop]
        return cls(kept, embedder.encode([e.text for e in kept]), stop)

    def subset(self, keep: Sequence[bool]) -> Index:
        idx = [i for i, k in enumerate(keep) if k]
        return Index([self.entries[i] for i in idx], self.vectors[idx], self.stoplines)

    def with_feedback(self, entries: Sequence[Entry], encode: Callable[[list[str]], np.ndarray]) -> Index:
        """This index's corpus entries and `entries` (on-call's, kind "feedback") in place of its own
        feedback entries. Only lines this index has no vector for are encoded; when its feedback entries
        are a prefix of `entries` (the usual case: one more vote), the search index is copied and
        extended rather than rebuilt."""
        own = [i for i, e in enumerate(self.entries) if e.kind == "feedback"]
        known = {self.entries[i].text: i for i in own}
        new_texts = list(dict.fromkeys(e.text for e in entries if e.text not in known))
        fresh = encode(new_texts) if new_texts else np.zeros((0, self.vectors.shape[1]), dtype=np.float32)
        row = {t: fresh[n] for n, t in enumerate(new_texts)}
        vec = [row[e.text] if e.text in row else self.vectors[known[e.text]] for e in entries]
        added = np.asarray(vec, dtype=np.float32).reshape(len(entries), self.vectors.shape[1])
        n_own = len(own)
        prefix = own == list(range(len(self.entries) - n_own, len(self.entries))) and \
            [self.entries[i] for i in own] == list(entries[:n_own])
        if prefix:
            out = Index.__new__(Index)
            out.stoplines, out.entries = self.stoplines, self.entries + tuple(entries[n_own:])
            search = faiss.clone_index(self._index)
            search.add(np.ascontiguousarray(added[n_own:]))
            out._index = search  # type: ignore[assignment]  # clone_index is typed as the base class
            out.vectors = np.concatenate([self.vectors, added[n_own:]]) if len(entries) > n_own else self.vectors
            return out
        base = self.subset([e.kind != "feedback" for e in self.entries])
        return Index(list(base.entries) + list(entries), np.concatenate([base.vectors, added]), self.stoplines)

    def usable(self, lines: Sequence[str]) -> list[str]:
        return [l for l in lines if l not in self.stoplines]

    def search(self, vectors: np.ndarray, k: int = TOP_K) -> tuple[dict[str, float], dict[str, str]]:
        """Best similarity per category over all query vectors, and the incident that reached it."""
        scores: dict[str, float] = {}
        incidents: dict[str, str] = {}
        if len(vectors) == 0 or not self.entries:
            return scores, incidents
        sims, ids = self._index.search(np.ascontiguousarray(vectors, dtype=np.float32), min(k, len(self.entries)))
        for row_s, row_i in zip(sims, ids):
            for s, i in zip(row_s, row_i):
                if i < 0:
                    continue
                e = self.entries[i]
                if s > scores.get(e.category, -1.0):
                    scores[e.category] = float(s)
                    incidents[e.category] = e.incident
        return scores, incidents

    def save(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        faiss.write_index(self._index, str(directory / "index.faiss"))
        with open(directory / "entries.jsonl", "w", encoding="utf-8") as fh:
            for e in self.entries:
                fh.write(json.dumps(dataclasses.asdict(e)) + "\n")
        (directory / "stoplines.json").write_text(json.dumps(sorted(self.stoplines)))

    @classmethod
    def load(cls, directory: Path) -> Index:
        raw = faiss.read_index(str(directory / "index.faiss"))
        vectors = raw.reconstruct_n(0, raw.ntotal) if raw.ntotal else np.zeros((0, raw.d), dtype=np.float32)
        with open(directory / "entries.jsonl", encoding="utf-8") as fh:
            entries = [Entry(**json.loads(line)) for line in fh if line.strip()]
        stop = frozenset(json.loads((directory / "stoplines.json").read_text()))
        return cls(entries, vectors, stop)
