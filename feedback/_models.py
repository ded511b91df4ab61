"""The model versions the feedback loop trained, with their states and gate results."""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Callable

from servetriage.storage import Database

from ._errors import FeedbackError, NotFound

MODEL_STATES = ("candidate", "active", "rejected", "retired")


@dataclasses.dataclass(frozen=True)
class ModelRow:
    version: str
    parent: str | None
    state: str
    created: float
    activated: float | None
    training_hash: str | None
    examples: int | None
    feedback_examples: int | None
    metrics: dict[str, Any]
    gate: dict[str, Any]
    note: str | None


class ModelLedger:
    def __init__(self, db: Database, clock: Callable[[], float]) -> None:
        self._db = db
        self._clock = clock

    def all(self) -> list[ModelRow]:
        return [_row(r) for r in self._db.query("SELECT * FROM model_versions ORDER BY created, version")]

    def get(self, version: str) -> ModelRow | None:
        rows = self._db.query("SELECT * FROM model_versions WHERE version = ?", [version])
        return _row(rows[0]) if rows else None

    def put(self, version: str, *, state: str, parent: str | None, created: float, training_hash: str | None,
            examples: int | None, feedback_examples: int | None, metrics: dict[str, Any] | None = None,
            gate: dict[str, Any] | None = None, note: str | None = None) -> None:
        if state not in MODEL_STATES:
            raise FeedbackError(f"unknown model state {state!r}")
        with self._db.transaction() as tx:
            tx.execute("INSERT INTO model_versions (version, parent, state, created, activated, training_hash, examples, "
                       "feedback_examples, metrics, gate, note) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                       "ON CONFLICT (version) DO UPDATE SET state = excluded.state, gate = excluded.gate, "
                       "note = COALESCE(excluded.note, model_versions.note), "
                       "training_hash = COALESCE(excluded.training_hash, model_versions.training_hash)",
                       [version, parent, state, created, self._clock() if state == "active" else None, training_hash,
                        examples, feedback_examples, json.dumps(metrics or {}), json.dumps(gate or {}), note])

    def set_state(self, version: str, state: str, note: str | None = None, gate: dict[str, Any] | None = None) -> None:
        if state not in MODEL_STATES:
            raise FeedbackError(f"unknown model state {state!r}")
        with self._db.transaction() as tx:
            tx.serialize("models", "state")
            if state == "active":
                tx.execute("UPDATE model_versions SET state = 'retired' WHERE state = 'active' AND version != ?", [version])
            sets, params = ["state = ?"], [state]
            if state == "active":
                sets.append("activated = ?")
                params.append(self._clock())
            if note is not None:
                sets.append("note = ?")
                params.append(note)
            if gate is not None:
                sets.append("gate = ?")
                params.append(json.dumps(gate))
            if tx.execute(f"UPDATE model_versions SET {', '.join(sets)} WHERE version = ?", [*params, version]) == 0:
                raise NotFound(f"no model version {version!r} in the database")


def _row(r: dict[str, Any]) -> ModelRow:
    return ModelRow(r["version"], r["parent"], r["state"], r["created"], r["activated"], r["training_hash"],
                    r["examples"], r["feedback_examples"], json.loads(r["metrics"] or "{}"), json.loads(r["gate"] or "{}"),
                    r["note"])
