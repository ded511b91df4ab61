"""Finding the lines that matter: tracebacks as units, error lines, and who said them when.

A pasted log mixes ranks, processes and noise. This module reads each line's engine prefix (SGLang
`[time DPn TPn]`, vLLM `(EngineCore_0 pid=…)` and `LEVEL mm-dd hh:mm:ss [file:n]`, torchrun
`[rankN]:`, TensorRT-LLM `[TRT-LLM][ERROR]` and TensorRT's own `[TRT] [E]`, glog as PyTorch's c10 and
Ray print it) so that the earliest fault and its rank can be named,
and keeps a traceback together with its final exception line, per rank.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Iterator
from typing import Protocol

import re2

from servetriage._re2 import quiet_options

from ._ingest import as_utf8
from ._types import Line

MAX_SALIENT = 600           # salient lines kept: the first half and the last half of them
MAX_TRACEBACK_LINES = 80    # frames kept per traceback (its head and its tail)
FALLBACK_TAIL = 25          # lines kept from a log that has no salient line at all
HEAD_LINES = 3              # a paste opens inside a traceback when a frame comes within its first lines

_RE2_OPTIONS = quiet_options(max_mem=64 << 20)

# One pass over the whole text finds candidate lines; Python then looks only at those. Fault words
# are always searched; the weak words (metrics, warnings) only in logs small enough to be a paste.
_STRONG = (
    r"Traceback \(most recent call last\)|Error\b|[Ee]xception\b|\bERROR\b|\bFATAL\b|\bCRITICAL\b|"
    r"\b[Ee]rror\b|\[E\]|\bCUDA\b|\bcuda[A-Z_]|\bNCCL\b|\bnccl[A-Z]|\bMPI_|\bNVRM\b|\bXid\b|CUBLAS|cuDNN|\bHIP\b|"
    r"\b[Kk]illed\b|\bSIG[A-Z]{3,}|exit code|exited with|core dumped|Aborted|terminate called|what\(\):|"
    r"[Aa]ssert|\bOOM\b|oom-kill|[Oo]ut of memory|[Tt]imed out|[Tt]imeout|\bdied\b|\bdead\b|[Ff]ailed|[Ff]ailure|"
    r"[Uu]nable to|[Cc]annot |[Cc]ould not|not supported|[Uu]nsupported|[Ii]nvalid|unrecognized|No such file|"
    r"[Pp]ermission denied|[Rr]efused|preempted|[Rr]etract|\bleak|\bhang|\bstuck\b|[Uu]nexpected|"
    r"[Nn]ot enough|[Ii]nsufficient|[Ee]xceed|too (?:small|large|long|old)|[Mm]ismatch|Segfault|"
    r"Segmentation fault|most recent call first|"
    r"(?m:^)[a-z_]\w*(?:\.\w+)*\.[A-Z]\w*: "  # an exception named by its module, whatever its class's name
)
_WEAK = (
    r"\bWARN(?:ING)?\b|[Ss]ignal\b|[Ee]vict|[Tt]hroughput|\bTTFT\b|\bITL\b|[Ll]atency|[Hh]it rate|#cached-token|"
    r"[Tt]emperature|[Dd]eterministic|[Dd]eprecat|\b[Ss]low(?:er|down)?\b|[Rr]egress|\b[Dd]ropped\b|[Dd]egrad|"
    r"tokens?/s|tok/s|[Aa]ccept(?:ance)? (?:len|rate)"
)
_STRONG_RE = re2.compile(_STRONG, _RE2_OPTIONS)
_ANY_RE = re2.compile(f"{_STRONG}|{_WEAK}", _RE2_OPTIONS)
PASTE_BYTES = 1 << 20      # up to this size every weak word counts too
MAX_CANDIDATES = 20000     # candidate lines read from the head of a huge log before jumping to its tail
TAIL_BYTES = 2 << 20

_SGLANG = re.compile(r"^\[(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?)((?: (?:[DTPE]P|PP|CP)\d+)*)\] ?")
_VLLM_PROC = re.compile(r"^\(([A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)*)(?: rank=(\d+))?(?: pid=(\d+))?(?:, ip=[^)]*)?\) ?")
_LEVEL = re.compile(r"^(INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL|FATAL)\s+(\d\d-\d\d \d\d:\d\d:\d\d)(?:[.,]\d+)?\s+"
                    r"(?:\[[\w./-]+(?::\d+)?\]|[\w./-]+:\d+\])\s?")
_TORCHRUN = re.compile(r"^\[(?:rank|default)(\d+)\]:\s?")
_TRT = re.compile(r"^(?:\[(\d\d/\d\d/\d{4}-\d\d:\d\d:\d\d)\]\s*)?\[(?:TRT-LLM|TensorRT-LLM|TRT)\]\s*(?:\[RANK (\d+)\]\s*)?"
                  r"\[?(ERROR|E|W|WARNING|I|INFO|F|FATAL)\]\s*")
_ISO = re.compile(r"^(?:[-|] )?(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?)(?:Z|[+-]\d\d:?\d\d)? ?(?:- )?"
                  r"(?:(?:\[?(INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL|FATAL)\]?)(?: - |:? ))?")
# glog, as PyTorch's c10 logs (`[E1130 10:00:00.123456 1234 ProcessGroupNCCL.cpp:616] `, bracketed since
# torch 2.3) and Ray's own log records (`[2026-11-30 10:00:00,903 E 9041 9041] `).
# The source location stays in the body: the file a C++ library logs from is itself a cue.
_GLOG = re.compile(r"^\[?([IWEF])(\d\d)(\d\d) (\d\d:\d\d:\d\d(?:\.\d+)?)\s+(?:\d+\s+)?(?=[\w.+-]+:\d+\])")
_RAY = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)?) ([IWEFD]) \d+ \d+\]\s?")
_LETTER_LEVELS = {"I": "INFO", "W": "WARNING", "E": "ERROR", "F": "FATAL", "D": "DEBUG"}
_BODY_RANK = re.compile(r"\b(?:[Rr]ank|RANK)[ =:]?(\d+)\b|\bTP_?(\d+)\b")
_EXC_LINE = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning|Fault|error)\b(?::|$)"
                       r"|^[a-z_][\w.]*\.[A-Z]\w*(?::|$)")

_HEADER = "Traceback (most recent call last)"
# A stack dump printed innermost first, with no exception under it: Python's faulthandler
# (`Current thread 0x… (most recent call first):`) and a crash handler's native dump (`Segfault encountered`).
DUMP_HEADER = re.compile(r"\(most recent call first\)|Segfault encountered")
_FILE_LINE = re.compile(r'^\s*File "[^"]+", line \d+')
FRAME = re.compile(r'File "([^"]+)", line \d+,? in (\S+)')  # a frame's file and function (faulthandler: no comma)

_MONTHS = ("", "01", "02", "03", "04", "05", "06", "07", "08", "09", "10", "11", "12")


@dataclasses.dataclass(frozen=True)
class Extract:
    """What the later passes read: the salient lines, the engine, the versions it shows."""

    lines: tuple[Line, ...]
    engine: str | None
    versions: dict[str, str]
    total_lines: int


def parse_prefix(raw: str) -> tuple[str, str | None, str | None, str | None]:
    """Peel engine prefixes off one line: (body, rank, timestamp key, level)."""
    body, rank, stamp, level = raw, None, None, None
    for _ in range(4):
        m = _VLLM_PROC.match(body)
        if m and (m.group(2) or m.group(3) or m.group(1).startswith(("EngineCore", "Worker", "APIServer", "Vllm", "Ray"))):
            name = m.group(1)
            if m.group(2) is not None:
                rank = rank or f"rank {m.group(2)}"
            elif name.startswith("Worker_") or name.startswith("EngineCore_"):
                rank = rank or name.split("_", 1)[1] if name.startswith("Worker_") else rank or name
            else:
                rank = rank or name + (f" pid={m.group(3)}" if m.group(3) else "")
            body = body[m.end():]
            continue
        m = _SGLANG.match(body)
        if m:
            stamp = stamp or _stamp(m.group(1))
            if m.group(2).strip():
                rank = rank or m.group(2).strip()
            body = body[m.end():]
            continue
        m = _TORCHRUN.match(body)
        if m:
            rank = rank or f"rank {m.group(1)}"
            body = body[m.end():]
            continue
        m = _LEVEL.match(body)
        if m:
            level = level or ("WARNING" if m.group(1) == "WARN" else m.group(1))
            stamp = stamp or m.group(2)
            body = body[m.end():]
            continue
        m = _TRT.match(body)
        if m:
            level = level or {"E": "ERROR", "W": "WARNING", "I": "INFO", "F": "FATAL"}.get(m.group(3), m.group(3))
            if m.group(2) is not None:
                rank = rank or f"rank {m.group(2)}"
            if m.group(1):
                mo, d, rest = m.group(1)[0:2], m.group(1)[3:5], m.group(1)[11:]
                stamp = stamp or f"{mo}-{d} {rest}"
            body = body[m.end():]
            continue
        m = _GLOG.match(body)
        if m:
            level = level or _LETTER_LEVELS[m.group(1)]
            stamp = stamp or f"{m.group(2)}-{m.group(3)} {m.group(4)}"
            body = body[m.end():]
            continue
        m = _RAY.match(body)
        if m:
            stamp = stamp or _stamp(m.group(1))
            level = level or _LETTER_LEVELS[m.group(2)]
            body = body[m.end():]
            continue
        m = _ISO.match(body)
        if m and m.end() > 0:
            stamp = stamp or _stamp(m.group(1))
            level = level or m.group(2)
            body = body[m.end():]
            continue
        break
    if rank is None:
        m = _BODY_RANK.search(body)
        if m:
            rank = f"rank {m.group(1)}" if m.group(1) else f"TP{m.group(2)}"
    return body, rank, stamp, level


def _stamp(value: str) -> str:
    """A sortable key, month-first: vLLM prints no year, so keys leave it out."""
    value = value.replace("T", " ").replace(",", ".")
    return value[5:] if len(value) >= 19 and value[4] == "-" else value


def extract(log: str | bytes) -> Extract:
    """Pick the salient lines of a log (tracebacks whole, per rank) with their prefixes parsed. `log` is
    its text, or the text as UTF-8 bytes: what a whole log is held as, read a line at a time."""
    data = as_utf8(log)
    total = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
    picked = _candidate_lines(data)
    opening = _opening_frame(data)
    if opening is not None and all(no != opening[0] for no, _, _ in picked[:HEAD_LINES]):
        picked = sorted([*picked, opening])
    if not picked:
        picked = _tail_lines(data, FALLBACK_TAIL)
    lines = _assemble(data, picked)
    return Extract(lines=tuple(lines), engine=detect_engine(data), versions=detect_versions(data), total_lines=total)


def _line(data: bytes, start: int, end: int) -> str:
    """One line of the log (byte offsets), decoded; a byte that is not UTF-8 reads as U+FFFD."""
    return data[start:end].decode("utf-8", "replace")


def _line_end(data: bytes, pos: int) -> int:
    nl = data.find(b"\n", pos)
    return len(data) if nl < 0 else nl


def _opening_frame(data: bytes) -> tuple[int, int, int] | None:
    """The first `File "…", line N` line when a paste opens inside a traceback (its first lines are
    frames and source lines): frames carry no fault word, so the salient scan alone would skip it."""
    pos = 0
    for no in range(1, HEAD_LINES + 1):
        end = _line_end(data, pos)
        body = parse_prefix(_line(data, pos, end))[0]
        if _FILE_LINE.match(body):
            return no, pos, end
        if body.strip() and not body[:1].isspace():
            return None  # a message line first: the paste did not open inside a traceback
        if end >= len(data):
            return None
        pos = end + 1
    return None


def _candidate_lines(data: bytes) -> list[tuple[int, int, int]]:
    """(line number, start, end) of lines with a salient word, found in one RE2 pass (byte offsets)."""
    regex = _ANY_RE if len(data) <= PASTE_BYTES else _STRONG_RE
    return list(matching_lines(regex, data, MAX_CANDIDATES, tail_bytes=TAIL_BYTES))


class _Span(Protocol):
    def start(self) -> int: ...
    def end(self) -> int: ...


class BytesPattern(Protocol):
    """A compiled bytes pattern: an RE2 one (untyped) or `re`'s."""

    def finditer(self, string: bytes, pos: int, /) -> Iterator[_Span]: ...


def matching_lines(regex: BytesPattern, data: bytes, limit: int, tail_bytes: int = 0) -> Iterator[tuple[int, int, int]]:
    """Yield (line number, start, end) byte spans of distinct lines holding a match, in order.

    After `limit` lines, the scan jumps to the last `tail_bytes` of the input: a log that repeats
    its warnings a million times is read at its head and its tail, never line by line in Python.
    """
    line_no, counted, last_start, n = 1, 0, -1, 0
    pos, size = 0, len(data)
    while pos < size:
        jumped = False
        for m in regex.finditer(data, pos):
            start = data.rfind(b"\n", 0, m.start()) + 1
            if start == last_start:
                continue
            last_start = start
            line_no += data.count(b"\n", counted, start)
            counted = start
            end = data.find(b"\n", m.end())
            end = size if end < 0 else end
            yield line_no, start, end
            n += 1
            if n >= limit and tail_bytes and size - end > tail_bytes:
                pos = data.find(b"\n", size - tail_bytes) + 1 or size
                n, jumped = 0, True
                break
        if not jumped:
            return


def _tail_lines(data: bytes, n: int) -> list[tuple[int, int, int]]:
    """The last `n` lines that are not blank, read backwards from the end."""
    spans: list[tuple[int, int, int]] = []
    end, no = len(data), data.count(b"\n") + 1
    while len(spans) < n:
        start = data.rfind(b"\n", 0, end) + 1
        if data[start:end].strip():
            spans.append((no, start, end))
        if start == 0:
            break
        end, no = start - 1, no - 1
    return spans[::-1]


def _assemble(data: bytes, picked: list[tuple[int, int, int]]) -> list[Line]:
    """Turn candidate spans into `Line`s; a traceback header pulls in its frames and exception line."""
    if len(picked) > MAX_SALIENT:
        picked = picked[: MAX_SALIENT // 2] + picked[-MAX_SALIENT // 2:]
    lines: list[Line] = []
    seen: set[int] = set()
    block = 0
    for no, start, end in picked:
        if no in seen:
            continue
        raw = _line(data, start, end)
        body, rank, stamp, level = parse_prefix(raw)
        block += 1
        # A traceback header (also "Scheduler hit an exception: Traceback (most recent call last):"), or a
        # frame no header came before: a paste that starts inside a traceback reads on from its first frame.
        if _HEADER in body or _FILE_LINE.match(body) or DUMP_HEADER.search(body):
            unit = _traceback(data, no, end, rank, block)
            for line in unit:
                seen.add(line.no)
            lines.extend(unit)
            continue
        seen.add(no)
        body = body.strip()
        exception = bool(_EXC_LINE.match(body))
        if exception:  # a paste that starts inside a traceback: its frames sit just above
            for frame in _frames_above(data, no, start, rank, block):
                if frame.no not in seen:
                    seen.add(frame.no)
                    lines.append(frame)
        lines.append(Line(no=no, text=raw, body=body, rank=rank, timestamp=stamp, level=level, block=block,
                          exception=exception))
    lines.sort(key=lambda l: l.no)
    return lines


def _traceback(data: bytes, no: int, end: int, rank: str | None, block: int) -> list[Line]:
    """Read forward from a traceback header, following only lines of the same rank."""
    header_raw = _line(data, data.rfind(b"\n", 0, end - 1) + 1, end)
    body, _, stamp, level = parse_prefix(header_raw)
    headless = bool(_FILE_LINE.match(body))  # a paste that opens inside a traceback: its first frame
    dump = bool(DUMP_HEADER.search(body))  # a stack dump: frames only, the next record ends it
    unit = [Line(no=no, text=header_raw, body=body.strip(), rank=rank, timestamp=stamp, level=level, block=block,
                 frame=headless)]
    pos, cur, frames, trailing = end + 1, no, 0, 0
    scanned, after_file = 0, headless
    while pos < len(data) and scanned < 4000:
        nl = _line_end(data, pos)
        raw = _line(data, pos, nl)
        pos = nl + 1
        cur += 1
        scanned += 1
        b, r, s, lv = parse_prefix(raw)
        if r != rank and rank is not None and r is not None:
            continue  # another rank's line interleaved: skip it, keep reading ours
        if not b.strip():
            if trailing:
                break
            continue
        is_file = bool(_FILE_LINE.match(b))
        # Frames are indented, but pastes often lose the indent: a `File "…", line N, in f` line and
        # the source line under it are frames either way, unless that line is an unindented exception
        # (a frame with no source to show: an extension module, a file not on this machine).
        # A traceback quoted inside another record (Triton's python backend) is indented whole: there an
        # indented exception line that is not a frame's source line is the exception, not a frame.
        own_indent = b[:1] in (" ", "\t")
        source_line = after_file and (own_indent or not _EXC_LINE.match(b))
        quoted_exception = own_indent and not after_file and not is_file and bool(_EXC_LINE.match(b.lstrip()))
        indented = ((own_indent and not quoted_exception) or b.lstrip().startswith(("^", "~")) or is_file
                    or source_line)
        after_file = is_file
        if b.startswith(("During handling of the above exception", "The above exception was the direct cause")):
            unit.append(Line(no=cur, text=raw, body=b.strip(), rank=rank, timestamp=s, level=lv, block=block, frame=True))
            continue
        if b.startswith(_HEADER):
            unit.append(Line(no=cur, text=raw, body=b.strip(), rank=rank, timestamp=s, level=lv, block=block, frame=True))
            trailing = 0
            continue
        if indented and not trailing:
            frames += 1
            if frames <= MAX_TRACEBACK_LINES:
                unit.append(Line(no=cur, text=raw, body=b.strip(), rank=rank, timestamp=s, level=lv, block=block, frame=True))
            continue
        if dump or (trailing and (s is not None or lv is not None) and not _EXC_LINE.match(b)):
            break  # a new log record: the exception message (or the dump) is over
        unit.append(Line(no=cur, text=raw, body=b.strip(), rank=rank, timestamp=s, level=lv, block=block,
                         exception=not trailing))
        trailing += 1
        if trailing >= 4:
            break
    if len(unit) > MAX_TRACEBACK_LINES:
        unit = unit[:10] + unit[-(MAX_TRACEBACK_LINES - 10):]
    return unit


def _frames_above(data: bytes, no: int, start: int, rank: str | None, block: int) -> list[Line]:
    """The frames right above an exception line whose traceback header was cut off (oldest first)."""
    found: list[Line] = []
    end = start - 1
    cur = no
    pending: Line | None = None  # a source line waits for its `File` line above it
    while end > 0 and len(found) < MAX_TRACEBACK_LINES:
        begin = data.rfind(b"\n", 0, end) + 1
        raw = _line(data, begin, end)
        end, cur = begin - 1, cur - 1
        b, r, s, lv = parse_prefix(raw)
        if rank is not None and r is not None and r != rank:
            continue
        line = Line(no=cur, text=raw, body=b.strip(), rank=rank, timestamp=s, level=lv, block=block, frame=True)
        if _FILE_LINE.match(b):
            if pending is not None:
                found.append(pending)
            found.append(line)
            pending = None
            continue
        if pending is not None or not b.strip():
            break  # two non-frame lines in a row, or a gap: the traceback starts below
        pending = line
    return sorted(found, key=lambda l: l.no)


_ENGINE_MARKERS = {
    "sglang": ("sglang", "SGLang", "sgl_kernel", "sgl-kernel", "launch_server", "The server is fired up"),
    "vllm": ("vllm", "vLLM", "EngineCore", "VllmWorker", "AsyncLLMEngine"),
    "trtllm": ("tensorrt_llm", "TensorRT-LLM", "TRT-LLM", "trtllm"),
}
_VERSION_PATTERNS = (
    ("vllm", re.compile(r"vLLM(?: API server)? version:? v?(\d+\.\d+\.\d+[\w.+-]*)|vllm[=-]=?(\d+\.\d+\.\d+[\w.+]*)")),
    ("sglang", re.compile(r"sglang(?:==|-|\s+version:?\s*v?)(\d+\.\d+\.\d+(?:\.post\d+)?)"
                          r"|SGLang v(\d+\.\d+\.\d+(?:\.post\d+)?)")),
    ("tensorrt_llm", re.compile(r"TensorRT-LLM version:? v?(\d+\.\d+\.\d+[\w.]*)|tensorrt[_-]llm==(\d+\.\d+\.\d+[\w.]*)")),
    ("torch", re.compile(r"\btorch(?:==|\s+version:?\s*|\s+)(\d+\.\d+\.\d+(?:\+\w+)?)")),
    ("cuda", re.compile(r"CUDA Version:? (\d+\.\d+)|cuda(?:==|-| )(1\d\.\d)\b")),
    ("driver", re.compile(r"Driver Version:? (\d{3}\.\d+(?:\.\d+)?)")),
    ("flashinfer", re.compile(r"flashinfer(?:-python)?(?:==| )v?(\d+\.\d+\.\d+[\w.]*)")),
    ("transformers", re.compile(r"transformers(?:==| )v?(\d+\.\d+\.\d+)")),
)
_SCAN_WINDOW = 512 << 10  # engine and version markers sit near the start and the end


def _windows(log: str | bytes) -> Iterable[str]:
    parts = (log,) if len(log) <= 2 * _SCAN_WINDOW else (log[:_SCAN_WINDOW], log[-_SCAN_WINDOW:])
    return tuple(p.decode("utf-8", "replace") if isinstance(p, bytes) else p for p in parts)


def detect_engine(text: str | bytes) -> str | None:
    """The engine with the most markers in the log's head and tail (None when there is none)."""
    counts = {e: sum(w.count(m) for w in _windows(text) for m in markers) for e, markers in _ENGINE_MARKERS.items()}
    best = max(counts, key=lambda e: counts[e])
    return best if counts[best] else None


def detect_versions(text: str | bytes) -> dict[str, str]:
    found: dict[str, str] = {}
    for window in _windows(text):
        for name, pattern in _VERSION_PATTERNS:
            if name in found:
                continue
            m = pattern.search(window)
            if m:
                found[name] = next(g for g in m.groups() if g)
    return found
