"""The embedded backend: one SQLite file through sqlite-utils, WAL, `synchronous=FULL`.

One connection behind a lock serves the threads of a process; other processes (the CLI while the
bot runs, a second bot on the same host) are serialised by SQLite's own locking, so every writer
transaction is `BEGIN IMMEDIATE` and `serialize` has nothing left to do.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlite_utils

from ._base import SQLITE, Database, Params, StorageError, Transaction

BUSY_TIMEOUT_MS = 30_000
OPEN_RETRY_FIRST_S = 0.02  # then doubling, up to
OPEN_RETRY_MAX_S = 0.5


class _SqliteTx(Transaction):
    dialect = SQLITE

    def __init__(self, db: sqlite_utils.Database) -> None:
        self._db = db

    def execute(self, sql: str, params: Params = ()) -> int:
        return int(self._db.execute(sql, list(params)).rowcount)

    def all(self, sql: str, params: Params = ()) -> list[tuple[Any, ...]]:
        return [tuple(r) for r in self._db.execute(sql, list(params)).fetchall()]

    def rows(self, sql: str, params: Params = ()) -> list[dict[str, Any]]:
        return list(self._db.query(sql, list(params)))

    def serialize(self, kind: str, key: str) -> None:
        """`BEGIN IMMEDIATE` already made this the only writer."""


class SqliteDatabase(Database):
    dialect = SQLITE

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.description = str(self.path)
        deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
        pause = OPEN_RETRY_FIRST_S
        while True:
            try:
                self.db = self._open()
                break
            except sqlite3.OperationalError as exc:
                # Two processes opening a new file at once: switching it to WAL needs a lock SQLite
                # does not wait for (its busy handler is not called there), so the open is retried.
                if "locked" not in str(exc) or time.monotonic() + pause > deadline:
                    raise StorageError(f"{self.path}: cannot open the database ({exc})") from None
                time.sleep(pause)
                pause = min(pause * 2, OPEN_RETRY_MAX_S)
            except (OSError, sqlite3.Error) as exc:
                raise StorageError(f"{self.path}: cannot open the database ({exc})") from None
        self._lock = threading.RLock()
        self._tx = _SqliteTx(self.db)

    def _open(self) -> sqlite_utils.Database:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(str(self.path), check_same_thread=False, timeout=BUSY_TIMEOUT_MS / 1000,
                               isolation_level=None)
        try:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            db = sqlite_utils.Database(conn)
            db.enable_wal()
            conn.execute("PRAGMA synchronous = FULL")
            conn.execute("PRAGMA foreign_keys = ON")
        except BaseException:
            conn.close()
            raise
        return db

    @property
    def connection(self) -> sqlite3.Connection:
        """The raw connection (the online backup reads through it), used under `locked()`."""
        return self.db.conn

    @contextmanager
    def locked(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            yield self.db.conn

    @contextmanager
    def transaction(self) -> Iterator[Transaction]:
        with self._lock:
            self.db.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._tx
            except BaseException:
                if self.db.conn.in_transaction:
                    self.db.conn.execute("ROLLBACK")
                raise
            else:
                self.db.conn.execute("COMMIT")

    def query(self, sql: str, params: Params = ()) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.db.query(sql, list(params)))

    @contextmanager
    def exclusive(self, name: str) -> Iterator[None]:
        lock_path = self.path.with_name(f".{self.path.name}.{name}.lock")
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def reopen(self) -> SqliteDatabase:
        return SqliteDatabase(self.path)

    def tables(self) -> set[str]:
        with self._lock:
            return set(self.db.table_names())

    def close(self) -> None:
        with self._lock:
            self.db.conn.close()
