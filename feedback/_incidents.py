"""Incidents on-call wrote through the bot: the corpus overlay until they are exported and reviewed."""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any
from collections.abc import Callable, Collection

from servetriage.storage import Database, Transaction

from ._errors import NotFound

SLUG_CHARS = 48


@dataclasses.dataclass(frozen=True)
class NewIncident:
    id: str
    category: str
    title: str
    cause: str
    first_action: str
    engines: tuple[str, ...]
    created: float
    created_by: str | None
    diagnosis_id: str | None


class Incidents:
    def __init__(self, db: Database, clock: Callable[[], float]) -> None:
        self._db = db
        self._clock = clock

    def get(self, incident_id: str) -> NewIncident:
        rows = self._db.query("SELECT * FROM incidents WHERE id = ?", [incident_id])
        if not rows:
            raise NotFound(f"no incident {incident_id!r}")
        return _row(rows[0])

    def all(self) -> list[NewIncident]:
        return [_row(r) for r in self._db.query("SELECT * FROM incidents ORDER BY created, id")]

    def mark_exported(self, ids: Collection[str]) -> None:
        with self._db.transaction() as tx:
            for i in ids:
                tx.execute("UPDATE incidents SET exported = ? WHERE id = ?", [self._clock(), i])

    @staticmethod
    def new_id(tx: Transaction, title: str) -> str:
        """A readable, unique id from the title: `fb-<slug>`, `fb-<slug>-2`, …"""
        slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:SLUG_CHARS].rstrip("-")
        base = "fb-" + (slug or "incident")
        candidate, n = base, 2
        while tx.one("SELECT 1 FROM incidents WHERE id = ?", [candidate]):
            candidate, n = f"{base}-{n}", n + 1
        return candidate


def _row(r: dict[str, Any]) -> NewIncident:
    return NewIncident(r["id"], r["category"], r["title"], r["cause"], r["first_action"],
                       tuple(json.loads(r["engines"] or "[]")), r["created"], r["created_by"], r["diagnosis_id"])
