"""The rule pass: every corpus signature compiled once into one RE2 scanner.

One RE2 alternation finds the lines that hold any signature in a single linear pass over the whole
text (RE2 never backtracks, so a hostile line cannot stall it); only those lines are then matched
against the same signatures as an RE2 set, which names every signature a line holds in one call.
The categories' own signatures (the spec's, `categories.yaml`) are rules too, naming a category and
no incident: a line the spec says marks a category is that category's evidence even where no incident
of the corpus knows it yet.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable

import re2

from servetriage._re2 import quiet_options
from servetriage.corpus import Corpus, Signature

from ._extract import matching_lines, parse_prefix
from ._ingest import as_utf8
from ._types import Hit, Line

_OPTIONS = quiet_options(max_mem=256 << 20)
MAX_HIT_LINES = 5000  # distinct lines examined per log; a log that repeats one error a million times is not news
REPEATS_KEPT = 16     # occurrences of a repeated hit line reported after its first (the last one always among them)
SPEC_FACTOR = 0.9     # a category's own signature: a little below an incident's of the same length (which says more)


@dataclasses.dataclass(frozen=True)
class _Rule:
    incident: str
    category: str
    signature: Signature
    symptom: bool
    specificity: float


def _named(rules: Iterable[_Rule]) -> list[_Rule]:
    """The rules a line matched, less a category's own signature where an incident of it matched too."""
    matched = list(rules)
    by_incident = {r.category for r in matched if r.incident}
    return [r for r in matched if r.incident or r.category not in by_incident]


class Scanner:
    """Built once per corpus; `scan(text)` is safe to call from many threads."""

    def __init__(self, corpus: Corpus) -> None:
        rules: list[_Rule] = []
        parts: list[str] = []
        for inc in corpus.incidents:
            symptom = corpus.categories[inc.category].symptom
            for sig in inc.signatures:
                rules.append(_Rule(inc.id, inc.category, sig, symptom, sig.specificity))
                parts.append(f"(?:{sig.pattern})" if sig.regex else re.escape(sig.pattern))
        for category in corpus.categories.values():
            for pattern in category.signatures:
                sig = Signature(pattern)
                rules.append(_Rule("", category.id, sig, category.symptom, sig.specificity * SPEC_FACTOR))
                parts.append(re.escape(pattern))
        self._rules = tuple(rules)
        self._any = re2.compile("|".join(parts), _OPTIONS) if parts else None
        # Which rules a found line holds, in one RE2 call: the same patterns as a set, indexed like `_rules`.
        self._set = re2.Set.SearchSet(_OPTIONS)
        for part in parts:
            self._set.Add(part)
        self._set.Compile()

    def __len__(self) -> int:
        return len(self._rules)

    def scan(self, log: str | bytes) -> list[Hit]:
        """Every (line, signature) hit in a log (its text, or the text as UTF-8 bytes), in line order. A
        repeated line is matched once; its hits are reported at its first occurrences and its last (a
        crash loop repeats the same crash, and the run that failed last matters as much as the first)."""
        if self._any is None or not log:
            return []
        hits: list[Hit] = []
        matched_by_line: dict[bytes, list[_Rule]] = {}
        repeats: dict[bytes, list[int]] = {}
        data = as_utf8(log)
        for line_no, start, end in matching_lines(self._any, data, limit=1 << 62):
            raw_bytes = data[start:end]
            known = matched_by_line.get(raw_bytes)
            if known is not None:
                if known:
                    seen_at = repeats.setdefault(raw_bytes, [])
                    if len(seen_at) < REPEATS_KEPT:
                        seen_at.append(line_no)
                    else:
                        seen_at[-1] = line_no  # keep the last occurrence too
                continue
            if len(matched_by_line) >= MAX_HIT_LINES:
                break
            raw = raw_bytes.decode("utf-8", "replace")
            matched = _named(self._rules[i] for i in sorted(self._set.Match(raw)))
            matched_by_line[raw_bytes] = matched
            if matched:
                hits.extend(self._hits(raw, line_no, matched))
        for raw_bytes, numbers in repeats.items():
            raw = raw_bytes.decode("utf-8", "replace")
            for line_no in numbers:
                hits.extend(self._hits(raw, line_no, matched_by_line[raw_bytes]))
        hits.sort(key=lambda h: h.line.no)
        return hits

    @staticmethod
    def _hits(raw: str, line_no: int, matched: list[_Rule]) -> list[Hit]:
        body, rank, stamp, level = parse_prefix(raw)
        line = Line(no=line_no, text=raw, body=body.strip(), rank=rank, timestamp=stamp, level=level)
        return [Hit(r.incident, r.category, r.signature.pattern, r.specificity, line, r.symptom) for r in matched]
