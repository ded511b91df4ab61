"""The promotion gate: a fixed set of labelled logs both models answer; the candidate must be no worse.

The set is a fixed, category-balanced sample of corpus examples (what the model must keep knowing)
plus the confirmed feedback examples held out of training (what on-call said the bot got right).
Feedback cases are answered through the real `Engine` (the same code path as the bot) and scored on
the answer on-call would see; corpus cases on the classifier's own first answer, because every
corpus example carries its own incident's signature: scored on the fused answer, the sample would
measure the rules (which a retrain never changes) and let a broken classifier through. That answer
is the classifier pass's, for the document the engine reads from the log (`Engine.classifier_document`),
asked of the whole sample at once. The active model's answers are cached per version and gate set,
so a retrain pays only for the candidate's.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections import OrderedDict
from contextlib import contextmanager
from collections.abc import Callable, Iterator, Sequence

from servetriage.corpus import Corpus

CORPUS_SAMPLE = 160     # corpus examples in the gate (about six per category): a bounded cost per retrain
FEEDBACK_MAX = 400      # newest held-out feedback examples kept in the gate


@dataclasses.dataclass(frozen=True)
class GateCase:
    text: str
    label: str
    part: str               # "corpus" or "feedback"


def corpus_gate_cases(corpus: Corpus, limit: int = CORPUS_SAMPLE) -> list[GateCase]:
    """A fixed sample: round-robin over categories, each category's examples in a hash order."""
    per_cat: dict[str, list[tuple[str, str]]] = {}
    for inc in corpus.incidents:
        for n, ex in enumerate(inc.examples):
            key = hashlib.sha256(f"{inc.id}:{n}".encode()).hexdigest()
            per_cat.setdefault(inc.category, []).append((key, ex))
    queues = {c: [ex for _, ex in sorted(v)] for c, v in sorted(per_cat.items())}
    out: list[GateCase] = []
    depth = 0
    while len(out) < limit and any(len(q) > depth for q in queues.values()):
        for cat, q in queues.items():
            if depth < len(q) and len(out) < limit:
                out.append(GateCase(q[depth], cat, "corpus"))
        depth += 1
    return out


def gate_hash(cases: Sequence[GateCase]) -> str:
    h = hashlib.sha256()
    for c in cases:
        h.update(f"{c.part}\0{c.label}\0".encode())
        h.update(hashlib.sha256(c.text.encode("utf-8", "replace")).digest())
    return h.hexdigest()[:16]


Predict = Callable[[Sequence["GateCase"]], list[str]]   # gate cases -> the category the model answers for each


class Gate:
    """Scores models on gate cases; answers are cached per (model version, log) for the active model."""

    def __init__(self, cache_size: int = 20000) -> None:
        self._answers: OrderedDict[tuple[str, str, str, object], str] = OrderedDict()
        self._size = cache_size

    def score(self, version: str, predict: Predict, cases: Sequence[GateCase], cache: bool = True,
              context: Callable[[str], object] = lambda text: None) -> dict[str, float | int]:
        """`predict` answers a batch of cases; `context(text)`: whatever else the answer depends on (the
        memory's verdict), part of the key."""
        keys = [(version, c.part, hashlib.blake2b(c.text.encode("utf-8", "replace"), digest_size=16).hexdigest(),
                 context(c.text)) for c in cases]
        preds: list[str | None] = [self._answers.get(k) if cache else None for k in keys]
        todo = [i for i, p in enumerate(preds) if p is None]
        if todo:
            for i, ans in zip(todo, predict([cases[i] for i in todo])):
                preds[i] = ans
                if cache:
                    self._answers[keys[i]] = ans
            while len(self._answers) > self._size:
                self._answers.popitem(last=False)
        out: dict[str, float | int] = {"cases": len(cases), "correct": sum(p == c.label for p, c in zip(preds, cases))}
        for part in ("corpus", "feedback"):
            idx = [i for i, c in enumerate(cases) if c.part == part]
            out[f"{part}_cases"] = len(idx)
            out[f"{part}_correct"] = sum(preds[i] == cases[i].label for i in idx)
        out["top1"] = round(out["correct"] / len(cases), 4) if cases else 1.0
        return out


@contextmanager
def faiss_single_thread() -> Iterator[None]:
    """faiss runs a one-log search (a few query lines) on OpenMP threads, and on two busy cores that
    costs ~12 ms a search instead of ~0.2 ms; the gate runs hundreds of them, so one thread here."""
    try:
        import faiss  # noqa: PLC0415
    except ImportError:  # pragma: no cover
        yield
        return
    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(before)
