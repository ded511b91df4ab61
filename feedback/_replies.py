"""Every answer the bot gave: the diagnosis, its redacted excerpt and where in Slack it was posted.

`Replies` is the bot's `ReplyRecorder`: it records each answered diagnosis and links it to the
reply's ts, committed before the caller goes on, so a vote on the reply always finds its answer.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import uuid
from typing import TYPE_CHECKING, Any
from collections.abc import Callable

from servetriage.storage import Database

from ._errors import NotFound

if TYPE_CHECKING:
    from servetriage.classifier import Diagnosis

log = logging.getLogger(__name__)

MAX_EXCERPT_CHARS = 256 * 1024
CLIP_MARK = "\n… [clipped by servetriage] …\n"
SEEN_BEFORE = 3   # earlier answers linked from a reply
THREAD_ANSWERS = 5  # how far back in a thread a follow-up looks for the answer that asked for it


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


def excerpt_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()


def clip_excerpt(text: str) -> str:
    """Keep the head and, mostly, the tail of a huge log: faults are usually near the end."""
    if len(text) <= MAX_EXCERPT_CHARS:
        return text
    head = MAX_EXCERPT_CHARS // 4
    tail = MAX_EXCERPT_CHARS - head - 40
    return text[:head] + CLIP_MARK + text[-tail:]


class Replies:
    def __init__(self, db: Database, clock: Callable[[], float],
                 model_version: Callable[[], str | None] | None = None) -> None:
        self._db = db
        self._clock = clock
        self._model_version = model_version

    def record(self, diagnosis: Diagnosis, excerpt: str, *, team: str | None, channel: str, thread_ts: str | None,
               user: str | None, source: str) -> str:
        """Keep one answered diagnosis (the log excerpt redacted) and return its id for the buttons."""
        from servetriage.classifier import redact  # noqa: PLC0415 (the engine's redactor, same rules as evidence)

        text = clip_excerpt(redact(excerpt or ""))
        did = uuid.uuid4().hex
        alternatives = [{"category": c.category, "incident": c.incident, "score": c.score} for c in diagnosis.top]
        version = None
        if self._model_version is not None:
            try:
                version = self._model_version()
            except Exception as exc:  # noqa: BLE001 — the version is a label, never worth losing the record over
                log.warning("recording a reply without its model version: %s", exc)
        with self._db.transaction() as tx:
            tx.execute(
                'INSERT INTO diagnoses (id, created, team, channel, thread_ts, message_ts, "user", source, excerpt, '
                "excerpt_hash, category, confidence, incident, alternatives, model_version, timings, diagnosis) "
                "VALUES (?, ?, ?, ?, ?, NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [did, self._clock(), team, channel, thread_ts, user, source, text, excerpt_hash(text),
                 diagnosis.category, float(diagnosis.confidence), diagnosis.incident.id if diagnosis.incident else None,
                 json.dumps(alternatives), version, json.dumps(diagnosis.timings_ms), json.dumps(diagnosis.to_dict())])
        return did

    def attach_reply(self, diagnosis_id: str, reply_ts: str) -> None:
        with self._db.transaction() as tx:
            tx.execute("UPDATE diagnoses SET message_ts = ? WHERE id = ?", [reply_ts, diagnosis_id])

    def set_blocks(self, diagnosis_id: str, blocks: list[dict[str, Any]]) -> None:
        """The reply's current layout, so a reaction can update it like a button click does."""
        with self._db.transaction() as tx:
            tx.execute("UPDATE diagnoses SET blocks = ? WHERE id = ?", [json.dumps(blocks), diagnosis_id])

    def get(self, diagnosis_id: str) -> DiagnosisRow:
        rows = self._db.query("SELECT * FROM diagnoses WHERE id = ?", [diagnosis_id])
        if not rows:
            raise NotFound(f"no diagnosis {diagnosis_id!r}")
        return _row(rows[0])

    def earlier(self, *, team: str | None, category: str, incident: str | None, limit: int = SEEN_BEFORE,
                channel: str | None = None, since: float | None = None) -> list[EarlierAnswer]:
        """The newest posted answers of this workspace to the same incident (else category), counting
        those on-call corrected to it; never across workspaces (optionally: one channel, a time on)."""
        match = ("(d.incident = ? OR (e.kind = 'corrected' AND e.incident = ?))" if incident else
                 "(d.category = ? OR (e.kind = 'corrected' AND e.category = ?))")
        key = incident or category
        rows = self._db.query(
            "SELECT d.id, d.created, d.channel, d.thread_ts, d.message_ts, d.category, e.kind, e.category AS label, "
            "(SELECT COUNT(*) FROM votes v WHERE v.diagnosis_id = d.id AND v.direction = 1) AS up, "
            "(SELECT COUNT(*) FROM votes v WHERE v.diagnosis_id = d.id AND v.direction = -1) AS down "
            "FROM diagnoses d LEFT JOIN examples e ON e.diagnosis_id = d.id "
            f"WHERE COALESCE(d.team, '') = ? AND d.message_ts IS NOT NULL AND {match} "
            f"{'AND d.channel = ? ' if channel is not None else ''}AND d.created >= ? "
            "ORDER BY d.created DESC, d.id LIMIT ?",
            [team or "", key, key, *([channel] if channel is not None else []), since or 0.0, int(limit)])
        return [EarlierAnswer(r["id"], float(r["created"]), r["channel"], r["thread_ts"], r["message_ts"], r["category"],
                              int(r["up"]), int(r["down"]),
                              r["label"] if r["kind"] == "corrected" and r["label"] != r["category"] else None)
                for r in rows]

    def asked_for_more(self, *, channel: str, thread_ts: str) -> str | None:
        """The excerpt of the thread's latest answer whose diagnosis said what was missing (another
        rank's log, the kernel log): a follow-up in the thread is read together with it."""
        rows = self._db.query("SELECT excerpt, diagnosis FROM diagnoses WHERE channel = ? AND thread_ts = ? "
                              "ORDER BY created DESC LIMIT ?", [channel, thread_ts, THREAD_ANSWERS])
        for r in rows:
            if (json.loads(r["diagnosis"] or "{}") or {}).get("missing"):
                return str(r["excerpt"])
        return None

    def by_reply(self, channel: str, reply_ts: str) -> DiagnosisRow | None:
        rows = self._db.query("SELECT * FROM diagnoses WHERE channel = ? AND message_ts = ?", [channel, reply_ts])
        return _row(rows[0]) if rows else None


@dataclasses.dataclass(frozen=True)
class EarlierAnswer:
    """An earlier answer in the same workspace to the same incident (or category), with its votes."""

    id: str
    created: float
    channel: str
    thread_ts: str | None
    message_ts: str
    category: str
    up: int
    down: int
    corrected_to: str | None   # the category on-call's agreed correction gave it


def _row(r: dict[str, Any]) -> DiagnosisRow:
    return DiagnosisRow(
        id=r["id"], created=r["created"], team=r["team"], channel=r["channel"], thread_ts=r["thread_ts"],
        message_ts=r["message_ts"], user=r["user"], source=r["source"], excerpt=r["excerpt"],
        excerpt_hash=r["excerpt_hash"], category=r["category"], confidence=r["confidence"], incident=r["incident"],
        alternatives=json.loads(r["alternatives"] or "[]"), model_version=r["model_version"],
        diagnosis=json.loads(r["diagnosis"] or "{}"), blocks=json.loads(r["blocks"]) if r.get("blocks") else None)
