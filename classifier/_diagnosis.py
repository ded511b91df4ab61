"""The answer: one `Diagnosis` per log, the contract between the engine and every front end."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

UNKNOWN = "unknown"


@dataclasses.dataclass(frozen=True)
class IncidentRef:
    id: str
    title: str
    cause: str
    first_action: str
    fix_or_status: str
    section: str | None
    link: str
    sources: tuple[str, ...]
    verify: str | None = None      # how to check the fix (the incident's, else its category's)
    klass: str = ""                # whose problem: Configuration, Application bug, Environment / runtime, …
    recovery: str | None = None    # what to do with the process: restart, retry, change the config, drain


@dataclasses.dataclass(frozen=True)
class Candidate:
    category: str
    incident: str | None
    score: float
    title: str = ""


@dataclasses.dataclass(frozen=True)
class EvidenceLine:
    line: int
    text: str                # redacted
    rank: str | None = None
    category: str | None = None
    file: str | None = None  # the input it came from, when several were read together


@dataclasses.dataclass(frozen=True)
class Initiating:
    line: int
    text: str                # redacted
    rank: str | None = None
    timestamp: str | None = None
    file: str | None = None  # the input it came from, when several were read together


@dataclasses.dataclass(frozen=True)
class Symptom:
    category: str
    line: int
    text: str                # redacted
    rank: str | None = None
    file: str | None = None  # the input it came from, when several were read together


@dataclasses.dataclass(frozen=True)
class Earlier:
    """A fault before the failure chain that the server handled (it went on serving): context only."""

    line: int
    text: str                # redacted
    severity: str            # "warning", "error", …
    outcome: str             # "handled"
    category: str | None = None
    timestamp: str | None = None


@dataclasses.dataclass(frozen=True)
class OtherRun:
    """Another start of the server in the same paste that also ended in a failure."""

    first: int
    last: int
    line: int
    category: str | None = None


@dataclasses.dataclass(frozen=True)
class PassVotes:
    """What each pass scored (its top categories), for evaluation and debugging; None: it did not run."""

    rules: dict[str, float] = dataclasses.field(default_factory=dict)
    retrieval: dict[str, float] | None = None
    classifier: dict[str, float] | None = None
    figures: dict[str, float] | None = None    # the throughput/hang read of the log's figures
    memory: dict[str, float] | None = None     # the feedback memory (a confirmed or corrected paste)

    def ran(self) -> dict[str, dict[str, float]]:
        """The passes that ran, by name."""
        return {f.name: v for f in dataclasses.fields(self) if (v := getattr(self, f.name)) is not None}

    @classmethod
    def of(cls, rules: dict[str, float], others: dict[str, dict[str, float]]) -> PassVotes:
        unknown = set(others) - {f.name for f in dataclasses.fields(cls)}
        if unknown:
            raise ValueError(f"no such pass: {sorted(unknown)}")
        return cls(rules=rules, **others)


@dataclasses.dataclass(frozen=True)
class SeenBefore:
    """An earlier answer to the same failure in the same workspace (filled by the bot, never the engine)."""

    when: float                      # epoch seconds of the earlier answer
    place: str                       # where it was (a channel id)
    link: str | None                 # a link to that thread, when one could be made
    category: str                    # what was answered then
    up: int = 0
    down: int = 0
    corrected_to: str | None = None  # what on-call corrected it to, when they did


@dataclasses.dataclass(frozen=True)
class Diagnosis:
    category: str
    confidence: float
    incident: IncidentRef | None
    top: tuple[Candidate, ...]
    evidence: tuple[EvidenceLine, ...]
    initiating: Initiating | None
    symptoms: tuple[Symptom, ...]
    engine: str | None
    versions: dict[str, str]
    category_title: str = ""
    passes: PassVotes = dataclasses.field(default_factory=PassVotes)  # per-pass votes, for eval and debugging
    timings_ms: dict[str, float] = dataclasses.field(default_factory=dict)
    file: str | None = None
    lines_read: int = 0
    earlier: tuple[Earlier, ...] = ()       # handled faults before the chain
    other_runs: tuple[OtherRun, ...] = ()   # earlier starts in the paste that failed too
    runs: int = 1                           # starts of the server the paste holds
    run: int = 0                            # which of them (1-based) the diagnosis is about; 0: none failed
    orderly_stop: bool = False              # the paste ends in an operator's stop and nothing failed
    setup: dict[str, str] = dataclasses.field(default_factory=dict)  # model, tensor_parallel, from printouts
    missing: str | None = None              # what to fetch when the paste holds only a symptom of the cause
    model_version: str | None = None        # the trained model that answered (None: rules only, or untrained)
    seen_before: tuple[SeenBefore, ...] = ()  # earlier answers to the same failure here (the bot's history)

    @property
    def is_unknown(self) -> bool:
        return self.category == UNKNOWN

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["confidence"] = round(self.confidence, 3)
        out["top"] = [dict(c.__dict__, score=round(c.score, 3)) for c in self.top]
        inc = self.incident
        out["class"] = inc.klass if inc else None   # the on-call answer's first questions, at the top level
        out["verify"] = inc.verify if inc else None
        out["recovery"] = inc.recovery if inc else None
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Diagnosis:
        inc = data.get("incident")
        init = data.get("initiating")
        return cls(
            category=data["category"], confidence=float(data["confidence"]),
            incident=IncidentRef(**{**inc, "sources": tuple(inc.get("sources", ()))}) if inc else None,
            top=tuple(Candidate(**c) for c in data.get("top", ())),
            evidence=tuple(EvidenceLine(**e) for e in data.get("evidence", ())),
            initiating=Initiating(**init) if init else None,
            symptoms=tuple(Symptom(**s) for s in data.get("symptoms", ())),
            engine=data.get("engine"), versions=dict(data.get("versions") or {}),
            category_title=data.get("category_title", ""), passes=PassVotes(**(data.get("passes") or {})),
            timings_ms=dict(data.get("timings_ms") or {}), file=data.get("file"), lines_read=int(data.get("lines_read", 0)),
            earlier=tuple(Earlier(**e) for e in data.get("earlier", ())),
            other_runs=tuple(OtherRun(**r) for r in data.get("other_runs", ())),
            runs=int(data.get("runs", 1)), run=int(data.get("run", 0)), orderly_stop=bool(data.get("orderly_stop", False)),
            setup=dict(data.get("setup") or {}), missing=data.get("missing"), model_version=data.get("model_version"),
            seen_before=tuple(SeenBefore(**s) for s in data.get("seen_before", ())),
        )
