"""The active model version as a row of the shared database, for replicas that share artefacts.

Every replica reads the model directory from shared storage; which version answers is one row
here, so a promotion by one replica (or `servetriage model rollback`) is seen by all at their next
check. One connection per database URL per process: the check runs every few seconds.
"""

from __future__ import annotations

import threading
import time

from ._base import Database

TABLE = "model_pointer"
NAME = "active"


class ActivePointerRow:
    """An `ActivePointer` (classifier's protocol): `read()` and `write(version)`."""

    _shared: dict[str, ActivePointerRow] = {}
    _shared_lock = threading.Lock()

    def __init__(self, db: Database) -> None:
        self.db = db
        with db.transaction() as tx:
            tx.serialize("pointer", "create")
            tx.execute(tx.dialect.ddl(f"CREATE TABLE IF NOT EXISTS {TABLE} (name TEXT PRIMARY KEY, version TEXT NOT NULL, "
                                      "updated {real} NOT NULL)"))

    @classmethod
    def shared(cls, url: str) -> ActivePointerRow:
        from . import connect  # noqa: PLC0415 (the package's factory; this module is part of it)

        with cls._shared_lock:
            pointer = cls._shared.get(url)
            if pointer is None:
                pointer = cls._shared[url] = cls(connect(url))
            return pointer

    def read(self) -> str | None:
        rows = self.db.query(f"SELECT version FROM {TABLE} WHERE name = ?", [NAME])
        return str(rows[0]["version"]) if rows else None

    def write(self, version: str) -> None:
        with self.db.transaction() as tx:
            tx.execute(f"INSERT INTO {TABLE} (name, version, updated) VALUES (?, ?, ?) ON CONFLICT (name) DO UPDATE SET "
                       "version = excluded.version, updated = excluded.updated", [NAME, version, time.time()])
