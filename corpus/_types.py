"""The corpus's data types: categories from the spec, incidents from the YAML files."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterator

TRIAGE_CLASSES = ("Configuration", "Application bug", "Environment / runtime", "Capacity", "Hardware")
ENGINES = ("sglang", "vllm", "trtllm", "any")
UNKNOWN = "unknown"


@dataclasses.dataclass(frozen=True)
class Category:
    id: str
    title: str
    meaning: str
    first_look: str
    signatures: tuple[str, ...] = ()
    cues: tuple[str, ...] = ()
    symptom: bool = False  # `role: symptom`: usually follows another fault


@dataclasses.dataclass(frozen=True)
class Signature:
    """A literal substring or an RE2 regex that marks one incident."""

    pattern: str
    regex: bool = False

    @property
    def specificity(self) -> float:
        """Longer, more literal patterns say more; a 12-character literal is weak, 40+ is strong."""
        size = len(self.pattern) if not self.regex else sum(ch.isalnum() or ch == " " for ch in self.pattern)
        return max(0.3, min(1.0, size / 40.0))


@dataclasses.dataclass(frozen=True)
class CodePath:
    """precedence.yaml: frames whose code, when it raises an exception no signature names, names a category."""

    category: str
    frames: tuple[str, ...]           # fragments of "path in function", matched case-insensitively
    exceptions: tuple[str, ...] = ()  # exception type names this entry is limited to (empty: any)
    words: str | None = None          # an RE2 regex the exception's message must match (None: any message)


@dataclasses.dataclass(frozen=True)
class MessagePath:
    """precedence.yaml: where an engine prints a message (a source path fragment, and optionally the
    message's words as an RE2 regex) places it in a category. `warnings`: the engine's *warnings* there
    with those words are failures too (the request was refused), not start-up chatter."""

    category: str
    paths: tuple[str, ...]
    words: str | None = None
    warnings: bool = False


@dataclasses.dataclass(frozen=True)
class PrintoutBlock:
    """lifecycle.yaml: a printout that spans lines, from `start` to the next log record."""

    start: str
    max_lines: int


@dataclasses.dataclass(frozen=True)
class Lifecycle:
    """lifecycle.yaml: how a server's runs show in its log. Every field holds RE2 patterns."""

    banners: tuple[str, ...] = ()         # a server (re)starting
    ready: tuple[str, ...] = ()           # start-up finished
    started: tuple[str, ...] = ()         # the engine is up, its HTTP server not yet: what came before was handled
    progress: tuple[str, ...] = ()        # work done: non-zero throughput, a request answered
    stats: tuple[str, ...] = ()           # periodic statistics lines, whatever their figures
    stopping: tuple[str, ...] = ()        # an operator's stop under way
    stopped: tuple[str, ...] = ()         # a clean exit
    stop_categories: tuple[str, ...] = ()  # category ids whose lines inside an orderly stop belong to it
    printouts: tuple[str, ...] = ()       # one-line configuration and environment printouts
    printout_blocks: tuple[PrintoutBlock, ...] = ()
    setup: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (name, patterns with one group) read from printouts
    fatal: tuple[str, ...] = ()           # severity words
    error: tuple[str, ...] = ()
    warning: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class OptionDoc:
    """options.yaml: the page of an engine's documentation that explains an option."""

    engine: str  # sglang, vllm or trtllm
    title: str   # the page's title, e.g. "SGLang server arguments"
    url: str


@dataclasses.dataclass(frozen=True)
class Incident:
    id: str
    category: str
    engines: tuple[str, ...]
    title: str
    symptom: str
    cause: str
    first_action: str
    fix_or_status: str
    klass: str
    signatures: tuple[Signature, ...]
    examples: tuple[str, ...]
    sources: tuple[str, ...]
    section: str | None = None
    verify: str | None = None
    overlaps: tuple[str, ...] = ()
    origin: str = ""  # the file it came from
    recovery: str | None = None  # what to do with the process, when the category's line does not fit

    @property
    def sections(self) -> tuple[str, ...]:
        return tuple(s.strip() for s in self.section.split(",")) if self.section else ()


@dataclasses.dataclass(frozen=True)
class Corpus:
    categories: dict[str, Category]
    incidents: tuple[Incident, ...]
    downstream: frozenset[str] = frozenset()  # precedence.yaml: categories that usually follow a fault
    kernel_faults: frozenset[str] = frozenset()  # precedence.yaml: where a feature's kernel bug ends
    feature_code_paths: dict[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    feature_markers: dict[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    code_paths: tuple[CodePath, ...] = ()
    explains: dict[str, frozenset[str]] = dataclasses.field(default_factory=dict)  # later fault -> earlier symptoms
    details: dict[str, frozenset[str]] = dataclasses.field(default_factory=dict)  # a message's detail -> its headline
    lifecycle: Lifecycle = Lifecycle()
    message_paths: tuple[MessagePath, ...] = ()
    generic_messages: tuple[str, ...] = ()  # precedence.yaml: wording that places no message (the interpreter's own)
    recovery: dict[str, tuple[str, str]] = dataclasses.field(default_factory=dict)  # category -> (recovery, verify)
    missing: dict[str, str] = dataclasses.field(default_factory=dict)  # symptom category -> what to fetch next
    other_rank: str = ""  # what to fetch when a line names another rank as the first to fail ({rank})
    # options.yaml: an engine option as first actions write it -> the documentation pages that explain it
    options: dict[str, tuple[OptionDoc, ...]] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_id", {i.id: i for i in self.incidents})

    def incident(self, incident_id: str) -> Incident | None:
        by_id: dict[str, Incident] = self.__dict__["_by_id"]  # set in __post_init__, not a field
        return by_id.get(incident_id)

    def recovery_of(self, inc: Incident) -> str | None:
        """What to do with the process: the incident's own line, else its category's (recovery.yaml)."""
        return inc.recovery or self.recovery.get(inc.category, (None, None))[0]

    def verify_of(self, inc: Incident) -> str | None:
        """How to check the fix: the incident's own check, else its category's (recovery.yaml)."""
        return inc.verify or self.recovery.get(inc.category, (None, None))[1]

    def by_category(self, category: str) -> Iterator[Incident]:
        return (i for i in self.incidents if i.category == category)

    @property
    def fingerprint(self) -> str:
        """A hash of everything a trained artefact depends on: change it and artefacts are stale."""
        h = hashlib.sha256()
        for cat in self.categories.values():
            h.update(json.dumps(dataclasses.asdict(cat), sort_keys=True).encode())
        for inc in sorted(self.incidents, key=lambda i: i.id):
            h.update(inc.id.encode())
            h.update(inc.category.encode())
            for sig in inc.signatures:
                h.update(f"{sig.regex}:{sig.pattern}".encode())
            for ex in inc.examples:
                h.update(ex.encode())
        h.update(json.dumps([dataclasses.asdict(c) for c in self.code_paths], sort_keys=True).encode())
        h.update(json.dumps({c: sorted(v) for c, v in self.explains.items()}, sort_keys=True).encode())
        h.update(json.dumps({c: sorted(v) for c, v in self.details.items()}, sort_keys=True).encode())
        h.update(json.dumps(dataclasses.asdict(self.lifecycle), sort_keys=True).encode())
        h.update(json.dumps([dataclasses.asdict(m) for m in self.message_paths], sort_keys=True).encode())
        h.update(json.dumps(self.generic_messages).encode())
        from ._catalogue import catalogue_digest  # noqa: PLC0415 - the catalogue is data beside the corpus, read as it is
        h.update(catalogue_digest().encode())
        return h.hexdigest()[:16]
