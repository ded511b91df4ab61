"""The feedback memory: a paste that shows the failure on-call labelled gets on-call's label.

The learned passes generalise from feedback examples (the classifier is refitted, the retrieval
index gets their lines), but they weigh them against everything else they know, and the gate may
refuse a retrain that would cost other answers. The memory is the direct reading of a correction.
It keeps each labelled paste's evidence: the lines of the failed run that report something wrong
(`fault_lines`: exceptions, error levels, fault words), normalised (numbers, ids, paths, ranks and
timestamps removed) and redacted as stored excerpts are; the healthy lines around them are not
part of it. A new paste matches when it shows most of a labelled paste's evidence (`FOUND`) and
that evidence is a fair share of its own (`EXPLAINED`): the same failure inside a longer log, on
another rank, with other timestamps and other healthy lines, is recognised; a paste that merely
shares one line among many other faults is not. Equally close examples with different labels
cancel out (the model answers).

It holds every agreed feedback example except the held-out ones (those stay a fair test for the
gate), and follows the database: a vote, a correction or a `feedback forget` takes effect on the
next answer, without waiting for a retrain. A paste in which the engine found no fault at all is
searched line by line for on-call's evidence (`match_lines`): a kernel's bare printout inside a long
healthy log is the failure once someone has said so.
"""

from __future__ import annotations

import dataclasses
import hashlib
import threading
from collections import Counter, OrderedDict
from typing import TYPE_CHECKING
from collections.abc import Callable, Iterable

if TYPE_CHECKING:
    from servetriage.classifier import Extract, Fusion

FOUND = 0.8       # share of a labelled paste's evidence lines the new paste must show
EXPLAINED = 0.6   # share of the new paste's evidence lines that labelled paste must account for (more than half)
MIN_WORDS = 3     # a normalised line of fewer words ("KeyError: N") names no particular failure
SCAN_LINES = 5000  # a paste the engine found no fault in is read line by line up to this many lines
STRUCTURE = ("Traceback (most recent call last)", "During handling of the above exception",
             "The above exception was the direct cause")   # a traceback's own scaffolding, in every one
UNKNOWN = "unknown"


def normalise(body: str) -> str:
    """The engine's own line normalisation (numbers, hex ids and paths removed)."""
    from servetriage.classifier import normalize_line  # noqa: PLC0415
    normalised: str = normalize_line(body)
    return normalised


@dataclasses.dataclass(frozen=True)
class Signature:
    """What the memory keeps of a paste: its evidence (what matches) and its other salient lines (which
    tell apart labelled pastes whose evidence is the same)."""

    evidence: frozenset[str]
    context: frozenset[str] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.evidence)


def signature(ex: Extract) -> Signature:
    """A paste's evidence: its normalised fault lines (all its salient messages when none reports a
    fault, a throughput complaint), redacted the way stored excerpts are, so that a log and its stored
    example have the same signature."""
    from servetriage.classifier import fault_lines  # noqa: PLC0415
    faults = [l.body for l in fault_lines(ex)]
    salient = [l.body for l in ex.lines if not l.frame]
    evidence = _normalised(faults or salient)
    return Signature(evidence, _normalised(salient) - evidence)


def _normalised(bodies: list[str]) -> frozenset[str]:
    from servetriage.classifier import redact  # noqa: PLC0415
    redacted = redact("\n".join(bodies)).split("\n")  # one pass per pattern, not one per line
    if len(redacted) != len(bodies):  # a secret spanning lines (a key block): redact line by line
        redacted = [redact(b) for b in bodies]
    return frozenset(n for n in (normalise(b) for b in redacted) if _telling(n))


def _telling(line: str) -> bool:
    return len(line.split()) >= MIN_WORDS and not line.startswith(STRUCTURE)


Reader = Callable[[str], "Extract"]   # a stored log -> the lines the engine reads of it


def _extract(text: str) -> Extract:
    from servetriage.classifier import extract  # noqa: PLC0415
    return extract(text)


class SignatureCache:
    """Signatures of texts by content hash (bounded), so rebuilding the memory re-reads only new logs.
    `reader`: how a stored log is read (the engine's `focus`, so a stored paste is read as a live one)."""

    def __init__(self, size: int = 50000, reader: Reader = _extract) -> None:
        self._items: OrderedDict[str, Signature] = OrderedDict()
        self._size = size
        self._reader = reader
        self._lock = threading.Lock()

    def of_text(self, text: str, ex: Extract | None = None) -> Signature:
        """The signature of `text` (`ex`: its reading, when the caller has it already)."""
        key = hashlib.blake2b(text.encode("utf-8", "replace"), digest_size=16).hexdigest()
        with self._lock:
            hit = self._items.get(key)
        if hit is not None:
            return hit
        sig = signature(ex if ex is not None else self._reader(text))
        with self._lock:
            self._items[key] = sig
            while len(self._items) > self._size:
                self._items.popitem(last=False)
        return sig


@dataclasses.dataclass(frozen=True)
class Match:
    category: str
    incident: str | None
    similarity: float       # shared evidence lines over both pastes' evidence lines (Jaccard)
    examples: int           # how many labelled logs were this close
    found: float = 1.0      # share of the labelled paste's evidence the new paste shows
    explained: float = 1.0  # share of the new paste's evidence the labelled paste accounts for

    @property
    def strength(self) -> float:
        """How sure the match is, 0..1: both shares at 1 for the same paste again."""
        return (self.found + self.explained) / 2


class FeedbackMemory:
    def __init__(self, examples: Iterable[tuple[Signature, str, str | None]] = (),
                 found: float = FOUND, explained: float = EXPLAINED, generation: int = -1) -> None:
        """`examples`: (signature, category, incident) of agreed, not held-out feedback."""
        self.found = found
        self.explained = explained
        self.generation = generation
        self._items: list[tuple[Signature, str, str | None]] = []
        self._by_line: dict[str, list[int]] = {}
        for sig, category, incident in examples:
            if not sig:
                continue
            n = len(self._items)
            self._items.append((sig, category, incident or None))
            for line in sig.evidence:
                self._by_line.setdefault(line, []).append(n)

    def __len__(self) -> int:
        return len(self._items)

    def match(self, ex: Extract) -> Match | None:
        if not self._items:
            return None
        return self.match_signature(signature(ex))

    def match_lines(self, text: str) -> Match | None:
        """For a paste the engine found no fault in: on-call's evidence lines anywhere in it (up to
        `SCAN_LINES` lines), taken as its evidence. A line no reading rule marks as a fault (a kernel's
        own printout) is still the failure once on-call has labelled it."""
        if not self._items:
            return None
        lines = text.splitlines()
        if len(lines) > SCAN_LINES:
            return None
        from servetriage.classifier import parse_prefix, redact  # noqa: PLC0415
        bodies = redact("\n".join(parse_prefix(raw)[0] for raw in lines if raw.strip())).split("\n")
        known = frozenset(n for n in map(normalise, bodies) if n in self._by_line)
        return self.match_signature(Signature(known)) if known else None

    def match_signature(self, sig: Signature) -> Match | None:
        if not sig or not self._items:
            return None
        shared: Counter[int] = Counter()
        for line in sig.evidence:
            for n in self._by_line.get(line, ()):
                shared[n] += 1
        close: list[tuple[tuple[float, float, float], int]] = []
        for n, common in shared.items():
            found, explained = common / len(self._items[n][0].evidence), common / len(sig.evidence)
            if found >= self.found and explained >= self.explained:
                # the same evidence under two labels: the paste whose other lines are closer decides
                close.append(((round(found, 9), round(explained, 9), _jaccard(sig.context, self._items[n][0].context)), n))
        if not close:
            return None
        top = max(key for key, _ in close)
        closest = [n for key, n in close if key == top]
        votes = Counter(self._items[n][1] for n in closest)
        (label, count), *rest = votes.most_common()
        if rest and rest[0][1] == count:
            return None  # equally close logs disagree: let the model answer
        incidents = Counter(self._items[n][2] for n in closest if self._items[n][1] == label and self._items[n][2])
        incident = incidents.most_common(1)[0][0] if incidents else None
        return Match(label, incident, round(_jaccard(sig.evidence, self._items[closest[0]][0].evidence), 4), count,
                     round(top[0], 4), round(top[1], 4))


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return round(len(a & b) / len(a | b), 9) if a or b else 1.0


EMPTY = FeedbackMemory()


def steer(fusion: Fusion, match: Match | None) -> Fusion:
    """The fused ranking with the memory's label first (or no answer, when on-call said `unknown`)."""
    if match is None:
        return fusion
    from servetriage.classifier import Fusion  # noqa: PLC0415

    if match.category == UNKNOWN:
        return Fusion(fusion.ranking, 0.0, fusion.incident_for)
    probs = dict(fusion.ranking)
    confidence = max(probs.get(match.category, 0.0), 0.5 + 0.45 * match.strength)
    ranking = ((match.category, confidence),) + tuple((c, min(p, confidence)) for c, p in fusion.ranking
                                                      if c != match.category)
    incident_for = dict(fusion.incident_for)
    if match.incident:
        incident_for[match.category] = match.incident
    return Fusion(ranking, confidence, incident_for)
