"""Code-path attribution: an exception no signature names is read by whose code raised it.

A new assertion or a bare `KeyError: 8` carries no wording a rule could know, but its traceback says
where it was raised: a KeyError inside the radix cache's lock bookkeeping is a prefix-cache bug, an
asyncio TimeoutError inside vLLM's engine loop is a stalled iteration. `code_paths`
(corpus/precedence.yaml) maps fragments of "file in function" to categories; the innermost matching
frame of a traceback names its exception's category, as a weak rule hit that any real signature
outranks.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Iterable

from servetriage._re2 import compiled
from servetriage.corpus import CodePath

from ._extract import DUMP_HEADER, FRAME, Extract
from ._types import Hit, Line

SPECIFICITY = 0.5  # a real signature of 30+ characters outranks an attribution (order's GENERIC_RATIO)
CUT_SPECIFICITY = 0.4  # a traceback cut before its exception: where it was, not what it raised
SUBJECT_SPECIFICITY = 0.45  # the class an exception names (`'EagleProposer' object has no …`): whose object, not whose code
NATIVE_SPAN = 40       # lines under an error line read for its native backtrace
NATIVE_LEAD = 3        # lines allowed between the error and the backtrace's first frame (`what():`, a banner)
NATIVE_BYTES = 16384   # at most this much text under an error line is read
MAX_NATIVE = 200       # error lines looked under, in a log that repeats its failure
_NUMBERED = re.compile(r"^\s*#?\d+\s+(?:0x[0-9a-fA-F]+\s+)?(?:in\s+)?")  # `3  0x7f… `, `#3 0x… in `, ` 8 0x… `
_SYMBOL = re.compile(r"(?<![\w./+-])((?:[A-Za-z_]\w*::)*~?[A-Za-z_]\w*)\s*\(")
_QUALIFIED = re.compile(r"(?<![\w./+-])((?:[A-Za-z_]\w*::)+~?[A-Za-z_]\w*)\s*\(")
# A frame as glibc's backtrace and UCX print it: the library, then the mangled symbol and an offset
# (`libtensorrt_llm.so(_ZN12tensorrt_llm7runtime9IpcMemory17allocateIpcMemoryEv+0x2ad)`).
_MANGLED = re.compile(r"\((_ZN[A-Za-z0-9_]+)[+)]")
_NAME_PART = re.compile(r"(\d+)")

_EXC_TYPE = re.compile(r"^([A-Za-z_][\w.]*)")
_SUBJECT = re.compile(r"'([A-Za-z_]\w{3,})' object\b")  # the interpreter's own wording names the object's class
_NOT_ALNUM = re.compile(r"[^a-z0-9]")
_SIGNALS = frozenset({"KeyboardInterrupt", "SystemExit", "CancelledError", "GeneratorExit"})
# A failed import says what is missing from the environment; the frames only say who imported it.
_IMPORTS = frozenset({"ImportError", "ModuleNotFoundError"})


@dataclasses.dataclass(frozen=True)
class Attributed:
    """Code-path hits: `raised` on exception lines; `cut` on the first line of a traceback that ends
    before its exception (that line ended something, whatever its own level said)."""

    raised: tuple[Hit, ...] = ()
    cut: tuple[Hit, ...] = ()


def attribute(ex: Extract, code_paths: Iterable[CodePath], named: Iterable[int] = (),
              symptoms: frozenset[str] = frozenset()) -> Attributed:
    """A hit for each traceback exception that no rule named (`named`: line numbers rules hit), and for
    each traceback cut off before its exception (a paste's last lines, a truncated excerpt): its
    innermost known frame, on the traceback's first line, weaker still."""
    paths = tuple(code_paths)
    if not paths:
        return Attributed()
    named_lines = set(named)
    hits: list[Hit] = []
    cut: list[Hit] = []
    frames: list[str] = []
    block = None
    head: Line | None = None  # the block's first line: a traceback's header, or the first frame of a headless one

    def cut_off() -> None:
        if frames and head is not None and head.no not in named_lines and not head.exception:
            innermost_first = DUMP_HEADER.search(head.body) is not None
            found = _innermost(frames[::-1] if innermost_first else frames, "", paths)
            if found is not None:  # the hit stands on the traceback's first line, read as a message
                cut.append(Hit(incident="", category=found[0], pattern=f"cut-off traceback: {found[1]}",
                               specificity=CUT_SPECIFICITY, line=dataclasses.replace(head, frame=False),
                               symptom=found[0] in symptoms))

    for line in ex.lines:
        if line.block != block:
            cut_off()
            frames, block, head = [], line.block, line
        if line.frame:
            m = FRAME.search(line.body)
            if m:
                frames.append(f"{m.group(1)} in {m.group(2)}".lower())
            elif line.body.startswith("Traceback"):
                frames = []  # a chained traceback starts afresh
            continue
        if line.exception and frames:
            if line.no not in named_lines:
                found = _innermost(frames, _exception_type(line), paths, line.body)
                if found is not None:
                    category, fragment = found
                    hits.append(_hit(line, category, fragment, category in symptoms))
            frames, head = [], None
    cut_off()
    return Attributed(tuple(hits), tuple(cut))


def attribute_native(data: bytes, offset: Callable[[int], int], errors: Iterable[Line],
                     code_paths: Iterable[CodePath], named: Iterable[int] = (),
                     symptoms: frozenset[str] = frozenset()) -> list[Hit]:
    """A hit for each error line no rule named that a native (C++) backtrace follows: the innermost frame
    whose symbol a code path names (`tensorrt_llm::runtime::IpcMemory::allocateIpcMemory()` under a CUDA
    error says the custom all-reduce's IPC set-up failed). `data` is the log, `offset` a line's start."""
    paths = tuple(code_paths)
    named_lines = set(named)
    hits: list[Hit] = []
    for line in [l for l in errors if l.no not in named_lines and not _NUMBERED.match(l.body)][:MAX_NATIVE]:
        start = offset(line.no + 1)
        below = data[start:start + NATIVE_BYTES].decode("utf-8", "replace").split("\n")[:NATIVE_SPAN]
        symbols: list[str] = []
        framed = False
        for i, raw in enumerate(below):
            numbered = _NUMBERED.match(raw)
            m = _SYMBOL.search(raw, numbered.end()) if numbered else _QUALIFIED.search(raw)
            if numbered is None and m is None:
                if framed or i >= NATIVE_LEAD:
                    break
                continue
            framed = True  # a frame without a symbol (`lib.so(+0x1ade70) [0x…]`) still continues the backtrace
            mangled = _MANGLED.search(raw) if numbered is not None else None
            if mangled is not None:
                symbols.append(_demangled(mangled.group(1)).lower())
            elif m is not None:
                symbols.append(m.group(1).lower())
        found = _innermost(symbols[::-1], "", paths) if symbols else None  # printed innermost first
        if found is not None:
            hits.append(Hit(incident="", category=found[0], pattern=f"native frame: {found[1]}",
                            specificity=SPECIFICITY, line=line, symptom=found[0] in symptoms))
    return hits


def _demangled(symbol: str) -> str:
    """The qualified name an Itanium-mangled symbol's nested name spells (`_ZN12tensorrt_llm7runtime9
    IpcMemory17allocateIpcMemoryEv` -> `tensorrt_llm::runtime::IpcMemory::allocateIpcMemory`): enough
    to read whose code a frame is in; argument types and templates are left out."""
    parts: list[str] = []
    pos = 3 + (symbol[3:4] == "K")  # `_ZN`, and `K` for a const member function
    while pos < len(symbol):
        m = _NAME_PART.match(symbol, pos)
        if m is None:
            break
        size, pos = int(m.group(1)), m.end()
        parts.append(symbol[pos:pos + size])
        pos += size
    return "::".join(parts) or symbol


def attribute_subject(lines: Iterable[Line], code_paths: Iterable[CodePath], named: Iterable[int] = (),
                      symptoms: frozenset[str] = frozenset()) -> list[Hit]:
    """A hit for each exception line no rule or frame named whose message names an object's class that
    a code path names (`'EagleProposer' object has no attribute 'positions'` is the EAGLE proposer's bug,
    wherever the traceback was cut). Fragments are compared without separators (`radix_cache` names
    `RadixCache`); entries limited to some messages or exception types are not used."""
    fragments = _bare_fragments(tuple(code_paths))
    named_lines = set(named)
    hits: list[Hit] = []
    for line in lines:
        if line.frame or not line.exception or line.no in named_lines:
            continue
        m = _SUBJECT.search(line.body)
        if m is None or _exception_type(line) in _SIGNALS:
            continue
        subject = m.group(1).lower()
        found = next(((c, f) for c, f, bare in fragments if bare and bare in subject), None)
        if found is not None:
            hits.append(Hit(incident="", category=found[0], pattern=f"object of {m.group(1)}: {found[1]}",
                            specificity=SUBJECT_SPECIFICITY, line=line, symptom=found[0] in symptoms))
    return hits


@functools.lru_cache(maxsize=8)
def _bare_fragments(code_paths: tuple[CodePath, ...]) -> tuple[tuple[str, str, str], ...]:
    """(category, fragment, fragment without separators) of the entries any message may take."""
    return tuple((p.category, f, _NOT_ALNUM.sub("", f.lower())) for p in code_paths if p.words is None
                 and not p.exceptions for f in p.frames if not f.startswith("in "))


def _exception_type(line: Line) -> str:
    m = _EXC_TYPE.match(line.body)
    return m.group(1).rsplit(".", 1)[-1] if m else ""


def _innermost(frames: list[str], exc_type: str, paths: tuple[CodePath, ...],
               message: str = "") -> tuple[str, str] | None:
    """The first entry naming the innermost frame it can (`message`: the exception line, for entries
    that take only some messages; a traceback cut before its exception has none)."""
    if exc_type in _SIGNALS or exc_type in _IMPORTS:
        return None
    for where in reversed(frames):  # Python prints the innermost frame last
        for entry in paths:
            if entry.exceptions and exc_type not in entry.exceptions:
                continue
            if entry.words is not None and not (message and compiled(entry.words).search(message)):
                continue
            for fragment in entry.frames:
                if fragment.lower() in where:
                    return entry.category, fragment
    return None


def _hit(line: Line, category: str, fragment: str, symptom: bool) -> Hit:
    return Hit(incident="", category=category, pattern=f"code path: {fragment}", specificity=SPECIFICITY,
               line=line, symptom=symptom)
