"""The feedback database's schema, as an ordered list of migrations, for SQLite and PostgreSQL alike.

Each migration runs once, inside one writer transaction together with the row that records it in
`schema_migrations` (SQLite's `BEGIN IMMEDIATE`, or PostgreSQL's transactional DDL under an
advisory lock), so a crash or an error leaves the database at the previous version, never
half-migrated, and two processes opening a new database at once apply each step exactly once. A
database written by a newer servetriage (a version this build does not know) is refused rather
than guessed at. Migrations only ever add: no stored feedback is dropped.
"""

from __future__ import annotations

import time
from typing import Any
from collections.abc import Callable

from servetriage.storage import Database, Transaction

from ._errors import SchemaError

Migration = tuple[int, str, Callable[[Transaction], None]]


def _ddl(tx: Transaction, *statements: str) -> None:
    for sql in statements:
        tx.execute(tx.dialect.ddl(sql))


def _m1_core(tx: Transaction) -> None:
    """Diagnoses the bot answered, the votes on them (one per user, changeable) and their history."""
    _ddl(tx, """CREATE TABLE diagnoses (
        id TEXT PRIMARY KEY, created {real} NOT NULL, team TEXT, channel TEXT NOT NULL, thread_ts TEXT,
        message_ts TEXT, "user" TEXT, source TEXT, excerpt TEXT NOT NULL, excerpt_hash TEXT NOT NULL,
        category TEXT NOT NULL, confidence {real}, incident TEXT, alternatives TEXT, model_version TEXT,
        timings TEXT, diagnosis TEXT)""",
        "CREATE INDEX idx_diagnoses_channel_message_ts ON diagnoses (channel, message_ts)",
        """CREATE TABLE votes (
        id {serial_pk},
        diagnosis_id TEXT NOT NULL REFERENCES diagnoses(id),
        "user" TEXT NOT NULL,
        direction INTEGER NOT NULL CHECK (direction IN (-1, 1)),
        source TEXT NOT NULL,
        created {real} NOT NULL,
        updated {real} NOT NULL,
        throttled INTEGER NOT NULL DEFAULT 0,
        UNIQUE (diagnosis_id, "user"))""",
        'CREATE INDEX idx_votes_user ON votes ("user")',
        """CREATE TABLE vote_events (
        id {serial_pk},
        vote_id INTEGER,
        diagnosis_id TEXT NOT NULL,
        "user" TEXT NOT NULL,
        direction INTEGER NOT NULL CHECK (direction IN (-1, 0, 1)),
        source TEXT NOT NULL,
        at {real} NOT NULL,
        throttled INTEGER NOT NULL DEFAULT 0)""",
        'CREATE INDEX idx_vote_events_user_at ON vote_events ("user", at)',
        """CREATE TABLE corrections (
        id {serial_pk},
        diagnosis_id TEXT NOT NULL REFERENCES diagnoses(id),
        "user" TEXT NOT NULL,
        category TEXT NOT NULL,
        incident TEXT,
        created {real} NOT NULL,
        updated {real} NOT NULL,
        UNIQUE (diagnosis_id, "user"))""")


def _m2_learning(tx: Transaction) -> None:
    """Incidents written by on-call, the examples derived from feedback, and what happened to a reply."""
    _ddl(tx, """CREATE TABLE incidents (
        id TEXT PRIMARY KEY, category TEXT NOT NULL, title TEXT NOT NULL, cause TEXT NOT NULL,
        first_action TEXT NOT NULL, engines TEXT, created {real} NOT NULL, created_by TEXT, diagnosis_id TEXT,
        exported {real})""",
        "ALTER TABLE corrections ADD COLUMN new_incident TEXT REFERENCES incidents(id)",
        """CREATE TABLE examples (
        id {serial_pk},
        diagnosis_id TEXT NOT NULL UNIQUE REFERENCES diagnoses(id),
        category TEXT NOT NULL,
        incident TEXT,
        kind TEXT NOT NULL CHECK (kind IN ('confirmed', 'corrected')),
        holdout INTEGER NOT NULL DEFAULT 0,
        vote_ids TEXT NOT NULL,
        correction_ids TEXT NOT NULL,
        created {real} NOT NULL,
        updated {real} NOT NULL)""",
        "ALTER TABLE diagnoses ADD COLUMN blocks TEXT")


def _m3_models(tx: Transaction) -> None:
    """Model versions and their states; a small key/value table; cached user-group members."""
    _ddl(tx, """CREATE TABLE model_versions (
        version TEXT PRIMARY KEY,
        parent TEXT,
        state TEXT NOT NULL CHECK (state IN ('candidate', 'active', 'rejected', 'retired')),
        created {real} NOT NULL,
        activated {real},
        training_hash TEXT,
        examples INTEGER,
        feedback_examples INTEGER,
        metrics TEXT NOT NULL DEFAULT '{{}}',
        gate TEXT NOT NULL DEFAULT '{{}}',
        note TEXT)""",
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)",
        """CREATE TABLE allowlist_members (group_id TEXT NOT NULL, user_id TEXT NOT NULL, fetched {real},
        PRIMARY KEY (group_id, user_id))""")


def _m4_quarantine(tx: Transaction) -> None:
    """Examples the gate refused to train on (kept for review; the memory still answers with them)."""
    _ddl(tx, """CREATE TABLE quarantine (
        text_hash TEXT NOT NULL,
        category TEXT NOT NULL,
        version TEXT,
        reason TEXT,
        created {real} NOT NULL,
        PRIMARY KEY (text_hash, category))""")


MIGRATIONS: tuple[Migration, ...] = (
    (1, "diagnoses, votes, vote history, corrections", _m1_core),
    (2, "new incidents, feedback examples, reply blocks", _m2_learning),
    (3, "model versions, meta, allow-list group members", _m3_models),
    (4, "quarantined feedback examples", _m4_quarantine),
)
LATEST = MIGRATIONS[-1][0]
_LEDGER = """CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL,
    applied {real} NOT NULL)"""


def current_version(db: Database) -> int:
    if "schema_migrations" not in db.tables():
        return 0
    return _version(db.query("SELECT MAX(version) AS v FROM schema_migrations")[0]["v"])


def _version(value: Any) -> int:
    return int(value or 0)


def migrate(db: Database, target: int | None = None) -> list[int]:
    """Bring the schema up to `target` (default: the latest); returns the versions applied."""
    target = LATEST if target is None else target
    applied: list[int] = []
    for version, name, step in MIGRATIONS:
        if version > target:
            break
        with db.transaction() as tx:
            tx.serialize("schema", "migrate")
            tx.execute(tx.dialect.ddl(_LEDGER))
            have = _version(tx.scalar("SELECT MAX(version) FROM schema_migrations"))
            _refuse_newer(have)
            if have >= version:
                continue
            step(tx)
            tx.execute("INSERT INTO schema_migrations (version, name, applied) VALUES (?, ?, ?)",
                       [version, name, time.time()])
            if tx.dialect.name == "sqlite":
                tx.execute(f"PRAGMA user_version = {int(version)}")
            applied.append(version)
    _refuse_newer(current_version(db))
    return applied


def _refuse_newer(have: int) -> None:
    if have > LATEST:
        raise SchemaError(f"the feedback database is at schema version {have}, newer than this servetriage "
                          f"knows ({LATEST}); upgrade servetriage")
