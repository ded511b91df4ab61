"""Values that flow between the passes: a salient `Line` and a rule `Hit`."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Line:
    """One line of the input, its engine prefix parsed off into `rank`, `timestamp` and `level`."""

    no: int                  # 1-based line number in the input
    text: str                # the line as it was (not yet redacted)
    body: str                # the line without its engine prefixes
    rank: str | None = None  # "TP0", "DP1 TP3", "rank 3", "EngineCore_0"
    timestamp: str | None = None  # sortable, month first: "03-04 10:11:12.123"
    level: str | None = None
    block: int = 0           # lines of one traceback share a block
    frame: bool = False      # a traceback frame or source line, not a message
    exception: bool = False  # the final exception line of a traceback


@dataclasses.dataclass(frozen=True)
class Hit:
    """A corpus signature found on a line."""

    incident: str
    category: str
    pattern: str
    specificity: float
    line: Line
    symptom: bool  # the category has `role: symptom`
