"""RE2 as the project uses it: patterns that come from data, matched in linear time whatever the line.

The binding logs every pattern it refuses to stderr as well as raising; a refused pattern is reported
by the caller (a corpus check, a one-line error), so the options here keep it quiet.
"""

from __future__ import annotations

import functools
from typing import Any

import re2


def quiet_options(max_mem: int | None = None) -> Any:  # re2.Options (the binding is untyped)
    """Options that raise on a refused pattern without logging it; `max_mem` for large alternations."""
    options = re2.Options()
    options.log_errors = False
    if max_mem is not None:
        options.max_mem = max_mem
    return options


QUIET = quiet_options()


@functools.lru_cache(maxsize=256)
def compiled(pattern: str) -> Any:  # re2._Regexp
    """A data pattern compiled once per process."""
    return re2.compile(pattern, QUIET)
