"""`servetriage corpus check`: the rules a corpus must keep for the rule pass to be trustworthy."""

from __future__ import annotations

import collections
import dataclasses
import re
import time
from typing import Any

import re2

from servetriage._re2 import QUIET

from ._catalogue import catalogue_counts, load_catalogue

from ._manual import options_named
from ._types import UNKNOWN, Corpus, Incident

MIN_LITERAL = 12
_SECTION = re.compile(r"^\d+\.\d+(, \d+\.\d+)*$")
_ADVERSARIAL_BYTES = 1 << 20


@dataclasses.dataclass(frozen=True)
class Problem:
    incident: str
    origin: str
    message: str

    def __str__(self) -> str:
        return f"{self.origin}:{self.incident}: {self.message}"


def check_corpus(corpus: Corpus, adversarial: bool = True) -> list[Problem]:
    """Every rule broken, one `Problem` each; an empty list means the corpus is sound."""
    problems: list[Problem] = []
    compiled: dict[str, Any] = {}

    def add(inc: Incident, msg: str) -> None:
        problems.append(Problem(inc.id, inc.origin, msg))

    for inc in corpus.incidents:
        if inc.section and not _SECTION.match(inc.section):
            add(inc, f"section {inc.section!r} is not like '3.2' or '3.4, 6.4'")
        for other in inc.overlaps:
            if other not in corpus.categories:
                add(inc, f"overlaps names unknown category {other!r}")
        spec = corpus.categories[inc.category]
        if not inc.signatures and spec.signatures and inc.category != UNKNOWN:
            add(inc, "has no signatures, but its category's spec lists some")
        if inc.category == UNKNOWN and inc.signatures:
            add(inc, "an `unknown` (negative) incident must have no signatures")
        if inc.category != UNKNOWN and (corpus.recovery_of(inc) is None or corpus.verify_of(inc) is None):
            add(inc, "has no recovery or verify line, and its category has none in recovery.yaml")
        for sig in inc.signatures:
            if sig.regex:
                try:
                    rx = re2.compile(sig.pattern, QUIET)
                except re2.error as exc:
                    add(inc, f"regex {sig.pattern!r} does not compile under RE2 ({_msg(exc)})")
                    continue
                compiled[sig.pattern] = rx
                if not any(rx.search(line) for ex in inc.examples for line in ex.splitlines()):
                    add(inc, f"regex {sig.pattern!r} matches no single line of its own examples "
                             "(the rule pass reads one line at a time)")
                if adversarial:
                    slow = _adversarial_seconds(rx, sig.pattern)
                    if slow > 1.0:
                        add(inc, f"regex {sig.pattern!r} took {slow:.1f}s on a 1 MB adversarial line")
            else:
                if len(sig.pattern) < MIN_LITERAL:
                    add(inc, f"literal {sig.pattern!r} is shorter than {MIN_LITERAL} characters (too generic)")
                if not any(sig.pattern in line for ex in inc.examples for line in ex.splitlines()):
                    add(inc, f"literal {sig.pattern!r} appears in no single line of its own examples")
        if not inc.sources:
            add(inc, "has no source")

    # Cross-category matches: an example must not fire another category's rule unless declared.
    rules = [(inc.category, sig, compiled.get(sig.pattern)) for inc in corpus.incidents for sig in inc.signatures]
    for inc in corpus.incidents:
        allowed = {inc.category, *inc.overlaps}
        for n, ex in enumerate(inc.examples):
            for category, sig, rx in rules:
                if category in allowed:
                    continue
                hit = (rx.search(ex) is not None) if sig.regex and rx is not None else (not sig.regex and sig.pattern in ex)
                if hit:
                    add(inc, f"example {n + 1} is matched by {category!r} signature {sig.pattern!r} "
                             f"(declare `overlaps: [{category}]` if that is right)")

    # options.yaml lists the options first actions name, no more: an unnamed one is a stale entry.
    named = {name for inc in corpus.incidents for name, _ in options_named(corpus, inc)}
    for name in corpus.options:
        if name not in named:
            problems.append(Problem("-", "options.yaml", f"option {name!r} is named by no incident's first action"))
    return problems


def _adversarial_seconds(rx: Any, pattern: str) -> float:
    """Time the regex on 1 MB made of its own characters: the input that hurts a backtracking engine."""
    alphabet = "".join(ch for ch in pattern if ch.isalnum() or ch in " .:_-") or "a"
    line = (alphabet * (_ADVERSARIAL_BYTES // len(alphabet) + 1))[:_ADVERSARIAL_BYTES]
    start = time.perf_counter()
    rx.search(line)
    return time.perf_counter() - start


def corpus_stats(corpus: Corpus) -> dict[str, Any]:
    per_category = dict.fromkeys(corpus.categories, 0)
    per_engine: collections.Counter[str] = collections.Counter()
    examples_per_category = dict.fromkeys(corpus.categories, 0)
    signatures = 0
    for inc in corpus.incidents:
        per_category[inc.category] += 1
        examples_per_category[inc.category] += len(inc.examples)
        signatures += len(inc.signatures)
        per_engine.update(inc.engines)
    return {
        "incidents": len(corpus.incidents),
        "examples": sum(len(i.examples) for i in corpus.incidents),
        "signatures": signatures,
        "per_category": per_category,
        "examples_per_category": examples_per_category,
        "per_engine": dict(sorted(per_engine.items())),
        "fingerprint": corpus.fingerprint,
        "catalogue": catalogue_counts(load_catalogue()),
    }


def _msg(exc: Exception) -> str:
    text = exc.args[0] if exc.args else str(exc)
    return text.decode() if isinstance(text, bytes) else str(text)
