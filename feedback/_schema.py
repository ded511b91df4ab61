"""The feedback database's schema, as an ordered list of migrations.

Each migration runs once, inside one `BEGIN IMMEDIATE` transaction together with the row that
records it in `schema_migrations`, so a crash or an error leaves the database at the previous
version, never half-migrated. A database written by a newer servetriage (a version this build does
not know) is refused rather than guessed at. Migrations only ever add: no stored feedback is dropped.
"""

from __future__ import annotations

import time
from typing import Callable

import sqlite_utils

from ._errors import SchemaError

Migration = tuple[int, str, Callable[[sqlite_utils.Database], None]]


def _m1_core(db: sqlite_utils.Database) -> None:
    """Diagnoses the bot answered, the votes on them (one per user, changeable) and their history."""
    db["diagnoses"].create({
        "id": str, "created": float, "team": str, "channel": str, "thread_ts": str, "message_ts": str,
        "user": str, "source": str, "excerpt": str, "excerpt_hash": str, "category": str, "confidence": float,
        "incident": str, "alternatives": str, "model_version": str, "timings": str, "diagnosis": str,
    }, pk="id", not_null={"created", "channel", "excerpt", "excerpt_hash", "category"})
    db["diagnoses"].create_index(["channel", "message_ts"])
    db.execute("""CREATE TABLE votes (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        diagnosis_id TEXT NOT NULL REFERENCES diagnoses(id),
        user TEXT NOT NULL,
        direction INTEGER NOT NULL CHECK (direction IN (-1, 1)),
        source TEXT NOT NULL,
        created REAL NOT NULL,
        updated REAL NOT NULL,
        throttled INTEGER NOT NULL DEFAULT 0,
        UNIQUE (diagnosis_id, user))""")
    db["votes"].create_index(["user"])
    db.execute("""CREATE TABLE vote_events (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        vote_id INTEGER,
        diagnosis_id TEXT NOT NULL,
        user TEXT NOT NULL,
        direction INTEGER NOT NULL CHECK (direction IN (-1, 0, 1)),
        source TEXT NOT NULL,
        at REAL NOT NULL,
        throttled INTEGER NOT NULL DEFAULT 0)""")
    db["vote_events"].create_index(["user", "at"])
    db.execute("""CREATE TABLE corrections (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        diagnosis_id TEXT NOT NULL REFERENCES diagnoses(id),
        user TEXT NOT NULL,
        category TEXT NOT NULL,
        incident TEXT,
        created REAL NOT NULL,
        updated REAL NOT NULL,
        UNIQUE (diagnosis_id, user))""")


def _m2_learning(db: sqlite_utils.Database) -> None:
    """Incidents written by on-call, the examples derived from feedback, and what happened to a reply."""
    db["incidents"].create({
        "id": str, "category": str, "title": str, "cause": str, "first_action": str, "engines": str,
        "created": float, "created_by": str, "diagnosis_id": str, "exported": float,
    }, pk="id", not_null={"category", "title", "cause", "first_action", "created"})
    db.execute("ALTER TABLE corrections ADD COLUMN new_incident TEXT REFERENCES incidents(id)")
    db.execute("""CREATE TABLE examples (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        diagnosis_id TEXT NOT NULL UNIQUE REFERENCES diagnoses(id),
        category TEXT NOT NULL,
        incident TEXT,
        kind TEXT NOT NULL CHECK (kind IN ('confirmed', 'corrected')),
        holdout INTEGER NOT NULL DEFAULT 0,
        vote_ids TEXT NOT NULL,
        correction_ids TEXT NOT NULL,
        created REAL NOT NULL,
        updated REAL NOT NULL)""")
    db.execute("ALTER TABLE diagnoses ADD COLUMN blocks TEXT")


def _m3_models(db: sqlite_utils.Database) -> None:
    """Model versions and their states; a small key/value table; cached user-group members."""
    db.execute("""CREATE TABLE model_versions (
        version TEXT PRIMARY KEY,
        parent TEXT,
        state TEXT NOT NULL CHECK (state IN ('candidate', 'active', 'rejected', 'retired')),
        created REAL NOT NULL,
        activated REAL,
        training_hash TEXT,
        examples INTEGER,
        feedback_examples INTEGER,
        metrics TEXT NOT NULL DEFAULT '{}',
        gate TEXT NOT NULL DEFAULT '{}',
        note TEXT)""")
    db["meta"].create({"key": str, "value": str}, pk="key")
    db["allowlist_members"].create({"group_id": str, "user_id": str, "fetched": float},
                                   pk=("group_id", "user_id"))


def _m4_quarantine(db: sqlite_utils.Database) -> None:
    """Examples the gate refused to train on (kept for review; the memory still answers with them)."""
    db.execute("""CREATE TABLE quarantine (
        text_hash TEXT NOT NULL,
        category TEXT NOT NULL,
        version TEXT,
        reason TEXT,
        created REAL NOT NULL,
        PRIMARY KEY (text_hash, category))""")


MIGRATIONS: tuple[Migration, ...] = (
    (1, "diagnoses, votes, vote history, corrections", _m1_core),
    (2, "new incidents, feedback examples, reply blocks", _m2_learning),
    (3, "model versions, meta, allow-list group members", _m3_models),
    (4, "quarantined feedback examples", _m4_quarantine),
)
LATEST = MIGRATIONS[-1][0]


def current_version(db: sqlite_utils.Database) -> int:
    if "schema_migrations" not in db.table_names():
        return 0
    row = db.execute("SELECT MAX(version) FROM schema_migrations").fetchone()
    return int(row[0] or 0)


def migrate(db: sqlite_utils.Database, target: int | None = None) -> list[int]:
    """Bring the schema up to `target` (default: the latest); returns the versions applied.

    The caller holds no transaction; each step is its own `BEGIN IMMEDIATE … COMMIT`, so two
    processes opening the same new database at once apply each step exactly once.
    """
    target = LATEST if target is None else target
    applied: list[int] = []
    db.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
               "applied REAL NOT NULL)")
    for version, name, step in MIGRATIONS:
        if version > target:
            break
        db.conn.execute("BEGIN IMMEDIATE")
        try:
            have = current_version(db)
            if have > LATEST:
                raise SchemaError(f"the feedback database is at schema version {have}, newer than this "
                                  f"servetriage knows ({LATEST}); upgrade servetriage")
            if have >= version:
                db.conn.execute("COMMIT")
                continue
            step(db)
            db.execute("INSERT INTO schema_migrations (version, name, applied) VALUES (?, ?, ?)",
                       [version, name, time.time()])
            db.execute(f"PRAGMA user_version = {int(version)}")
            db.conn.execute("COMMIT")
            applied.append(version)
        except BaseException:
            if db.conn.in_transaction:
                db.conn.execute("ROLLBACK")
            raise
    have = current_version(db)
    if have > LATEST:
        raise SchemaError(f"the feedback database is at schema version {have}, newer than this servetriage "
                          f"knows ({LATEST}); upgrade servetriage")
    return applied
