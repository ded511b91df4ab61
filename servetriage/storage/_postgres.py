"""The shared backend for replicas: PostgreSQL through psycopg 3.

One connection per process behind a lock (a bot replica's writes are short; Slack's own rate limits
bound them far below what one connection carries). Writers of the same key serialise on a
transaction-scoped advisory lock; `exclusive` is a session-scoped advisory lock on a connection of
its own, so one replica retrains while the others keep serving. A connection that dropped between
transactions is opened again once before a statement fails.
"""

from __future__ import annotations

import re
import threading
import zlib
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import psycopg

from ._base import POSTGRES, Database, Params, StorageError, Transaction

CONNECT_TIMEOUT_S = 10
_PASSWORD = re.compile(r"(://[^:/@]+:)[^@]*@")


def _sql(sql: str) -> str:
    """Our `?` placeholders as psycopg's `%s` (a literal `%` doubled first)."""
    return sql.replace("%", "%%").replace("?", "%s")


def lock_key(kind: str, key: str = "") -> int:
    """A stable signed 64-bit advisory-lock key for a name."""
    high = zlib.crc32(kind.encode())
    low = zlib.crc32(key.encode())
    value = (high << 32) | low
    return value - (1 << 64) if value >= 1 << 63 else value


class _PostgresTx(Transaction):
    dialect = POSTGRES

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._conn = conn

    def execute(self, sql: str, params: Params = ()) -> int:
        with self._conn.cursor() as cur:
            cur.execute(_sql(sql), list(params))  # our SQL text, not a literal (mypy reads LiteralString as str)
            return int(cur.rowcount)

    def all(self, sql: str, params: Params = ()) -> list[tuple[Any, ...]]:
        with self._conn.cursor() as cur:
            cur.execute(_sql(sql), list(params))
            return [tuple(r) for r in cur.fetchall()] if cur.description else []

    def rows(self, sql: str, params: Params = ()) -> list[dict[str, Any]]:
        with self._conn.cursor() as cur:
            cur.execute(_sql(sql), list(params))
            if not cur.description:
                return []
            names = [c.name for c in cur.description]
            return [dict(zip(names, r)) for r in cur.fetchall()]

    def serialize(self, kind: str, key: str) -> None:
        self.execute("SELECT pg_advisory_xact_lock(?)", [lock_key(kind, key)])


class PostgresDatabase(Database):
    dialect = POSTGRES

    def __init__(self, url: str) -> None:
        self.url = url
        self.description = _PASSWORD.sub(r"\1***@", url)
        self._lock = threading.RLock()
        self._conn = self._open()

    def _open(self) -> psycopg.Connection[Any]:
        try:
            return psycopg.connect(self.url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S)
        except psycopg.Error as exc:
            raise StorageError(f"{self.description}: cannot connect ({_one_line(exc)})") from None

    def _live(self) -> psycopg.Connection[Any]:
        if self._conn.closed or self._conn.broken:
            self._conn = self._open()
        return self._conn

    @contextmanager
    def transaction(self) -> Iterator[Transaction]:
        with self._lock:
            conn, tx = self._begin()
            try:
                with tx:
                    yield _PostgresTx(conn)
            except psycopg.Error as exc:
                raise StorageError(f"{self.description}: {_one_line(exc)}") from exc

    def _begin(self) -> tuple[psycopg.Connection[Any], _Started]:
        """A started transaction; a connection found dead at `BEGIN` (nothing sent yet) is replaced once."""
        for attempt in (1, 2):
            conn = self._live()
            tx = conn.transaction()
            try:
                tx.__enter__()
            except psycopg.OperationalError as exc:
                if attempt == 2 or not conn.broken:
                    raise StorageError(f"{self.description}: {_one_line(exc)}") from exc
                continue
            return conn, _Started(tx)
        raise AssertionError("unreachable")

    def query(self, sql: str, params: Params = ()) -> list[dict[str, Any]]:
        with self._lock:
            for attempt in (1, 2):
                conn = self._live()
                try:
                    return _PostgresTx(conn).rows(sql, params)
                except psycopg.OperationalError as exc:
                    if attempt == 2 or not conn.broken:
                        raise StorageError(f"{self.description}: {_one_line(exc)}") from exc
                except psycopg.Error as exc:
                    raise StorageError(f"{self.description}: {_one_line(exc)}") from exc
        raise AssertionError("unreachable")

    @contextmanager
    def exclusive(self, name: str) -> Iterator[None]:
        conn = self._open()  # its own session: the lock lives as long as this block, not a transaction
        try:
            conn.execute("SELECT pg_advisory_lock(%s)", [lock_key("exclusive", name)])
            yield
            conn.execute("SELECT pg_advisory_unlock(%s)", [lock_key("exclusive", name)])
        finally:
            conn.close()

    def reopen(self) -> PostgresDatabase:
        return PostgresDatabase(self.url)

    def tables(self) -> set[str]:
        return {r["table_name"] for r in self.query(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()")}

    def close(self) -> None:
        with self._lock:
            self._conn.close()


class _Started:
    """A psycopg transaction already entered: leaving the `with` commits or rolls back as usual."""

    def __init__(self, tx: AbstractContextManager[psycopg.Transaction]) -> None:
        self._tx = tx

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        self._tx.__exit__(*exc)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
