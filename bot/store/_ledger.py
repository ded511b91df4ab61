"""Which Slack deliveries were already handled, kept in the database so a restart does not forget.

Slack redelivers an event when it saw no 200 in time (`X-Slack-Retry-Num`), and two events can
describe the same message (`message` and `app_mention`, `message` and `file_shared`). Every path
that could answer twice first `claim`s a key here; only the first claim wins, across threads,
processes, restarts and replicas, because an `INSERT … ON CONFLICT DO NOTHING` on a primary key is
atomic in SQLite and in PostgreSQL alike (replicas share the PostgreSQL ledger).
"""

from __future__ import annotations

import threading
import time

from servetriage._settings import Settings
from servetriage.storage import Database, connect

FILE_NAME = "slack_events.sqlite"   # the SQLite file beside the feedback database
TABLE = "slack_events"
KEEP_SECONDS = 7 * 24 * 3600  # Slack retries for minutes; a week is ample and keeps the table small
PRUNE_EVERY = 500


class EventLedger:
    """A set of handled keys with first-seen times; thread-safe."""

    def __init__(self, db: Database, keep_seconds: float = KEEP_SECONDS) -> None:
        self.db = db
        self._keep = keep_seconds
        self._lock = threading.Lock()
        self._claims = 0
        with db.transaction() as tx:
            tx.serialize("ledger", "create")
            tx.execute(tx.dialect.ddl(f"CREATE TABLE IF NOT EXISTS {TABLE} (key TEXT PRIMARY KEY, seen_at {{real}} NOT NULL, "
                                      "owner TEXT)"))
            if tx.dialect.name == "sqlite" and "owner" not in {r[1] for r in tx.all(f"PRAGMA table_info({TABLE})")}:
                tx.execute(f"ALTER TABLE {TABLE} ADD COLUMN owner TEXT")  # a ledger written before owners

    @classmethod
    def for_settings(cls, settings: Settings) -> EventLedger:
        """The shared PostgreSQL ledger with `SERVETRIAGE_DATABASE_URL`, else its own SQLite file."""
        return cls(connect(settings, sqlite_name=FILE_NAME))

    def claim(self, key: str, owner: str | None = None) -> bool:
        """True the first time `key` is seen (the caller should act), False ever after; with an `owner`
        (a job's key), True again for that owner (a resumed job reclaims what it had claimed)."""
        now = time.time()
        with self.db.transaction() as tx:
            fresh = tx.execute(f"INSERT INTO {TABLE} (key, seen_at, owner) VALUES (?, ?, ?) ON CONFLICT (key) DO NOTHING",
                               [key, now, owner]) == 1
            if not fresh and owner is not None:
                fresh = tx.scalar(f"SELECT owner FROM {TABLE} WHERE key = ?", [key]) == owner
        with self._lock:
            self._claims += 1
            prune = self._claims % PRUNE_EVERY == 0
        if prune:
            with self.db.transaction() as tx:
                tx.execute(f"DELETE FROM {TABLE} WHERE seen_at < ?", [now - self._keep])
        return fresh

    def seen(self, key: str) -> bool:
        return bool(self.db.query(f"SELECT 1 AS one FROM {TABLE} WHERE key = ?", [key]))

    def close(self) -> None:
        self.db.close()
