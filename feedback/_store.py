"""The feedback database: every answer, every vote, every correction, behind one storage seam.

`FeedbackStore` opens the database (SQLite by default, PostgreSQL when `SERVETRIAGE_DATABASE_URL`
is set), migrates it, and holds one small repository per concern, all over the same connection:

    store.replies    — the bot's `ReplyRecorder`: answered diagnoses and their Slack messages
    store.votes      — 👍/👎, corrections and new incidents, the tally, the export rows
    store.training   — the examples feedback derived, the quarantine, the generation
    store.incidents  — incidents on-call wrote (the corpus overlay)
    store.trust      — the allow-list and its cached user-group members
    store.forget     — erasure of a vote, a user or a diagnosis

Every write is one transaction committed durably before it returns. The model versions and their
states live in the model registry (`classifier.ArtefactStore`), not here; the `model_versions`
table of schema 3 is kept for old databases and no longer read.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any
from collections.abc import Callable, Collection

from servetriage.storage import Database, SqliteDatabase, connect

from ._derive import AllowlistCache, Derivation
from ._errors import FeedbackError, NotFound
from ._forget import Forgetting
from ._incidents import Incidents
from ._replies import Replies
from ._rules import Allowlist, RateLimit
from ._schema import current_version, migrate
from ._training import TrainingSet
from ._trust import TrustedVoters
from ._votes import DEFAULT_RATE_LIMIT, Labels, Votes

if TYPE_CHECKING:
    from servetriage._settings import Settings

OPEN_ALLOWLIST = Allowlist()  # everyone's votes train
TABLES = ("diagnoses", "votes", "vote_events", "corrections", "incidents", "examples", "quarantine")


class FeedbackStore:
    """The repositories of the feedback loop over one database (see the module docstring)."""

    def __init__(self, db: Database | Path | str, *, allowlist: Allowlist = OPEN_ALLOWLIST,
                 rate_limit: RateLimit = DEFAULT_RATE_LIMIT, categories: Collection[str] | None = None,
                 incidents: Collection[str] | None = None, model_version: Callable[[], str | None] | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.db = db if isinstance(db, Database) else connect(db)
        migrate(self.db)
        cache = AllowlistCache(allowlist)
        derivation = Derivation(cache, clock)
        self.replies = Replies(self.db, clock, model_version)
        self.incidents = Incidents(self.db, clock)
        self.votes = Votes(self.db, derivation, cache, self.incidents, labels=Labels.of(categories, incidents),
                           rate_limit=rate_limit, clock=clock)
        self.training = TrainingSet(self.db, clock)
        self.trust = TrustedVoters(self.db, cache, derivation, clock)
        self.forget = Forgetting(self.db, derivation)
        self.trust.load()

    @classmethod
    def open(cls, settings: Settings, **kw: Any) -> FeedbackStore:
        return cls(connect(settings), allowlist=Allowlist(tuple(settings.trainer_allowlist)), **kw)

    @property
    def schema_version(self) -> int:
        return current_version(self.db)

    def counts(self) -> dict[str, int]:
        return {t: int(self.db.query(f"SELECT COUNT(*) AS n FROM {t}")[0]["n"]) for t in TABLES}

    def backup(self, dest: Path | str) -> Path:
        """A consistent copy of a SQLite database while writers keep going (PostgreSQL: use pg_dump)."""
        if not isinstance(self.db, SqliteDatabase):
            raise FeedbackError(f"{self.db.description}: back up a PostgreSQL database with pg_dump")
        with self.db.locked() as conn:
            return backup_database(self.db.path, dest, source=conn)

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> FeedbackStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def backup_database(src: Path | str, dest: Path | str, *, lock: threading.RLock | None = None,
                    source: sqlite3.Connection | None = None) -> Path:
    src, dest = Path(src), Path(dest)
    if not src.is_file():
        raise NotFound(f"{src}: no feedback database yet")
    if dest.exists() and dest.is_dir():
        dest = dest / src.name
    if dest.exists():
        raise FeedbackError(f"{dest}: already exists (not overwriting a file)")
    if not dest.parent.is_dir():
        raise FeedbackError(f"{dest.parent}: no such directory")
    if dest.resolve() == src.resolve():
        raise FeedbackError(f"{dest}: is the database itself")
    fd, tmp_name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp", dir=str(dest.parent))
    os.close(fd)
    tmp = Path(tmp_name)
    own = source is None
    conn = source or sqlite3.connect(str(src), timeout=30.0)
    try:
        out = sqlite3.connect(str(tmp))
        try:
            if lock is not None:
                with lock:
                    conn.backup(out, pages=0)
            else:
                conn.backup(out, pages=0)
            out.execute("PRAGMA journal_mode = DELETE")
            ok = out.execute("PRAGMA integrity_check").fetchone()[0]
        finally:
            out.close()
        if ok != "ok":
            raise FeedbackError(f"backup failed its integrity check ({ok})")
        os.replace(tmp, dest)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    finally:
        if own:
            conn.close()
    return dest


