"""The training set feedback contributes: the derived examples, the quarantine, the generation."""

from __future__ import annotations

import dataclasses
import json
from typing import Any
from collections.abc import Callable, Collection

from servetriage.storage import Database

from ._derive import Derivation


@dataclasses.dataclass(frozen=True)
class FeedbackExample:
    """A training example from feedback, with the votes and corrections behind it."""

    id: int
    diagnosis_id: str
    text: str
    text_hash: str
    category: str
    incident: str | None
    kind: str
    holdout: bool
    vote_ids: tuple[int, ...]
    correction_ids: tuple[int, ...]


class TrainingSet:
    def __init__(self, db: Database, clock: Callable[[], float]) -> None:
        self._db = db
        self._clock = clock

    def examples(self) -> list[FeedbackExample]:
        rows = self._db.query("SELECT e.*, d.excerpt, d.excerpt_hash FROM examples e JOIN diagnoses d "
                              "ON d.id = e.diagnosis_id ORDER BY e.id")
        return [FeedbackExample(r["id"], r["diagnosis_id"], r["excerpt"], r["excerpt_hash"], r["category"],
                                r["incident"], r["kind"], bool(r["holdout"]), tuple(json.loads(r["vote_ids"])),
                                tuple(json.loads(r["correction_ids"]))) for r in rows]

    def generation(self) -> int:
        """Bumped by every change to what trains; the retrainer and the memory watch it."""
        rows = self._db.query("SELECT value FROM meta WHERE key = 'generation'")
        return int(rows[0]["value"]) if rows else 0

    # -- quarantine: examples the gate would not let the learned passes train on -------------------
    def quarantine(self, keys: Collection[tuple[str, str]], version: str | None, reason: str) -> None:
        now = self._clock()
        with self._db.transaction() as tx:
            for text_hash, category in keys:
                tx.execute("INSERT INTO quarantine (text_hash, category, version, reason, created) VALUES (?, ?, ?, ?, ?) "
                           "ON CONFLICT (text_hash, category) DO NOTHING", [text_hash, category, version, reason, now])

    def quarantined(self) -> dict[tuple[str, str], dict[str, Any]]:
        return {(r["text_hash"], r["category"]): r for r in self._db.query("SELECT * FROM quarantine ORDER BY created")}

    def release(self, keys: Collection[tuple[str, str]] | None = None) -> int:
        """Let quarantined examples train again (all of them when `keys` is None)."""
        with self._db.transaction() as tx:
            if keys is None:
                n = tx.execute("DELETE FROM quarantine")
            else:
                n = sum(tx.execute("DELETE FROM quarantine WHERE text_hash = ? AND category = ?", list(k)) for k in keys)
            if n:
                Derivation.bump(tx)
        return n
