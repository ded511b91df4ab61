"""Which Slack deliveries were already handled, kept in SQLite so a restart does not forget.

Slack redelivers an event when it saw no 200 in time (`X-Slack-Retry-Num`), and two events can
describe the same message (`message` and `app_mention`, `message` and `file_shared`). Every path
that could answer twice first `claim`s a key here; only the first claim wins, across threads,
processes and restarts, because `INSERT OR IGNORE` on a primary key is atomic in SQLite.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import sqlite_utils

FILE_NAME = "slack_events.sqlite"
TABLE = "slack_events"
KEEP_SECONDS = 7 * 24 * 3600  # Slack retries for minutes; a week is ample and keeps the file small
PRUNE_EVERY = 500


class EventLedger:
    """A set of handled keys with first-seen times; thread-safe, one connection behind a lock."""

    def __init__(self, path: Path, keep_seconds: float = KEEP_SECONDS) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._keep = keep_seconds
        self._lock = threading.Lock()
        self._claims = 0
        conn = sqlite3.connect(str(path), check_same_thread=False, timeout=10.0, isolation_level=None)
        self._db = sqlite_utils.Database(conn)
        self._db.enable_wal()
        self._db[TABLE].create({"key": str, "seen_at": float}, pk="key", if_not_exists=True)

    @classmethod
    def in_dir(cls, data_dir: Path) -> "EventLedger":
        return cls(Path(data_dir) / FILE_NAME)

    def claim(self, key: str) -> bool:
        """True the first time `key` is seen (the caller should act), False ever after."""
        now = time.time()
        with self._lock:
            cur = self._db.execute(f"INSERT OR IGNORE INTO {TABLE} (key, seen_at) VALUES (?, ?)", [key, now])
            fresh = cur.rowcount == 1
            self._claims += 1
            if self._claims % PRUNE_EVERY == 0:
                self._db.execute(f"DELETE FROM {TABLE} WHERE seen_at < ?", [now - self._keep])
        return fresh

    def seen(self, key: str) -> bool:
        with self._lock:
            return self._db.execute(f"SELECT 1 FROM {TABLE} WHERE key = ?", [key]).fetchone() is not None

    def close(self) -> None:
        with self._lock:
            self._db.conn.close()
