"""The feedback database: every answer, every vote, every correction, in one SQLite file (WAL).

`FeedbackStore` is the bot's `ReplyRecorder` (it records each answered diagnosis and links it to
the reply's ts) and the one place where feedback is written. Each write is one `BEGIN IMMEDIATE`
transaction that also re-derives the diagnosis's training example, and it is committed with
`synchronous=FULL` before the method returns: once a caller has its answer (and acknowledges
Slack), the vote survives a crash of the process. One connection per store, behind a lock; other
processes (the CLI while the bot runs) are serialised by SQLite's own locking.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import sqlite3
import tempfile
import threading
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Collection, Iterator

import sqlite_utils

from ._errors import FeedbackError, NotFound
from ._rules import Allowlist, CorrectionView, Derived, RateLimit, VoteView, derive, held_out, is_group_id
from ._schema import current_version, migrate

if TYPE_CHECKING:
    from servetriage._settings import Settings
    from servetriage.classifier import Diagnosis

MAX_EXCERPT_CHARS = 256 * 1024
MODEL_STATES = ("candidate", "active", "rejected", "retired")
UP, DOWN = 1, -1


@dataclasses.dataclass(frozen=True)
class DiagnosisRow:
    id: str
    created: float
    team: str | None
    channel: str
    thread_ts: str | None
    message_ts: str | None
    user: str | None
    source: str | None
    excerpt: str
    excerpt_hash: str
    category: str
    confidence: float
    incident: str | None
    alternatives: list[dict[str, Any]]
    model_version: str | None
    diagnosis: dict[str, Any]
    blocks: list[dict[str, Any]] | None


@dataclasses.dataclass(frozen=True)
class Tally:
    up: int
    down: int
    label: Derived | None               # the agreed example, if the trusted voters agree
    suggested: tuple[tuple[str, int], ...] = ()  # corrections offered (category, count), best first


@dataclasses.dataclass(frozen=True)
class VoteResult:
    vote_id: int
    diagnosis_id: str
    user: str
    direction: int
    changed: bool           # False when the same vote was cast again
    throttled: bool         # over the user's rate limit: stored, not trained on
    trusted: bool           # on the allow-list (or no allow-list)
    tally: Tally


@dataclasses.dataclass(frozen=True)
class FeedbackExample:
    """A training example from feedback, with the votes and corrections behind it."""

    id: int
    diagnosis_id: str
    text: str
    text_hash: str
    category: str
    incident: str | None
    kind: str
    holdout: bool
    vote_ids: tuple[int, ...]
    correction_ids: tuple[int, ...]


@dataclasses.dataclass(frozen=True)
class NewIncident:
    id: str
    category: str
    title: str
    cause: str
    first_action: str
    engines: tuple[str, ...]
    created: float
    created_by: str | None
    diagnosis_id: str | None


@dataclasses.dataclass(frozen=True)
class ModelRow:
    version: str
    parent: str | None
    state: str
    created: float
    activated: float | None
    training_hash: str | None
    examples: int | None
    feedback_examples: int | None
    metrics: dict[str, Any]
    gate: dict[str, Any]
    note: str | None


def excerpt_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()


def _clip_excerpt(text: str) -> str:
    """Keep the head and, mostly, the tail of a huge log: faults are usually near the end."""
    if len(text) <= MAX_EXCERPT_CHARS:
        return text
    head = MAX_EXCERPT_CHARS // 4
    tail = MAX_EXCERPT_CHARS - head - 40
    return text[:head] + "\n… [clipped by servetriage] …\n" + text[-tail:]


class FeedbackStore:
    """The bot's `ReplyRecorder`, the vote/correction writer and the model-version ledger."""

    def __init__(self, path: Path | str, *, allowlist: Allowlist = Allowlist(), rate_limit: RateLimit = RateLimit(),
                 categories: Collection[str] | None = None, incidents: Collection[str] | None = None,
                 model_version: Callable[[], str | None] | None = None, clock: Callable[[], float] = time.time) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.rate_limit = rate_limit
        self.categories = frozenset(categories) if categories is not None else None
        self.corpus_incidents = frozenset(incidents) if incidents is not None else None
        self.model_version = model_version
        self._clock = clock
        self._lock = threading.RLock()
        conn = sqlite3.connect(str(self.path), check_same_thread=False, timeout=30.0, isolation_level=None)
        conn.execute("PRAGMA busy_timeout = 30000")
        self.db = sqlite_utils.Database(conn)
        self.db.enable_wal()
        conn.execute("PRAGMA synchronous = FULL")
        conn.execute("PRAGMA foreign_keys = ON")
        migrate(self.db)
        self._allow = dataclasses.replace(allowlist, group_members=frozenset(self._cached_members(allowlist)))
        self._rederive_if_allowlist_changed()

    @classmethod
    def open(cls, settings: "Settings", **kw: Any) -> "FeedbackStore":
        return cls(settings.db_path, allowlist=Allowlist(tuple(settings.trainer_allowlist)), **kw)

    @property
    def allowlist(self) -> Allowlist:
        return self._allow

    def close(self) -> None:
        with self._lock:
            self.db.conn.close()

    def __enter__(self) -> "FeedbackStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- transactions --------------------------------------------------------------------------
    @contextmanager
    def _tx(self) -> Iterator[sqlite_utils.Database]:
        with self._lock:
            self.db.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.db
            except BaseException:
                if self.db.conn.in_transaction:
                    self.db.conn.execute("ROLLBACK")
                raise
            else:
                self.db.conn.execute("COMMIT")

    def _rows(self, sql: str, params: Any = ()) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.db.query(sql, params))

    @property
    def schema_version(self) -> int:
        with self._lock:
            return current_version(self.db)

    # -- ReplyRecorder ---------------------------------------------------------------------------
    def record(self, diagnosis: "Diagnosis", excerpt: str, *, team: str | None, channel: str, thread_ts: str | None,
               user: str | None, source: str) -> str:
        """Keep one answered diagnosis (the log excerpt redacted) and return its id for the buttons."""
        from servetriage.classifier import redact  # noqa: PLC0415 (the engine's redactor, same rules as evidence)

        text = _clip_excerpt(redact(excerpt or ""))
        did = uuid.uuid4().hex
        d = diagnosis.to_dict()
        alternatives = [{"category": c.category, "incident": c.incident, "score": c.score} for c in diagnosis.top]
        version = None
        if self.model_version is not None:
            try:
                version = self.model_version()
            except Exception:  # noqa: BLE001 — the version is a label, never worth losing the record over
                version = None
        with self._tx() as db:
            db.execute(
                "INSERT INTO diagnoses (id, created, team, channel, thread_ts, message_ts, user, source, excerpt, "
                "excerpt_hash, category, confidence, incident, alternatives, model_version, timings, diagnosis) "
                "VALUES (?, ?, ?, ?, ?, NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [did, self._clock(), team, channel, thread_ts, user, source, text, excerpt_hash(text),
                 diagnosis.category, float(diagnosis.confidence), diagnosis.incident.id if diagnosis.incident else None,
                 json.dumps(alternatives), version, json.dumps(diagnosis.timings_ms), json.dumps(d)])
        return did

    def attach_reply(self, diagnosis_id: str, reply_ts: str) -> None:
        with self._tx() as db:
            db.execute("UPDATE diagnoses SET message_ts = ? WHERE id = ?", [reply_ts, diagnosis_id])

    def set_blocks(self, diagnosis_id: str, blocks: list[dict[str, Any]]) -> None:
        """The reply's current layout, so a reaction can update it like a button click does."""
        with self._tx() as db:
            db.execute("UPDATE diagnoses SET blocks = ? WHERE id = ?", [json.dumps(blocks), diagnosis_id])

    # -- lookups ---------------------------------------------------------------------------------
    def diagnosis(self, diagnosis_id: str) -> DiagnosisRow:
        rows = self._rows("SELECT * FROM diagnoses WHERE id = ?", [diagnosis_id])
        if not rows:
            raise NotFound(f"no diagnosis {diagnosis_id!r}")
        return _diag_row(rows[0])

    def diagnosis_by_reply(self, channel: str, reply_ts: str) -> DiagnosisRow | None:
        rows = self._rows("SELECT * FROM diagnoses WHERE channel = ? AND message_ts = ?", [channel, reply_ts])
        return _diag_row(rows[0]) if rows else None

    def votes(self, diagnosis_id: str | None = None) -> list[dict[str, Any]]:
        if diagnosis_id is None:
            return self._rows("SELECT * FROM votes ORDER BY id")
        return self._rows("SELECT * FROM votes WHERE diagnosis_id = ? ORDER BY id", [diagnosis_id])

    def corrections(self, diagnosis_id: str | None = None) -> list[dict[str, Any]]:
        if diagnosis_id is None:
            return self._rows("SELECT * FROM corrections ORDER BY id")
        return self._rows("SELECT * FROM corrections WHERE diagnosis_id = ? ORDER BY id", [diagnosis_id])

    def counts(self) -> dict[str, int]:
        with self._lock:
            return {t: self.db[t].count for t in ("diagnoses", "votes", "vote_events", "corrections", "incidents",
                                                   "examples", "model_versions", "quarantine")}

    # -- feedback --------------------------------------------------------------------------------
    def vote(self, diagnosis_id: str, user: str, up: bool, *, source: str = "button") -> VoteResult:
        """Cast or change `user`'s vote on a diagnosis (one per user per diagnosis)."""
        if not user:
            raise FeedbackError("a vote needs a user id")
        direction = UP if up else DOWN
        with self._tx() as db:
            self._require_diagnosis(db, diagnosis_id)
            res = self._cast(db, diagnosis_id, user, direction, source)
        return res

    def retract(self, diagnosis_id: str, user: str, *, direction: int | None = None, source: str | None = None) -> bool:
        """Withdraw a vote (a removed reaction); only when it still is the vote that reaction cast."""
        with self._tx() as db:
            row = db.execute("SELECT id, direction, source FROM votes WHERE diagnosis_id = ? AND user = ?",
                             [diagnosis_id, user]).fetchone()
            if row is None or (direction is not None and row[1] != direction) or (source is not None and row[2] != source):
                return False
            db.execute("DELETE FROM votes WHERE id = ?", [row[0]])
            db.execute("INSERT INTO vote_events (vote_id, diagnosis_id, user, direction, source, at, throttled) "
                       "VALUES (?, ?, ?, 0, ?, ?, 0)", [row[0], diagnosis_id, user, source or "retract", self._clock()])
            self._derive(db, diagnosis_id)
        return True

    def correct(self, diagnosis_id: str, user: str, category: str, incident: str | None = None, *,
                source: str = "button") -> VoteResult:
        """`user` says the answer is `category` (optionally a specific incident): a 👎 plus the right label."""
        if not user:
            raise FeedbackError("a correction needs a user id")
        self._check_label(category, incident)
        with self._tx() as db:
            self._require_diagnosis(db, diagnosis_id)
            if incident and self.corpus_incidents is not None and incident not in self.corpus_incidents:
                if db.execute("SELECT 1 FROM incidents WHERE id = ?", [incident]).fetchone() is None:
                    raise FeedbackError(f"unknown incident {incident!r}")
            self._put_correction(db, diagnosis_id, user, category, incident, None)
            return self._cast(db, diagnosis_id, user, DOWN, source)

    def new_incident(self, diagnosis_id: str, user: str, *, category: str, title: str, cause: str, first_action: str,
                     engines: tuple[str, ...] = (), source: str = "modal") -> tuple[NewIncident, VoteResult]:
        """A correction to an incident on-call wrote just now; it joins the overlay and the export."""
        fields = {"title": title, "cause": cause, "first_action": first_action}
        for name, value in fields.items():
            if not isinstance(value, str) or not value.strip():
                raise FeedbackError(f"a new incident needs a {name.replace('_', ' ')}")
        self._check_label(category, None)
        now = self._clock()
        with self._tx() as db:
            row = self._require_diagnosis(db, diagnosis_id)
            if not engines:
                eng = (json.loads(row["diagnosis"] or "{}") or {}).get("engine")
                engines = (eng,) if eng in ("sglang", "vllm", "trtllm") else ("any",)
            inc_id = _slug_id(title, db)
            db.execute("INSERT INTO incidents (id, category, title, cause, first_action, engines, created, created_by, "
                       "diagnosis_id, exported) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)",
                       [inc_id, category, title.strip(), cause.strip(), first_action.strip(), json.dumps(list(engines)),
                        now, user, diagnosis_id])
            self._put_correction(db, diagnosis_id, user, category, None, inc_id)
            res = self._cast(db, diagnosis_id, user, DOWN, source)
        return self.incident(inc_id), res

    def tally(self, diagnosis_id: str) -> Tally:
        with self._lock:
            return self._tally(self.db, diagnosis_id)

    # -- internals of a feedback write -------------------------------------------------------------
    def _require_diagnosis(self, db: sqlite_utils.Database, diagnosis_id: str) -> dict[str, Any]:
        cur = db.execute("SELECT * FROM diagnoses WHERE id = ?", [diagnosis_id])
        row = cur.fetchone()
        if row is None:
            raise NotFound(f"no diagnosis {diagnosis_id!r}")
        return dict(zip([c[0] for c in cur.description], row))

    def _check_label(self, category: str, incident: str | None) -> None:
        if not category:
            raise FeedbackError("a correction needs a category")
        if self.categories is not None and category not in self.categories:
            raise FeedbackError(f"unknown category {category!r}")

    def _put_correction(self, db: sqlite_utils.Database, diagnosis_id: str, user: str, category: str,
                        incident: str | None, new_incident: str | None) -> None:
        now = self._clock()
        db.execute("INSERT INTO corrections (diagnosis_id, user, category, incident, new_incident, created, updated) "
                   "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (diagnosis_id, user) DO UPDATE SET "
                   "category = excluded.category, incident = excluded.incident, new_incident = excluded.new_incident, "
                   "updated = excluded.updated",
                   [diagnosis_id, user, category, incident or new_incident, new_incident, now, now])

    def _cast(self, db: sqlite_utils.Database, diagnosis_id: str, user: str, direction: int, source: str) -> VoteResult:
        now = self._clock()
        prev = db.execute("SELECT id, direction, throttled FROM votes WHERE diagnosis_id = ? AND user = ?",
                          [diagnosis_id, user]).fetchone()
        recent = [r[0] for r in db.execute("SELECT at FROM vote_events WHERE user = ? AND at > ?",
                                           [user, now - self.rate_limit.longest_window]).fetchall()]
        throttled = self.rate_limit.exceeded(recent, now)
        if prev is not None and prev[1] == direction:
            # The same vote again (a second click, a reaction after the button): nothing to change,
            # but a re-cast of a throttled vote may lift the throttle once the window allows it.
            vote_id, changed = prev[0], False
            throttled = bool(prev[2]) and throttled
            if bool(prev[2]) != throttled:
                db.execute("UPDATE votes SET throttled = ?, updated = ? WHERE id = ?", [int(throttled), now, vote_id])
        elif prev is not None:
            vote_id, changed = prev[0], True
            db.execute("UPDATE votes SET direction = ?, source = ?, updated = ?, throttled = ? WHERE id = ?",
                       [direction, source, now, int(throttled), vote_id])
        else:
            cur = db.execute("INSERT INTO votes (diagnosis_id, user, direction, source, created, updated, throttled) "
                             "VALUES (?, ?, ?, ?, ?, ?, ?)", [diagnosis_id, user, direction, source, now, now,
                                                             int(throttled)])
            vote_id, changed = int(cur.lastrowid), True
        db.execute("INSERT INTO vote_events (vote_id, diagnosis_id, user, direction, source, at, throttled) "
                   "VALUES (?, ?, ?, ?, ?, ?, ?)", [vote_id, diagnosis_id, user, direction, source, now, int(throttled)])
        self._derive(db, diagnosis_id)
        return VoteResult(vote_id, diagnosis_id, user, direction, changed, throttled, self._allow.allows(user),
                          self._tally(db, diagnosis_id))

    def _views(self, db: sqlite_utils.Database, diagnosis_id: str) -> tuple[list[VoteView], list[CorrectionView]]:
        votes = [VoteView(r[0], r[1], r[2], bool(r[3])) for r in db.execute(
            "SELECT id, user, direction, throttled FROM votes WHERE diagnosis_id = ? ORDER BY id", [diagnosis_id])]
        fixes = [CorrectionView(r[0], r[1], r[2], r[3]) for r in db.execute(
            "SELECT id, user, category, incident FROM corrections WHERE diagnosis_id = ? ORDER BY id", [diagnosis_id])]
        return votes, fixes

    def _derive(self, db: sqlite_utils.Database, diagnosis_id: str) -> None:
        """Re-derive the diagnosis's example from its current votes; bump the generation on any change."""
        drow = db.execute("SELECT category, incident, excerpt_hash FROM diagnoses WHERE id = ?", [diagnosis_id]).fetchone()
        old = db.execute("SELECT category, incident, kind, holdout, vote_ids, correction_ids FROM examples "
                         "WHERE diagnosis_id = ?", [diagnosis_id]).fetchone()
        new = None
        if drow is not None:
            votes, fixes = self._views(db, diagnosis_id)
            new = derive(drow[0], drow[1], votes, fixes, self._allow)
        now = self._clock()
        if new is None:
            if old is not None:
                db.execute("DELETE FROM examples WHERE diagnosis_id = ?", [diagnosis_id])
                self._bump(db)
            return
        holdout = int(held_out(drow[2], new.kind))
        values = (new.category, new.incident, new.kind, holdout, json.dumps(list(new.vote_ids)),
                  json.dumps(list(new.correction_ids)))
        if old is not None and tuple(old) == values:
            return
        db.execute("INSERT INTO examples (diagnosis_id, category, incident, kind, holdout, vote_ids, correction_ids, "
                   "created, updated) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (diagnosis_id) DO UPDATE SET "
                   "category = excluded.category, incident = excluded.incident, kind = excluded.kind, "
                   "holdout = excluded.holdout, vote_ids = excluded.vote_ids, correction_ids = excluded.correction_ids, "
                   "updated = excluded.updated", [diagnosis_id, *values, now, now])
        if old is None or tuple(old[:4]) != values[:4]:
            self._bump(db)

    def _bump(self, db: sqlite_utils.Database) -> None:
        db.execute("INSERT INTO meta (key, value) VALUES ('generation', '1') ON CONFLICT (key) DO UPDATE SET "
                   "value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)")

    def _tally(self, db: sqlite_utils.Database, diagnosis_id: str) -> Tally:
        up = down = 0
        for direction, n in db.execute("SELECT direction, COUNT(*) FROM votes WHERE diagnosis_id = ? GROUP BY direction",
                                       [diagnosis_id]):
            if direction > 0:
                up = n
            else:
                down = n
        label = None
        ex = db.execute("SELECT category, incident, kind, vote_ids, correction_ids FROM examples WHERE diagnosis_id = ?",
                        [diagnosis_id]).fetchone()
        if ex is not None:
            label = Derived(ex[0], ex[1], ex[2], tuple(json.loads(ex[3])), tuple(json.loads(ex[4])))
        suggested = tuple((r[0], r[1]) for r in db.execute(
            "SELECT c.category, COUNT(*) AS n FROM corrections c JOIN votes v ON v.diagnosis_id = c.diagnosis_id "
            "AND v.user = c.user AND v.direction = -1 WHERE c.diagnosis_id = ? GROUP BY c.category "
            "ORDER BY n DESC, c.category", [diagnosis_id]))
        return Tally(up, down, label, suggested)

    def generation(self) -> int:
        rows = self._rows("SELECT value FROM meta WHERE key = 'generation'")
        return int(rows[0]["value"]) if rows else 0

    # -- allow-list ------------------------------------------------------------------------------
    def _cached_members(self, allow: Allowlist) -> set[str]:
        groups = allow.groups
        if not groups:
            return set()
        marks = ",".join("?" * len(groups))
        return {r["user_id"] for r in self._rows(f"SELECT user_id FROM allowlist_members WHERE group_id IN ({marks})",
                                                 list(groups))}

    def set_group_members(self, group_id: str, members: Collection[str]) -> None:
        """Cache a user group's members (the Slack side resolves them); re-derives when trust changed."""
        if not is_group_id(group_id):
            raise FeedbackError(f"{group_id!r} is not a user-group id")
        now = self._clock()
        with self._tx() as db:
            db.execute("DELETE FROM allowlist_members WHERE group_id = ?", [group_id])
            for m in sorted(set(members)):
                db.execute("INSERT INTO allowlist_members (group_id, user_id, fetched) VALUES (?, ?, ?)",
                           [group_id, m, now])
        self._allow = dataclasses.replace(self._allow, group_members=frozenset(self._cached_members(self._allow)))
        self._rederive_if_allowlist_changed()

    def _rederive_if_allowlist_changed(self) -> None:
        fp = self._allow.fingerprint
        rows = self._rows("SELECT value FROM meta WHERE key = 'allowlist'")
        if rows and rows[0]["value"] == fp:
            return
        with self._tx() as db:
            for (did,) in db.execute("SELECT DISTINCT diagnosis_id FROM votes").fetchall():
                self._derive(db, did)
            db.execute("INSERT INTO meta (key, value) VALUES ('allowlist', ?) ON CONFLICT (key) DO UPDATE SET "
                       "value = excluded.value", [fp])

    # -- training set ----------------------------------------------------------------------------
    def examples(self) -> list[FeedbackExample]:
        rows = self._rows("SELECT e.*, d.excerpt, d.excerpt_hash FROM examples e JOIN diagnoses d ON d.id = e.diagnosis_id "
                          "ORDER BY e.id")
        return [FeedbackExample(r["id"], r["diagnosis_id"], r["excerpt"], r["excerpt_hash"], r["category"], r["incident"],
                                r["kind"], bool(r["holdout"]), tuple(json.loads(r["vote_ids"])),
                                tuple(json.loads(r["correction_ids"]))) for r in rows]

    # -- quarantine: examples the gate would not let the learned passes train on ---------------------
    def quarantine(self, keys: Collection[tuple[str, str]], version: str | None, reason: str) -> None:
        now = self._clock()
        with self._tx() as db:
            for text_hash, category in keys:
                db.execute("INSERT INTO quarantine (text_hash, category, version, reason, created) VALUES (?, ?, ?, ?, ?) "
                           "ON CONFLICT (text_hash, category) DO NOTHING", [text_hash, category, version, reason, now])

    def quarantined(self) -> dict[tuple[str, str], dict[str, Any]]:
        return {(r["text_hash"], r["category"]): r for r in self._rows("SELECT * FROM quarantine ORDER BY created")}

    def release(self, keys: Collection[tuple[str, str]] | None = None) -> int:
        """Let quarantined examples train again (all of them when `keys` is None)."""
        with self._tx() as db:
            if keys is None:
                n = db.execute("DELETE FROM quarantine").rowcount
            else:
                n = sum(db.execute("DELETE FROM quarantine WHERE text_hash = ? AND category = ?", list(k)).rowcount
                        for k in keys)
            if n:
                self._bump(db)
        return n

    # -- new incidents -----------------------------------------------------------------------------
    def incident(self, incident_id: str) -> NewIncident:
        rows = self._rows("SELECT * FROM incidents WHERE id = ?", [incident_id])
        if not rows:
            raise NotFound(f"no incident {incident_id!r}")
        return _incident_row(rows[0])

    def new_incidents(self) -> list[NewIncident]:
        return [_incident_row(r) for r in self._rows("SELECT * FROM incidents ORDER BY created, id")]

    def mark_exported(self, ids: Collection[str]) -> None:
        with self._tx() as db:
            for i in ids:
                db.execute("UPDATE incidents SET exported = ? WHERE id = ?", [self._clock(), i])

    # -- forgetting --------------------------------------------------------------------------------
    def forget_vote(self, vote_id: int) -> dict[str, int]:
        with self._tx() as db:
            row = db.execute("SELECT diagnosis_id, user FROM votes WHERE id = ?", [vote_id]).fetchone()
            if row is None:
                raise NotFound(f"no vote {vote_id}")
            did, user = row
            out = {"votes": 1, "corrections": 0, "incidents": 0}
            out["corrections"], out["incidents"] = self._drop_corrections(db, "diagnosis_id = ? AND user = ?", [did, user])
            db.execute("DELETE FROM votes WHERE id = ?", [vote_id])
            db.execute("DELETE FROM vote_events WHERE vote_id = ? OR (diagnosis_id = ? AND user = ?)", [vote_id, did, user])
            self._derive(db, did)
            self._bump(db)
        return out

    def forget_user(self, user: str) -> dict[str, int]:
        with self._tx() as db:
            dids = {r[0] for r in db.execute("SELECT diagnosis_id FROM votes WHERE user = ? UNION "
                                             "SELECT diagnosis_id FROM corrections WHERE user = ?", [user, user])}
            authored = db.execute("SELECT COUNT(*) FROM incidents WHERE created_by = ?", [user]).fetchone()[0]
            if not dids and not authored:
                raise NotFound(f"no feedback from user {user!r}")
            n_votes = db.execute("SELECT COUNT(*) FROM votes WHERE user = ?", [user]).fetchone()[0]
            n_fix, n_inc = self._drop_corrections(db, "user = ?", [user])
            db.execute("DELETE FROM votes WHERE user = ?", [user])
            db.execute("DELETE FROM vote_events WHERE user = ?", [user])
            for (inc,) in db.execute("SELECT id FROM incidents WHERE created_by = ?", [user]).fetchall():
                n_inc += self._drop_incident(db, inc)
            for did in sorted(dids):
                self._derive(db, did)
            self._bump(db)
        return {"votes": n_votes, "corrections": n_fix, "incidents": n_inc}

    def forget_diagnosis(self, diagnosis_id: str) -> dict[str, int]:
        with self._tx() as db:
            self._require_diagnosis(db, diagnosis_id)
            n_votes = db.execute("SELECT COUNT(*) FROM votes WHERE diagnosis_id = ?", [diagnosis_id]).fetchone()[0]
            n_fix, n_inc = self._drop_corrections(db, "diagnosis_id = ?", [diagnosis_id])
            for (inc,) in db.execute("SELECT id FROM incidents WHERE diagnosis_id = ?", [diagnosis_id]).fetchall():
                n_inc += self._drop_incident(db, inc)
            db.execute("DELETE FROM examples WHERE diagnosis_id = ?", [diagnosis_id])
            db.execute("DELETE FROM quarantine WHERE text_hash = (SELECT excerpt_hash FROM diagnoses WHERE id = ?) AND "
                       "NOT EXISTS (SELECT 1 FROM diagnoses d WHERE d.excerpt_hash = quarantine.text_hash AND d.id != ?)",
                       [diagnosis_id, diagnosis_id])
            db.execute("DELETE FROM votes WHERE diagnosis_id = ?", [diagnosis_id])
            db.execute("DELETE FROM vote_events WHERE diagnosis_id = ?", [diagnosis_id])
            db.execute("DELETE FROM diagnoses WHERE id = ?", [diagnosis_id])
            self._bump(db)
        return {"diagnoses": 1, "votes": n_votes, "corrections": n_fix, "incidents": n_inc}

    def _drop_corrections(self, db: sqlite_utils.Database, where: str, params: list[Any]) -> tuple[int, int]:
        rows = db.execute(f"SELECT id, new_incident FROM corrections WHERE {where}", params).fetchall()
        db.execute(f"DELETE FROM corrections WHERE {where}", params)
        dropped = 0
        for _, inc in rows:
            if inc:
                dropped += self._drop_incident(db, inc)
        return len(rows), dropped

    def _drop_incident(self, db: sqlite_utils.Database, incident_id: str) -> int:
        """Remove a written incident once no correction points at it any more."""
        if db.execute("SELECT 1 FROM corrections WHERE new_incident = ? OR incident = ?",
                      [incident_id, incident_id]).fetchone():
            return 0
        return db.execute("DELETE FROM incidents WHERE id = ?", [incident_id]).rowcount

    # -- export ------------------------------------------------------------------------------------
    def export_rows(self, with_excerpt: bool = True) -> Iterator[dict[str, Any]]:
        """One row per vote: who, what, when, the answer it judged, the correction, whether it trains."""
        examples = {e.diagnosis_id: e for e in self.examples()}
        rows = self._rows(
            "SELECT v.id AS vote_id, v.diagnosis_id, v.user, v.direction, v.source, v.created, v.updated, v.throttled, "
            "d.team, d.channel, d.thread_ts, d.message_ts, d.category AS predicted, d.confidence, d.incident AS "
            "predicted_incident, d.model_version, d.excerpt_hash, d.excerpt, c.category AS corrected_category, "
            "c.incident AS corrected_incident, c.new_incident FROM votes v JOIN diagnoses d ON d.id = v.diagnosis_id "
            "LEFT JOIN corrections c ON c.diagnosis_id = v.diagnosis_id AND c.user = v.user ORDER BY v.id")
        for r in rows:
            ex = examples.get(r["diagnosis_id"])
            backs = ex is not None and r["vote_id"] in ex.vote_ids
            out = {
                "vote_id": r["vote_id"], "diagnosis_id": r["diagnosis_id"], "user": r["user"],
                "vote": "up" if r["direction"] > 0 else "down", "source": r["source"],
                "created": _iso(r["created"]), "updated": _iso(r["updated"]), "team": r["team"],
                "channel": r["channel"], "thread_ts": r["thread_ts"], "reply_ts": r["message_ts"],
                "predicted": r["predicted"], "confidence": r["confidence"], "predicted_incident": r["predicted_incident"],
                "model_version": r["model_version"],
                "corrected_category": r["corrected_category"] if r["direction"] < 0 else None,
                "corrected_incident": r["corrected_incident"] if r["direction"] < 0 else None,
                "new_incident": r["new_incident"] if r["direction"] < 0 else None,
                "trusted": self._allow.allows(r["user"]), "throttled": bool(r["throttled"]),
                "example_id": ex.id if backs else None, "example_label": ex.category if backs else None,
                "example_holdout": ex.holdout if backs else None, "excerpt_hash": r["excerpt_hash"],
            }
            if with_excerpt:
                out["excerpt"] = r["excerpt"]
            yield out

    # -- model versions ----------------------------------------------------------------------------
    def models(self) -> list[ModelRow]:
        return [_model_row(r) for r in self._rows("SELECT * FROM model_versions ORDER BY created, version")]

    def model(self, version: str) -> ModelRow | None:
        rows = self._rows("SELECT * FROM model_versions WHERE version = ?", [version])
        return _model_row(rows[0]) if rows else None

    def put_model(self, version: str, *, state: str, parent: str | None, created: float, training_hash: str | None,
                  examples: int | None, feedback_examples: int | None, metrics: dict[str, Any] | None = None,
                  gate: dict[str, Any] | None = None, note: str | None = None) -> None:
        if state not in MODEL_STATES:
            raise FeedbackError(f"unknown model state {state!r}")
        with self._tx() as db:
            db.execute("INSERT INTO model_versions (version, parent, state, created, activated, training_hash, examples, "
                       "feedback_examples, metrics, gate, note) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                       "ON CONFLICT (version) DO UPDATE SET state = excluded.state, gate = excluded.gate, "
                       "note = COALESCE(excluded.note, note), training_hash = COALESCE(excluded.training_hash, training_hash)",
                       [version, parent, state, created, self._clock() if state == "active" else None, training_hash,
                        examples, feedback_examples, json.dumps(metrics or {}), json.dumps(gate or {}), note])

    def set_model_state(self, version: str, state: str, note: str | None = None, gate: dict[str, Any] | None = None) -> None:
        if state not in MODEL_STATES:
            raise FeedbackError(f"unknown model state {state!r}")
        with self._tx() as db:
            if state == "active":
                db.execute("UPDATE model_versions SET state = 'retired' WHERE state = 'active' AND version != ?", [version])
            sets, params = ["state = ?"], [state]
            if state == "active":
                sets.append("activated = ?")
                params.append(self._clock())
            if note is not None:
                sets.append("note = ?")
                params.append(note)
            if gate is not None:
                sets.append("gate = ?")
                params.append(json.dumps(gate))
            cur = db.execute(f"UPDATE model_versions SET {', '.join(sets)} WHERE version = ?", [*params, version])
            if cur.rowcount == 0:
                raise NotFound(f"no model version {version!r} in the database")

    def meta_get(self, key: str) -> str | None:
        rows = self._rows("SELECT value FROM meta WHERE key = ?", [key])
        return rows[0]["value"] if rows else None

    def meta_set(self, key: str, value: str) -> None:
        with self._tx() as db:
            db.execute("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                       [key, value])

    # -- backup ------------------------------------------------------------------------------------
    def backup(self, dest: Path | str) -> Path:
        """A consistent copy while writers keep going (SQLite's online backup API), written atomically."""
        return backup_database(self.path, dest, lock=self._lock, source=self.db.conn)


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


# -- row helpers -------------------------------------------------------------------------------------
def _diag_row(r: dict[str, Any]) -> DiagnosisRow:
    return DiagnosisRow(
        id=r["id"], created=r["created"], team=r["team"], channel=r["channel"], thread_ts=r["thread_ts"],
        message_ts=r["message_ts"], user=r["user"], source=r["source"], excerpt=r["excerpt"],
        excerpt_hash=r["excerpt_hash"], category=r["category"], confidence=r["confidence"], incident=r["incident"],
        alternatives=json.loads(r["alternatives"] or "[]"), model_version=r["model_version"],
        diagnosis=json.loads(r["diagnosis"] or "{}"), blocks=json.loads(r["blocks"]) if r.get("blocks") else None)


def _incident_row(r: dict[str, Any]) -> NewIncident:
    return NewIncident(r["id"], r["category"], r["title"], r["cause"], r["first_action"],
                       tuple(json.loads(r["engines"] or "[]")), r["created"], r["created_by"], r["diagnosis_id"])


def _model_row(r: dict[str, Any]) -> ModelRow:
    return ModelRow(r["version"], r["parent"], r["state"], r["created"], r["activated"], r["training_hash"],
                    r["examples"], r["feedback_examples"], json.loads(r["metrics"] or "{}"), json.loads(r["gate"] or "{}"),
                    r["note"])


def _slug_id(title: str, db: sqlite_utils.Database) -> str:
    base = "fb-" + (re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:48].rstrip("-") or "incident")
    candidate, n = base, 2
    while db.execute("SELECT 1 FROM incidents WHERE id = ?", [candidate]).fetchone():
        candidate, n = f"{base}-{n}", n + 1
    return candidate


def _iso(t: float | None) -> str | None:
    if t is None:
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))
