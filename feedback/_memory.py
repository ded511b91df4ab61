"""The feedback memory: a log nearly the same as one on-call labelled gets on-call's label.

The learned passes generalise from feedback examples (the classifier is refitted, the retrieval
index gets their lines), but they weigh them against everything else they know, and the gate may
refuse a retrain that would cost other answers. The memory is the direct reading of a correction:
when a new log's salient lines (normalised: numbers, ids and paths removed; redacted as stored
excerpts are) are nearly the same set as those of a log on-call labelled — Jaccard similarity of
the two sets at least `THRESHOLD` — the answer is that label, just as a rule's precedence decides
between categories. Equally close examples with different labels cancel out (the model answers).

It holds every agreed feedback example except the held-out ones (those stay a fair test for the
gate), and follows the database: a vote, a correction or a `feedback forget` takes effect on the
next answer, without waiting for a retrain. It applies only to near-duplicates, so it cannot drift
the answers for other logs; that is what the gated retrain is for.
"""

from __future__ import annotations

import dataclasses
import hashlib
import threading
from collections import Counter, OrderedDict
from typing import TYPE_CHECKING
from collections.abc import Iterable

if TYPE_CHECKING:
    from servetriage.classifier import Extract

THRESHOLD = 0.8
UNKNOWN = "unknown"


def normalise(body: str) -> str:
    """The engine's own line normalisation (numbers, hex ids and paths removed)."""
    from servetriage.classifier import normalize_line  # noqa: PLC0415
    return normalize_line(body)


def signature(ex: Extract) -> frozenset[str]:
    """The normalised messages among a log's salient lines (traceback frames left out), redacted the
    way stored excerpts are, so that a log and its stored example have the same signature."""
    from servetriage.classifier import redact  # noqa: PLC0415
    bodies = [l.body for l in ex.lines if not l.frame]
    redacted = redact("\n".join(bodies)).split("\n")  # one pass per pattern, not one per line
    if len(redacted) != len(bodies):  # a secret spanning lines (a key block): redact line by line
        redacted = [redact(b) for b in bodies]
    return frozenset(n for n in (normalise(b) for b in redacted) if len(n) >= 4)


class SignatureCache:
    """Signatures of texts by content hash (bounded), so rebuilding the memory re-reads only new logs."""

    def __init__(self, size: int = 50000) -> None:
        self._items: OrderedDict[str, frozenset[str]] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def of_text(self, text: str, ex: Extract | None = None) -> frozenset[str]:
        """The signature of `text` (`ex`: its extract, when the caller has it already)."""
        from servetriage.classifier import extract  # noqa: PLC0415
        key = hashlib.blake2b(text.encode("utf-8", "replace"), digest_size=16).hexdigest()
        with self._lock:
            hit = self._items.get(key)
        if hit is not None:
            return hit
        sig = signature(ex if ex is not None else extract(text))
        with self._lock:
            self._items[key] = sig
            while len(self._items) > self._size:
                self._items.popitem(last=False)
        return sig


@dataclasses.dataclass(frozen=True)
class Match:
    category: str
    incident: str | None
    similarity: float
    examples: int           # how many labelled logs were this close


class FeedbackMemory:
    def __init__(self, examples: Iterable[tuple[frozenset[str], str, str | None]] = (),
                 threshold: float = THRESHOLD, generation: int = -1) -> None:
        """`examples`: (signature, category, incident) of agreed, not held-out feedback."""
        self.threshold = threshold
        self.generation = generation
        self._items: list[tuple[frozenset[str], str, str | None]] = []
        self._by_line: dict[str, list[int]] = {}
        for sig, category, incident in examples:
            if not sig:
                continue
            n = len(self._items)
            self._items.append((sig, category, incident or None))
            for line in sig:
                self._by_line.setdefault(line, []).append(n)

    def __len__(self) -> int:
        return len(self._items)

    def match(self, ex: Extract) -> Match | None:
        if not self._items:
            return None
        return self.match_signature(signature(ex))

    def match_signature(self, sig: frozenset[str]) -> Match | None:
        if not sig or not self._items:
            return None
        shared: Counter[int] = Counter()
        for line in sig:
            for n in self._by_line.get(line, ()):
                shared[n] += 1
        close: list[tuple[float, int]] = []
        for n, common in shared.items():
            sim = common / (len(sig) + len(self._items[n][0]) - common)
            if sim >= self.threshold:
                close.append((sim, n))
        if not close:
            return None
        top = max(s for s, _ in close)
        closest = [n for s, n in close if s >= top - 1e-9]
        votes = Counter(self._items[n][1] for n in closest)
        (label, count), *rest = votes.most_common()
        if rest and rest[0][1] == count:
            return None  # equally close logs disagree: let the model answer
        incidents = Counter(self._items[n][2] for n in closest if self._items[n][1] == label and self._items[n][2])
        incident = incidents.most_common(1)[0][0] if incidents else None
        return Match(label, incident, round(top, 4), count)


EMPTY = FeedbackMemory()


def steer(fusion, match: Match | None):
    """The fused ranking with the memory's label first (or no answer, when on-call said `unknown`)."""
    if match is None:
        return fusion
    from servetriage.classifier import Fusion  # noqa: PLC0415

    if match.category == UNKNOWN:
        return Fusion(fusion.ranking, 0.0, fusion.incident_for)
    probs = dict(fusion.ranking)
    confidence = max(probs.get(match.category, 0.0), 0.5 + 0.45 * match.similarity)
    ranking = ((match.category, confidence),) + tuple((c, min(p, confidence)) for c, p in fusion.ranking
                                                      if c != match.category)
    incident_for = dict(fusion.incident_for)
    if match.incident:
        incident_for[match.category] = match.incident
    return Fusion(ranking, confidence, incident_for)
