"""Is this message a failure log or conversation? Only logs get an unasked-for reply.

A reply nobody asked for is noise unless the message really is a log: a code block with a failure
signal (or several log-shaped lines), or several plain lines of which at least one carries a
strong signal and another looks like log output. A one-line question that quotes an error stays
conversation; the user can still ask explicitly (mention, `/diagnose`, the shortcut).
"""

from __future__ import annotations

import dataclasses
import re

_STRONG = re.compile(
    r"Traceback \(most recent call last\)"
    r"|\b[A-Za-z_][\w.]*(?:Error|Exception|Interrupt)\b:"
    r"|\bCUDA error\b|\bout of memory\b|\bOOM\b|\bNCCL (?:WARN|ERROR|error)\b"
    r"|\b(?:ERROR|FATAL|CRITICAL|PANIC)\b|\bF\d{4} |(?:^|\[)E\d{4} \d{2}:\d{2}:\d{2}"  # glog's F and E lines
    r"|Watchdog caught collective operation timeout"
    r"|Segmentation fault|core dumped|\bSIG(?:SEGV|ABRT|KILL|BUS)\b|\bKilled\b"
    r"|terminate called after throwing|Assertion .* failed|\bAssertionError\b"
    r"|exit(?:ed)? (?:with )?(?:exit )?(?:code|status) -?[1-9]"
)
_WEAK = re.compile(
    r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}|\b\d{2}-\d{2} \d{2}:\d{2}:\d{2}\b|\[\d{2}:\d{2}:\d{2}"
    r"|\b(?:INFO|WARNING|WARN|DEBUG|TRACE)\b|^\s+File \"[^\"]+\", line \d+|^\s+at \S+\("
    r"|\(pid=\d+\)|\brank ?\d+\b|\bTP\d+\b|^\s*\[[\w.:-]+\]"
)
_FENCE = "```"


@dataclasses.dataclass(frozen=True)
class LogSignals:
    lines: int
    strong: int
    weak: int
    fenced: bool

    @property
    def is_log(self) -> bool:
        if self.fenced:
            return self.strong >= 1 or self.weak >= 3
        return self.lines >= 2 and self.strong >= 1 and (self.strong >= 2 or self.weak >= 1)


def signals(text: str) -> LogSignals:
    """Count signal lines in (already unformatted) message text; only the first 400 lines are read."""
    rows = [r for r in text.splitlines()[:400] if r.strip() and r.strip() != _FENCE]
    strong = sum(1 for r in rows if _STRONG.search(r))
    weak = sum(1 for r in rows if _WEAK.search(r))
    return LogSignals(lines=len(rows), strong=strong, weak=weak, fenced=_FENCE in text)


def looks_like_log(text: str) -> bool:
    return bool(text.strip()) and signals(text).is_log
