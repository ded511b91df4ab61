"""Known messages: a log line read against the catalogue mined from the engines' sources.

An error line that no corpus signature names is still a message some engine prints somewhere; the
catalogue says where (source file and function), and `message_paths` (precedence.yaml) turns the place
into a category. A C++ location inside the line (`Assertion failed: … (…/runtime/worldConfig.cpp:99)`)
is read the same way. Either is a weak rule hit: stronger than a code-path guess, weaker than any
hand-written signature. A warning is a hit only where an entry says the engine's warnings there are
failures (`warnings: true`, with the words that say so): vLLM's scheduler *warns* that a prompt
exceeds the limit and drops the request, while most warnings are start-up chatter and fallbacks.

Matching tens of thousands of templates per line must stay cheap: each template is indexed by its
rarest literal word, a line's words pick the few candidates, and only those are tried as RE2 regexes.
Reading the catalogue and indexing it takes about a second; a process that serves keeps the result
in its cache directory (keyed by the catalogue's digest) and reads it back in a fifth of that.
"""

from __future__ import annotations

import collections
import pickle
import re
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

import re2

from servetriage._atomic import replace_file
from servetriage._re2 import QUIET, compiled
from servetriage.corpus import Corpus, MessagePath, Template, catalogue_digest, load_catalogue

from ._types import Hit, Line

SPECIFICITY = 0.55          # above a code-path attribution (0.5), below any real signature of 25+ characters
MIN_ANCHOR = 4              # words shorter than this never index a template
ERROR_LEVELS = frozenset({"error", "raise", "assert", "check"})
WARNING_LEVELS = frozenset({"warning"})
WARNING_SPECIFICITY = 0.5   # a worded warning: as strong as a code-path attribution, below a known error
NOISE_LEVELS = frozenset({"info"})
QUOTED_SHARE = 0.5          # a message quoted in a wrapper's line: at least this share of the text the wrapper's words leave

_WORD = re.compile(rf"[A-Za-z_][A-Za-z0-9_]{{{MIN_ANCHOR - 1},}}")
_CPP_LOCATION = re.compile(r"([\w./+-]+\.(?:cpp|cu|cuh|cc|h|hpp))[:(](\d+)")
INDEX_LAYOUT = 1            # what the cached index holds; bump when MessageIndex derives it otherwise
CACHE_PREFIX = "messages-"


class MessageIndex:
    """The catalogue, indexed for one line at a time, with each template's place as a category."""

    def __init__(self, templates: Sequence[Template], paths: Sequence[MessagePath],
                 by_word: dict[str, list[int]] | None = None, generic: Sequence[str] = ()) -> None:
        """`generic`: patterns of wording that says nothing of where it was printed (precedence.yaml's
        `generic_messages`: the interpreter's own `'X' object has no attribute 'y'`, re-raised by a file)."""
        self._templates = tuple(templates)
        self._paths = tuple(paths)
        self._generic = tuple(generic)
        self._generic_rx = re2.compile("|".join(f"(?:{g})" for g in generic), QUIET) if generic else None
        self._words = tuple(compiled(p.words) if p.words else None for p in self._paths)
        self._by_word = by_word if by_word is not None else _anchors(self._templates)
        self._compiled: dict[int, re2._Regexp] = {}
        self._by_tail = _tails(self._templates)

    def __len__(self) -> int:
        return len(self._templates)

    @property
    def templates(self) -> tuple[Template, ...]:
        return self._templates

    def without(self, drop: Callable[[Template], bool]) -> MessageIndex:
        """The same index less some templates (cross-validation holds out whole source directories)."""
        return MessageIndex([t for t in self._templates if not drop(t)], self._paths, generic=self._generic)

    def places_nothing(self, t: Template) -> bool:
        """A template whose wording could come from anywhere (`generic_messages`)."""
        return self._generic_rx is not None and self._generic_rx.search(t.template) is not None

    def lookup(self, text: str, levels: frozenset[str] | None = None) -> Template | None:
        """The known message `text` holds (the most literal template that matches), else None."""
        return next(self.matches(text, levels), None)

    def matches(self, text: str, levels: frozenset[str] | None = None) -> Iterator[Template]:
        """Every known message `text` holds, the most literal first: a wrapper's template
        (`Worker failed with error '{}'`), then the messages quoted inside it."""
        candidates = {i for word in set(_WORD.findall(text)) for i in self._by_word.get(word, ())}
        for i in sorted(candidates, key=lambda i: -self._templates[i].literal):
            t = self._templates[i]
            if levels is not None and t.level not in levels:
                continue
            rx = self._compiled.get(i)
            if rx is None:
                rx = self._compiled[i] = re2.compile(t.regex, QUIET)
            if rx.search(text) is not None:
                yield t

    def place(self, path: str, message: str = "", warning: bool = False) -> str | None:
        """The category of a source location (and message), per `message_paths`; None when none fits.
        `warning`: the message is a warning, placed only by entries that take warnings."""
        for entry, words in zip(self._paths, self._words):
            if warning and not entry.warnings:
                continue
            if any(fragment in path for fragment in entry.paths) and (words is None or words.search(message)):
                return entry.category
        return None

    def warned(self, lines: Iterable[Line], named: Iterable[int], symptoms: frozenset[str]) -> list[Hit]:
        """A weak hit for each warning line no rule named whose template an entry taking warnings places."""
        return self._hits(lines, named, symptoms, self._placed_warning, WARNING_SPECIFICITY)

    def is_noise(self, line: Line) -> bool:
        """An info message of an engine (start-up, progress, routes): healthy output, never evidence."""
        noise = False
        for t in self.matches(line.body, NOISE_LEVELS | ERROR_LEVELS):  # one pass over the line's candidates
            if t.level in ERROR_LEVELS:
                return False
            noise = True
        return noise

    def attribute(self, lines: Iterable[Line], named: Iterable[int], symptoms: frozenset[str]) -> list[Hit]:
        """A weak hit for each error line no rule named: its C++ location, else its catalogue template.
        A place in a symptom category (`symptoms`: a dead worker, a failed health check) is no hit: the
        corpus's own signatures know the symptoms, and a weak one would only hide the cause before it."""
        return self._hits(lines, named, symptoms, self._placed_error, SPECIFICITY)

    def _placed_error(self, line: Line, symptoms: frozenset[str]) -> tuple[str | None, str]:
        # The message's own location is the last one: a glog prefix (Triton's `model_lifecycle.cc:654]`)
        # or a wrapper's names where it was reported, `Assertion failed: … (…/lookaheadDecodingLayer.cpp:56)`
        # where it failed.
        for loc in reversed(list(_CPP_LOCATION.finditer(line.body))):
            category = self.place(loc.group(1), line.body) or self._place_by_tail(loc.group(1), line.body)
            if category is not None and category not in symptoms:
                return category, f"location: {loc.group(1)}:{loc.group(2)}"
        # The message it is: the most literal template, an error's or a warning's. A wrapper's own
        # template places nothing or only a symptom (vLLM's `Worker failed with error '…'`): then a
        # message quoted inside it says where, if it makes up most of what the wrapper's words leave
        # (a short template that merely occurs in the quoted text, `{} not found in {}`, says nothing).
        # Wording that could come from anywhere ends the search: it is the message, and it says nothing.
        # A warning's place counts only where an entry takes warnings (NCCL's failed verbs call, `WARN`).
        outer: Template | None = None
        for t in self.matches(line.body, ERROR_LEVELS | WARNING_LEVELS):
            if self.places_nothing(t):
                break
            if outer is None:
                outer = t
            elif t.literal < QUOTED_SHARE * (len(line.body) - outer.literal):
                break  # the rest are shorter still
            warned = t.level in WARNING_LEVELS
            category = self.place(t.file, t.template, warning=warned)
            if category is not None and category not in symptoms:
                return category, f"catalogue: {t.engine} {t.file} in {t.function}" + (" (a warning)" if warned else "")
        return None, ""

    def _place_by_tail(self, path: str, message: str) -> str | None:
        """A location printed from a build machine's own path (`/workspace/cpp/matcher.cc`) is the
        catalogue's file with the same last two path parts (a bare name: the same name), when every
        such file has one category."""
        files = self._by_tail.get(_tail(path), ())
        places = {self.place(f, message) for f in files}
        return places.pop() if len(places) == 1 else None

    def _placed_warning(self, line: Line, symptoms: frozenset[str]) -> tuple[str | None, str]:
        t = self.lookup(line.body, WARNING_LEVELS)
        if t is None or self.places_nothing(t):
            return None, ""
        return self.place(t.file, t.template, warning=True), f"catalogue: {t.engine} {t.file} in {t.function} (a warning)"

    @staticmethod
    def _hits(lines: Iterable[Line], named: Iterable[int], symptoms: frozenset[str],
              placed: Callable[[Line, frozenset[str]], tuple[str | None, str]], specificity: float) -> list[Hit]:
        taken = set(named)
        hits: list[Hit] = []
        for line in lines:
            if line.no in taken or line.frame:
                continue
            category, where = placed(line, symptoms)
            if category is not None and category not in symptoms:  # where a symptom is printed names no cause
                hits.append(Hit(incident="", category=category, pattern=where, specificity=specificity, line=line,
                                symptom=False))
        return hits


def _tail(path: str) -> str:
    return "/".join(path.rsplit("/", 2)[-2:])


def _tails(templates: Sequence[Template]) -> dict[str, tuple[str, ...]]:
    """The catalogue's C++ files by their last two path parts (`cpp/matcher.cc`), and by their name
    alone, as a library that logs `__FILE__`'s base name prints it (`json_schema_converter.cc:2999:`)."""
    out: dict[str, set[str]] = {}
    for t in templates:
        if t.is_cpp:
            out.setdefault(_tail(t.file), set()).add(t.file)
            out.setdefault(t.file.rsplit("/", 1)[-1], set()).add(t.file)
    return {k: tuple(sorted(v)) for k, v in out.items()}


def _anchors(templates: Sequence[Template]) -> dict[str, list[int]]:
    """Each template under its rarest literal word (the longest among equally rare ones)."""
    frequency: collections.Counter[str] = collections.Counter()
    literal_words = []
    for t in templates:
        words = set(_WORD.findall(t.template.replace("{}", " ")))
        literal_words.append(words)
        frequency.update(words)
    by_word: dict[str, list[int]] = {}
    for i, words in enumerate(literal_words):
        if words:
            anchor = min(words, key=lambda w: (frequency[w], -len(w)))
            by_word.setdefault(anchor, []).append(i)
    return by_word


def message_index(corpus: Corpus, cache_dir: Path | None = None) -> MessageIndex:
    """The packaged catalogue placed by the corpus's `message_paths`; read from (or written to)
    `cache_dir` when given. An unreadable cache is rebuilt, an unwritable one only costs time."""
    if cache_dir is None:
        return MessageIndex(load_catalogue(), corpus.message_paths, generic=corpus.generic_messages)
    path = cache_dir / f"{CACHE_PREFIX}{catalogue_digest()}-{INDEX_LAYOUT}.pickle.z"
    try:
        templates, by_word = pickle.loads(zlib.decompress(path.read_bytes()))
        return MessageIndex(templates, corpus.message_paths, by_word, corpus.generic_messages)
    except (OSError, zlib.error, pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError):
        pass
    templates = load_catalogue()
    by_word = _anchors(templates)
    index = MessageIndex(templates, corpus.message_paths, by_word, corpus.generic_messages)
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        replace_file(path, zlib.compress(pickle.dumps((templates, by_word), protocol=5), 1))
        for old in cache_dir.glob(f"{CACHE_PREFIX}*.pickle.z"):
            if old != path:
                old.unlink(missing_ok=True)
    except OSError:
        pass
    return index
