"""The diagnosis engine: ingest → extract → rules / retrieve / classify → fuse → `Diagnosis`.

Knows nothing of Slack. Everything a front end needs is exported here; the modules behind it are
private. The learned parts (torch, scikit-learn, faiss) are imported on first use of a name that
needs them, so `import servetriage` and the rule pass stay fast.
"""

from __future__ import annotations

import importlib
from typing import Any

from ._diagnosis import UNKNOWN, Candidate, Diagnosis, Earlier, EvidenceLine, IncidentRef, Initiating, OtherRun, Symptom
from ._engine import Engine
from ._extract import Extract, detect_engine, detect_versions, extract, parse_prefix
from ._ingest import LogText, decode, from_bytes, from_stream, from_text, normalize, read_inputs, read_path
from ._redact import redact
from ._render import on_call_lines, paste_notes, render_text
from ._rules import Scanner
from ._together import Merged, merge, placed, split_members
from ._types import Hit, Line

_LAZY = {
    "ArtefactStore": "._artefacts", "Meta": "._artefacts",
    "embedder_for": "._learned", "embedder_path": "._learned", "normalize_line": "._embed", "engine_for_model": "._learned", "ensure_model": "._learned",
    "load_model": "._learned", "train_command": "._learned",
    "Model": "._train", "TrainingExample": "._train", "retrain": "._train", "train": "._train",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "ArtefactStore", "Candidate", "Diagnosis", "Earlier", "Engine", "EvidenceLine", "Extract", "Hit", "IncidentRef",
    "Initiating", "Line", "LogText", "Merged", "Meta", "Model", "OtherRun", "Scanner", "Symptom", "TrainingExample", "UNKNOWN", "decode",
    "detect_engine", "detect_versions", "embedder_for", "embedder_path", "normalize_line", "engine_for_model", "ensure_model", "extract", "from_bytes",
    "from_stream", "from_text", "load_model", "merge", "normalize", "on_call_lines", "placed", "parse_prefix", "paste_notes", "read_inputs", "read_path", "redact", "split_members",
    "render_text", "retrain", "train", "train_command",
]
