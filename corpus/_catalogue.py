"""The message catalogue on disk: `corpus/catalogue/<engine>.jsonl.gz`, one mined template per line.

Mined by `servetriage corpus mine` (`_mine.py`) from the engines' sources; each entry keeps its engine,
the versions it was seen in, its source file and function, and its level. `corpus check` validates it.
"""

from __future__ import annotations

import collections
import functools
import hashlib
from pathlib import Path

import re2

from servetriage._re2 import QUIET

from ._load import builtin_dir
from ._mine import Template, merge, read_catalogue, render, write_catalogue


def catalogue_dir() -> Path:
    return builtin_dir() / "catalogue"


@functools.lru_cache(maxsize=4)
def load_catalogue(directory: Path | None = None) -> tuple[Template, ...]:
    """Every template of every engine file, in file order (cached: the files are data, not state)."""
    root = directory or catalogue_dir()
    if not root.is_dir():
        return ()
    out: list[Template] = []
    for path in sorted(root.glob("*.jsonl.gz")):
        out.extend(read_catalogue(path))
    return tuple(out)


def catalogue_counts(templates: tuple[Template, ...]) -> dict[str, int]:
    return dict(sorted(collections.Counter(t.engine for t in templates).items()))


def check_catalogue(templates: tuple[Template, ...]) -> list[str]:
    """Every regex compiles under RE2 and matches its own template rendered with values."""
    problems = []
    for t in templates:
        try:
            rx = re2.compile(t.regex, QUIET)
        except re2.error:
            problems.append(f"catalogue {t.engine} {t.file}: regex does not compile under RE2: {t.regex[:80]!r}")
            continue
        if rx.search(render(t.template)) is None:
            problems.append(f"catalogue {t.engine} {t.file}: regex does not match its own template {t.template[:80]!r}")
    return problems


def add_to_catalogue(mined: list[Template], engine: str, directory: Path | None = None) -> tuple[Path, int, int]:
    """Merge newly mined templates into the engine's file; returns (path, templates before, after)."""
    root = directory or catalogue_dir()
    root.mkdir(parents=True, exist_ok=True)
    path = root / f"{engine}.jsonl.gz"
    old = read_catalogue(path) if path.is_file() else []
    merged = merge([old, mined])
    write_catalogue(merged, path)
    load_catalogue.cache_clear()
    catalogue_digest.cache_clear()
    return path, len(old), len(merged)


@functools.lru_cache(maxsize=4)
def catalogue_digest(directory: Path | None = None) -> str:
    """A hash of the catalogue files: part of the corpus fingerprint (the calibration reads through it)."""
    h = hashlib.sha256()
    root = directory or catalogue_dir()
    for path in sorted(root.glob("*.jsonl.gz")) if root.is_dir() else ():
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]
