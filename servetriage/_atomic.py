"""Replacing a file whole: a reader sees the old content or the new, never half of either."""

from __future__ import annotations

import os
from pathlib import Path


def replace_file(path: Path, data: bytes | str) -> None:
    """Write `data` beside `path` under a name of this process, then rename it over `path`; the
    temporary file is removed when the write fails."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        if isinstance(data, str):
            tmp.write_text(data, encoding="utf-8")
        else:
            tmp.write_bytes(data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
