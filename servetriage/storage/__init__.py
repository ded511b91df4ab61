"""One storage seam for everything the bot and the feedback loop keep: SQLite or PostgreSQL.

    db = connect(settings)                 # SQLite (sqlite-utils) by default, PostgreSQL with a URL
    with db.transaction() as tx:           # one writer transaction, committed durably on exit
        tx.serialize("vote", diagnosis_id) # writers of the same key take turns (all of them on SQLite)
        tx.execute("UPDATE votes SET direction = ? WHERE id = ?", [1, vote_id])
    rows = db.query("SELECT * FROM votes")  # a read outside any transaction

SQL is written once, in the subset both engines speak: `?` placeholders, `ON CONFLICT … DO …`,
`INSERT … RETURNING`, double-quoted `"user"`. DDL differs only by the `Dialect`'s column types.
A replica-wide lock (`db.exclusive(name)`) is a PostgreSQL advisory lock, or a file lock beside
the SQLite database: one retrain at a time, whichever process starts it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ._base import Database, Dialect, StorageError, Transaction, is_postgres_url
from ._local import LocalPostgres
from ._pointer import ActivePointerRow
from ._sqlite import SqliteDatabase

if TYPE_CHECKING:
    from servetriage._settings import Settings


def connect(target: Settings | str | Path, *, sqlite_name: str | None = None) -> Database:
    """A database for `target`: a `postgresql://` URL, a SQLite file path, or the settings' choice.

    With settings, `SERVETRIAGE_DATABASE_URL` wins; otherwise the SQLite file `sqlite_name` (default:
    the feedback database) in the data directory."""
    from servetriage._settings import Settings  # noqa: PLC0415 (settings import nothing of ours)

    if isinstance(target, Settings):
        target = target.database_url or (target.data_dir / sqlite_name if sqlite_name else target.db_path)
    if isinstance(target, str) and is_postgres_url(target):
        from ._postgres import PostgresDatabase  # noqa: PLC0415 (psycopg loads only when used)
        return PostgresDatabase(target)
    return SqliteDatabase(Path(target))


__all__ = ["ActivePointerRow", "Database", "Dialect", "LocalPostgres", "SqliteDatabase", "StorageError", "Transaction",
           "connect", "is_postgres_url"]
