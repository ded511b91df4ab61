"""The durable job queue: every acknowledged paste is a row before Slack hears 200, until answered.

A listener writes its job here inside the request (the ack follows), keyed by what Slack delivered
(the event id, a command's trigger id), so a second delivery of the same thing finds the key and
adds nothing: dedupe and the queue are one mechanism. Workers claim a job (PostgreSQL: `SELECT …
FOR UPDATE SKIP LOCKED`, so replicas never take the same one; SQLite: the single writer), record each
input they answered, and mark it done. A process that dies mid-job leaves it `running` under its
owner; at start-up its own host's dead owners' jobs are queued again, and any claim older than the
lease is taken over by whoever asks next. A job that fails `MAX_ATTEMPTS` times is parked with its
error, never retried forever.
"""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import time
from typing import Any

from servetriage.storage import Database, Transaction

TABLE = "jobs"
MAX_ATTEMPTS = 3
LEASE_S = 300.0              # a claim older than this is taken over (its process is presumed gone)
RETRY_BACKOFF_S = 2.0        # a failed job waits attempts × this before it is tried again
STATES = ("queued", "running", "done", "parked")
KEEP_DONE_S = 7 * 24 * 3600  # done jobs are pruned after a week
PRUNE_EVERY = 500

# The claim, per backend: the oldest job that is ready (queued and due, or a stale claim).
_READY = ("(state = 'queued' AND not_before <= ?) OR (state = 'running' AND lease_until < ?)")
CLAIM_SQL = {
    "sqlite": f"SELECT key FROM {TABLE} WHERE {_READY} ORDER BY created, key LIMIT 1",
    "postgresql": f"SELECT key FROM {TABLE} WHERE {_READY} ORDER BY created, key LIMIT 1 FOR UPDATE SKIP LOCKED",
}


@dataclasses.dataclass(frozen=True)
class Claimed:
    """A job a worker holds: its key, what the listener recorded, and the inputs already answered."""

    key: str
    payload: dict[str, Any]
    attempts: int
    answered: frozenset[str]
    created: float  # when the delivery was recorded (the ack's moment)


@dataclasses.dataclass(frozen=True)
class Enqueued:
    fresh: bool   # False: this delivery was already recorded (a retry, a second event about it)
    depth: int    # jobs waiting or running, this one included


def process_owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


class JobQueue:
    def __init__(self, db: Database, *, owner: str | None = None) -> None:
        self.db = db
        self.owner = owner or process_owner()
        self._claims = 0
        with db.transaction() as tx:
            tx.serialize("jobs", "create")
            tx.execute(tx.dialect.ddl(f"""CREATE TABLE IF NOT EXISTS {TABLE} (
                key TEXT PRIMARY KEY, payload TEXT NOT NULL, channel TEXT NOT NULL, state TEXT NOT NULL,
                attempts INTEGER NOT NULL DEFAULT 0, created {{real}} NOT NULL, updated {{real}} NOT NULL,
                not_before {{real}} NOT NULL, lease_until {{real}}, owner TEXT, error TEXT,
                answered TEXT NOT NULL DEFAULT '[]')"""))
            tx.execute(f"CREATE INDEX IF NOT EXISTS idx_{TABLE}_state ON {TABLE} (state, not_before)")

    # -- the listener's side -----------------------------------------------------------------------
    def enqueue(self, key: str, payload: dict[str, Any], channel: str) -> Enqueued:
        """Record a job (one transaction, durable on return); a known key adds nothing."""
        now = time.time()
        with self.db.transaction() as tx:
            fresh = tx.execute(f"INSERT INTO {TABLE} (key, payload, channel, state, created, updated, not_before) "
                               "VALUES (?, ?, ?, 'queued', ?, ?, ?) ON CONFLICT (key) DO NOTHING",
                               [key, json.dumps(payload), channel, now, now, now]) == 1
            depth = int(tx.scalar(f"SELECT COUNT(*) FROM {TABLE} WHERE state IN ('queued', 'running')"))
        return Enqueued(fresh, depth)

    # -- the workers' side ---------------------------------------------------------------------------
    def claim(self) -> Claimed | None:
        """The oldest ready job, now held by this process (None: nothing to do now)."""
        now = time.time()
        if not self.db.query(f"SELECT 1 AS one FROM {TABLE} WHERE {_READY} LIMIT 1", [now, now]):
            return None  # a read first: an idle worker's poll takes no write lock
        with self.db.transaction() as tx:
            key = tx.scalar(CLAIM_SQL[tx.dialect.name], [now, now])
            if key is None:
                return None
            tx.execute(f"UPDATE {TABLE} SET state = 'running', owner = ?, lease_until = ?, attempts = attempts + 1, "
                       "updated = ? WHERE key = ?", [self.owner, now + LEASE_S, now, key])
            row = tx.one(f"SELECT payload, attempts, answered, created FROM {TABLE} WHERE key = ?", [key])
        assert row is not None
        self._prune_now_and_then(now)
        return Claimed(str(key), json.loads(row[0]), int(row[1]), frozenset(json.loads(row[2])), float(row[3]))

    def answered(self, key: str, part: str) -> None:
        """One input of the job is answered (its reply is posted): a resumed job skips it."""
        with self.db.transaction() as tx:
            tx.serialize("job", key)
            row = tx.one(f"SELECT answered FROM {TABLE} WHERE key = ?", [key])
            done = sorted(set(json.loads(row[0]) if row else []) | {part})
            tx.execute(f"UPDATE {TABLE} SET answered = ?, updated = ? WHERE key = ?", [json.dumps(done), time.time(), key])

    def done(self, key: str) -> None:
        self._set(key, "done", error=None)

    def defer(self, key: str, seconds: float) -> None:
        """Not now (the channel's pace): queued again for later, the attempt not counted."""
        now = time.time()
        with self.db.transaction() as tx:
            tx.execute(f"UPDATE {TABLE} SET state = 'queued', attempts = attempts - 1, not_before = ?, owner = NULL, "
                       "lease_until = NULL, updated = ? WHERE key = ?", [now + seconds, now, key])

    def failed(self, key: str, error: str) -> bool:
        """A failed attempt: queued again after a backoff, or parked after MAX_ATTEMPTS (returns True)."""
        now = time.time()
        with self.db.transaction() as tx:
            attempts = int(tx.scalar(f"SELECT attempts FROM {TABLE} WHERE key = ?", [key]) or 0)
            parked = attempts >= MAX_ATTEMPTS
            tx.execute(f"UPDATE {TABLE} SET state = ?, error = ?, not_before = ?, owner = NULL, lease_until = NULL, "
                       "updated = ? WHERE key = ?",
                       ["parked" if parked else "queued", error[:2000], now + RETRY_BACKOFF_S * attempts, now, key])
        return parked

    def recover(self) -> int:
        """At start-up: this host's jobs whose owning process is gone are queued again."""
        host = self.owner.rsplit(":", 1)[0]
        rows = self.db.query(f"SELECT key, owner FROM {TABLE} WHERE state = 'running' AND owner LIKE ?", [host + ":%"])
        orphans = [r["key"] for r in rows if r["owner"] != self.owner and not _alive(r["owner"])]
        if orphans:
            with self.db.transaction() as tx:
                for key in orphans:
                    _requeue(tx, key)
        return len(orphans)

    # -- what it holds --------------------------------------------------------------------------------
    def counts(self) -> dict[str, int]:
        rows = self.db.query(f"SELECT state, COUNT(*) AS n FROM {TABLE} GROUP BY state")
        return dict.fromkeys(STATES, 0) | {r["state"]: int(r["n"]) for r in rows}

    def pending(self) -> int:
        """Jobs this process could still take now (queued and due, or stale)."""
        now = time.time()
        rows = self.db.query(f"SELECT COUNT(*) AS n FROM {TABLE} WHERE {_READY}", [now, now])
        return int(rows[0]["n"])

    def parked(self) -> list[dict[str, Any]]:
        return self.db.query(f"SELECT key, channel, attempts, error, updated FROM {TABLE} WHERE state = 'parked' "
                             "ORDER BY updated")

    def close(self) -> None:
        self.db.close()

    def _set(self, key: str, state: str, *, error: str | None) -> None:
        with self.db.transaction() as tx:
            tx.execute(f"UPDATE {TABLE} SET state = ?, error = ?, owner = NULL, lease_until = NULL, updated = ? "
                       "WHERE key = ?", [state, error, time.time(), key])

    def _prune_now_and_then(self, now: float) -> None:
        self._claims += 1
        if self._claims % PRUNE_EVERY == 0:
            with self.db.transaction() as tx:
                tx.execute(f"DELETE FROM {TABLE} WHERE state = 'done' AND updated < ?", [now - KEEP_DONE_S])


def _requeue(tx: Transaction, key: str) -> None:
    tx.execute(f"UPDATE {TABLE} SET state = 'queued', owner = NULL, lease_until = NULL, attempts = attempts - 1 "
               "WHERE key = ? AND state = 'running'", [key])


def _alive(owner: str) -> bool:
    try:
        pid = int(owner.rsplit(":", 1)[1])
        os.kill(pid, 0)
    except (ValueError, IndexError, ProcessLookupError):
        return False
    except PermissionError:
        return True
    return True
