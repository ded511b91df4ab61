"""The diagnosis engine: ingest → extract → rules / retrieve / classify → fuse → `Diagnosis`.

Knows nothing of Slack. Everything a front end needs is exported here; the modules behind it are
private. The learned parts (torch, scikit-learn, faiss) are imported on first use of a name that
needs them, so `import servetriage` and the rule pass stay fast.
"""

from __future__ import annotations

import importlib
from typing import Any

from ._diagnosis import (UNKNOWN, Candidate, Diagnosis, Earlier, EvidenceLine, IncidentRef, Initiating, OtherRun,
                         PassVotes, SeenBefore, Symptom)
from ._embed import Embedder
from ._engine import Engine, LearnedPass
from ._extract import Extract, detect_engine, detect_versions, extract, parse_prefix
from ._features import fault_lines
from ._ingest import LogText, decode, from_bytes, from_stream, from_text, normalize, read_inputs, read_path
from ._redact import redact
from ._render import on_call_lines, paste_notes, render_text
from ._rules import Scanner
from ._together import Merged, merge, placed, split_members
from ._types import Hit, Line

_LAZY = {
    "ArtefactStore": "._artefacts", "Meta": "._artefacts", "ModelStatus": "._artefacts", "MODEL_FORMAT": "._artefacts",
    "artefacts_for": "._artefacts",
    "Calibrator": "._fuse", "Fusion": "._fuse", "PassScores": "._fuse",
    "embedder_for": "._learned", "embedder_path": "._learned", "normalize_line": "._embed", "engine_for_model": "._learned",
    "ensure_model": "._learned", "load_model": "._learned", "train_command": "._learned",
    "Model": "._train", "TrainingExample": "._train", "retrain": "._train", "train": "._train",
    "warm_retrain": "._train", "embedder_at": "._learned", "embedder_named": "._learned",
    "FineTuneResult": "._finetune", "fine_tune": "._finetune", "activate_embedder": "._finetune",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "activate_embedder", "artefacts_for", "ArtefactStore", "Calibrator", "Candidate", "decode", "detect_engine",
    "detect_versions", "Diagnosis", "Earlier", "Embedder", "embedder_at", "embedder_for", "embedder_named",
    "embedder_path", "Engine", "engine_for_model", "ensure_model", "EvidenceLine", "extract", "Extract",
    "fault_lines", "fine_tune", "FineTuneResult", "from_bytes", "from_stream", "from_text", "Fusion", "Hit",
    "IncidentRef", "Initiating", "LearnedPass", "Line", "load_model", "LogText", "merge", "Merged", "Meta",
    "Model", "MODEL_FORMAT", "ModelStatus", "normalize", "normalize_line", "on_call_lines", "OtherRun",
    "parse_prefix", "PassScores", "PassVotes", "paste_notes", "placed", "read_inputs", "read_path", "redact",
    "render_text", "retrain", "Scanner", "SeenBefore", "split_members", "Symptom", "train", "train_command",
    "TrainingExample", "UNKNOWN", "warm_retrain",
]
