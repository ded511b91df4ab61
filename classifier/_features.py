"""What the learned passes read from an `Extract`: the lines most likely to name the fault."""

from __future__ import annotations

import re

from ._embed import normalize_line
from ._extract import Extract
from ._types import Line

QUERY_LINES = 4
_FAULTY = re.compile(r"Error|Exception|error|ERROR|FATAL|CRITICAL|[Ff]ailed|[Ff]ailure|[Kk]illed|[Aa]ssert|"
                     r"out of memory|[Tt]imed? ?out|not supported|[Uu]nable|[Cc]annot|died|dead|NCCL|CUDA|Xid|SIG[A-Z]+")
_NOISE = re.compile(r"^(?:INFO|DEBUG)\b|^\d+ it/s|^\s*$")


def query_lines(ex: Extract, k: int = QUERY_LINES) -> list[str]:
    """Up to `k` distinct normalised lines: exception lines first, then error-level lines, then others."""
    ranked: list[tuple[int, int, str]] = []
    for pos, line in enumerate(ex.lines):
        if line.frame or not line.body:
            continue
        if line.exception:
            tier = 0
        elif line.level in ("ERROR", "FATAL", "CRITICAL") or _FAULTY.search(line.body):
            tier = 1
        elif line.level == "WARNING":
            tier = 2
        else:
            tier = 3
        ranked.append((tier, pos, line.body))
    ranked.sort()
    out: list[str] = []
    seen: set[str] = set()
    for _, _, body in ranked:
        norm = normalize_line(body)
        if len(norm) < 8 or norm in seen:
            continue
        seen.add(norm)
        out.append(norm)
        if len(out) >= k:
            break
    return out


def first_fault_line(ex: Extract) -> Line | None:
    """The first exception or error-level record: where the log itself says something failed."""
    return next((l for l in ex.lines if l.exception or l.level in ("ERROR", "FATAL", "CRITICAL")), None)


def has_fault(ex: Extract) -> bool:
    """Whether any line reports something wrong: an exception, an error level, or a fault word."""
    return any(line.exception or line.level in ("ERROR", "FATAL", "CRITICAL")
               or (not line.frame and _FAULTY.search(line.body)) for line in ex.lines)


def fault_lines(ex: Extract) -> list[Line]:
    """The lines that report something wrong (an exception, an error level, a fault word), frames left
    out: a paste's evidence, without the healthy lines around it."""
    return [line for line in ex.lines if not line.frame and (
        line.exception or line.level in ("ERROR", "FATAL", "CRITICAL") or _FAULTY.search(line.body))]


def document(ex: Extract, limit: int = 60) -> str:
    """The classifier's input: normalised salient lines, frames' file names kept as cues."""
    parts: list[str] = []
    for line in ex.lines[:limit * 2]:
        if line.frame:
            m = re.search(r'File "[^"]*?([\w]+)\.py"', line.body)
            if m:
                parts.append(f"frame_{m.group(1)}")
            continue
        parts.append(normalize_line(line.body))
        if len(parts) >= limit:
            break
    return "\n".join(parts)
