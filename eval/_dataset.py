"""A labelled evaluation set: a directory with `labels.jsonl` and the log files it names."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from servetriage._errors import InputError


@dataclasses.dataclass(frozen=True)
class Case:
    id: str
    file: Path
    category: str
    surface: str | None = None
    engine: str | None = None
    source: str | None = None  # the public thread the log came from


def load_cases(directory: Path | str) -> list[Case]:
    directory = Path(directory)
    labels = directory / "labels.jsonl"
    if not labels.is_file():
        raise InputError(f"{directory}: no labels.jsonl (expected one JSON object per line: id, file, category)")
    cases: list[Case] = []
    with open(labels, encoding="utf-8") as fh:
        for n, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            try:
                row = json.loads(raw)
                case = Case(id=str(row["id"]), file=directory / row["file"], category=str(row["category"]),
                            surface=row.get("surface"), engine=row.get("engine"),
                            source=row.get("source"))
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise InputError(f"{labels}:{n}: malformed label line ({type(exc).__name__})") from None
            if not case.file.is_file():
                raise InputError(f"{labels}:{n}: log file {case.file.name} not found")
            cases.append(case)
    if not cases:
        raise InputError(f"{labels}: no cases")
    return cases
