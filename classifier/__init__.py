"""The diagnosis engine: ingest → extract → rules / retrieve / classify → fuse → `Diagnosis`.

Knows nothing of Slack. Everything a front end needs is exported here; the modules behind it are private.
"""

from ._diagnosis import UNKNOWN, Candidate, Diagnosis, EvidenceLine, IncidentRef, Initiating, Symptom
from ._engine import Engine
from ._extract import Extract, detect_engine, detect_versions, extract, parse_prefix
from ._artefacts import ArtefactStore, Meta
from ._learned import embedder_for, engine_for_model, ensure_model, load_model, train_command
from ._train import Model, TrainingExample, retrain, train
from ._ingest import LogText, decode, from_bytes, from_stream, from_text, normalize, read_inputs, read_path
from ._redact import redact
from ._render import render_text
from ._rules import Scanner
from ._types import Hit, Line

__all__ = [
    "ArtefactStore", "Meta", "Model", "TrainingExample", "embedder_for", "engine_for_model", "ensure_model",
    "load_model", "retrain", "train",
    "Candidate", "Diagnosis", "Engine", "EvidenceLine", "Extract", "Hit", "IncidentRef", "Initiating", "Line",
    "LogText", "Scanner", "Symptom", "UNKNOWN", "decode", "detect_engine", "detect_versions", "extract",
    "from_bytes", "from_stream", "from_text", "normalize", "parse_prefix", "read_inputs", "read_path", "redact",
    "render_text", "train_command",
]
