"""The rule pass: every corpus signature compiled once into one RE2 scanner.

One RE2 alternation finds the lines that hold any signature in a single linear pass over the whole
text (RE2 never backtracks, so a hostile line cannot stall it); only those lines are then tested
signature by signature to learn which incidents they name.
"""

from __future__ import annotations

import dataclasses
import re

import re2

from servetriage.corpus import Corpus, Signature

from ._extract import matching_lines, parse_prefix
from ._types import Hit, Line

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False
_OPTIONS.max_mem = 256 << 20
MAX_HIT_LINES = 5000  # distinct lines examined per log; a log that repeats one error a million times is not news


@dataclasses.dataclass(frozen=True)
class _Rule:
    incident: str
    category: str
    signature: Signature
    symptom: bool
    literal: str | None
    regex: "re2._Regexp | None"

    def matches(self, text: str) -> bool:
        if self.literal is not None:
            return self.literal in text
        return self.regex.search(text) is not None  # type: ignore[union-attr]


class Scanner:
    """Built once per corpus; `scan(text)` is safe to call from many threads."""

    def __init__(self, corpus: Corpus) -> None:
        rules: list[_Rule] = []
        parts: list[str] = []
        for inc in corpus.incidents:
            symptom = corpus.categories[inc.category].symptom
            for sig in inc.signatures:
                if sig.regex:
                    compiled = re2.compile(sig.pattern, _OPTIONS)
                    rules.append(_Rule(inc.id, inc.category, sig, symptom, None, compiled))
                    parts.append(f"(?:{sig.pattern})")
                else:
                    rules.append(_Rule(inc.id, inc.category, sig, symptom, sig.pattern, None))
                    parts.append(re.escape(sig.pattern))
        self._rules = tuple(rules)
        self._any = re2.compile("|".join(parts), _OPTIONS) if parts else None

    def __len__(self) -> int:
        return len(self._rules)

    def scan(self, text: str) -> list[Hit]:
        """Every (line, signature) hit in `text`, in line order; a repeated line counts at its first occurrence."""
        if self._any is None or not text:
            return []
        hits: list[Hit] = []
        seen: set[bytes] = set()
        data = text.encode("utf-8", "surrogatepass")
        for line_no, start, end in matching_lines(self._any, data, limit=1 << 62):
            raw_bytes = data[start:end]
            if raw_bytes in seen:
                continue  # a repeat says nothing new; its first occurrence is the one that came first
            seen.add(raw_bytes)
            if len(seen) > MAX_HIT_LINES:
                break
            raw = raw_bytes.decode("utf-8", "replace")
            matched = [r for r in self._rules if r.matches(raw)]
            if not matched:
                continue
            body, rank, stamp, level = parse_prefix(raw)
            line = Line(no=line_no, text=raw, body=body.strip(), rank=rank, timestamp=stamp, level=level)
            hits.extend(Hit(r.incident, r.category, r.signature.pattern, r.signature.specificity, line, r.symptom)
                        for r in matched)
        return hits
