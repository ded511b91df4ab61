"""👍/👎 and corrections: one vote per user per diagnosis (changeable), its history, the tally.

Each write is one transaction that also re-derives the diagnosis's training example, committed
durably before the method returns: once a caller has its answer (and acknowledges Slack), the vote
survives a crash. Writers on one diagnosis take turns (`serialize`), so two replicas receiving two
clicks at once still count them once each.
"""

from __future__ import annotations

import dataclasses
import json
import time
from typing import Any
from collections.abc import Callable, Collection, Iterator

from servetriage.storage import Database, Transaction

from ._derive import AllowlistCache, Derivation, Tally
from ._errors import FeedbackError, NotFound
from ._incidents import Incidents, NewIncident
from ._rules import RateLimit

UP, DOWN = 1, -1
ENGINES = ("sglang", "vllm", "trtllm")


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
class Labels:
    """What a correction may name: the corpus's categories and incidents (None: anything)."""

    categories: frozenset[str] | None = None
    incidents: frozenset[str] | None = None

    @classmethod
    def of(cls, categories: Collection[str] | None, incidents: Collection[str] | None) -> Labels:
        return cls(frozenset(categories) if categories is not None else None,
                   frozenset(incidents) if incidents is not None else None)

    def check(self, category: str) -> None:
        if not category:
            raise FeedbackError("a correction needs a category")
        if self.categories is not None and category not in self.categories:
            raise FeedbackError(f"unknown category {category!r}")


NO_LABELS = Labels()
DEFAULT_RATE_LIMIT = RateLimit()


class Votes:
    def __init__(self, db: Database, derivation: Derivation, trust: AllowlistCache, incidents: Incidents, *,
                 labels: Labels = NO_LABELS, rate_limit: RateLimit = DEFAULT_RATE_LIMIT,
                 clock: Callable[[], float] = time.time) -> None:
        self._db = db
        self._derivation = derivation
        self._trust = trust
        self._incidents = incidents
        self.labels = labels
        self.rate_limit = rate_limit
        self._clock = clock

    # -- writes ----------------------------------------------------------------------------------
    def vote(self, diagnosis_id: str, user: str, up: bool, *, source: str = "button") -> VoteResult:
        """Cast or change `user`'s vote on a diagnosis (one per user per diagnosis)."""
        if not user:
            raise FeedbackError("a vote needs a user id")
        with self._db.transaction() as tx:
            self._require_diagnosis(tx, diagnosis_id)
            return self._cast(tx, diagnosis_id, user, UP if up else DOWN, source)

    def retract(self, diagnosis_id: str, user: str, *, direction: int | None = None, source: str | None = None) -> bool:
        """Withdraw a vote (a removed reaction); only when it still is the vote that reaction cast."""
        with self._db.transaction() as tx:
            tx.serialize("diagnosis", diagnosis_id)
            row = tx.one('SELECT id, direction, source FROM votes WHERE diagnosis_id = ? AND "user" = ?',
                         [diagnosis_id, user])
            if row is None or (direction is not None and row[1] != direction) or (source is not None and row[2] != source):
                return False
            tx.execute("DELETE FROM votes WHERE id = ?", [row[0]])
            tx.execute('INSERT INTO vote_events (vote_id, diagnosis_id, "user", direction, source, at, throttled) '
                       "VALUES (?, ?, ?, 0, ?, ?, 0)", [row[0], diagnosis_id, user, source or "retract", self._clock()])
            self._derivation.derive(tx, diagnosis_id)
        return True

    def correct(self, diagnosis_id: str, user: str, category: str, incident: str | None = None, *,
                source: str = "button") -> VoteResult:
        """`user` says the answer is `category` (optionally a specific incident): a 👎 plus the right label."""
        if not user:
            raise FeedbackError("a correction needs a user id")
        self.labels.check(category)
        with self._db.transaction() as tx:
            self._require_diagnosis(tx, diagnosis_id)
            known = self.labels.incidents
            if incident and known is not None and incident not in known \
                    and tx.one("SELECT 1 FROM incidents WHERE id = ?", [incident]) is None:
                raise FeedbackError(f"unknown incident {incident!r}")
            self._put_correction(tx, diagnosis_id, user, category, incident, None)
            return self._cast(tx, diagnosis_id, user, DOWN, source)

    def new_incident(self, diagnosis_id: str, user: str, *, category: str, title: str, cause: str, first_action: str,
                     engines: tuple[str, ...] = (), source: str = "modal") -> tuple[NewIncident, VoteResult]:
        """A correction to an incident on-call wrote just now; it joins the overlay and the export."""
        fields = {"title": title, "cause": cause, "first_action": first_action}
        for name, value in fields.items():
            if not isinstance(value, str) or not value.strip():
                raise FeedbackError(f"a new incident needs a {name.replace('_', ' ')}")
        self.labels.check(category)
        now = self._clock()
        with self._db.transaction() as tx:
            row = self._require_diagnosis(tx, diagnosis_id)
            if not engines:
                eng = (json.loads(row["diagnosis"] or "{}") or {}).get("engine")
                engines = (eng,) if eng in ENGINES else ("any",)
            tx.serialize("incident", "new")
            inc_id = Incidents.new_id(tx, title)
            tx.execute("INSERT INTO incidents (id, category, title, cause, first_action, engines, created, created_by, "
                       "diagnosis_id, exported) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)",
                       [inc_id, category, title.strip(), cause.strip(), first_action.strip(), json.dumps(list(engines)),
                        now, user, diagnosis_id])
            self._put_correction(tx, diagnosis_id, user, category, None, inc_id)
            res = self._cast(tx, diagnosis_id, user, DOWN, source)
        return self._incidents.get(inc_id), res

    # -- reads -----------------------------------------------------------------------------------
    def tally(self, diagnosis_id: str) -> Tally:
        with self._db.transaction() as tx:
            return self._derivation.tally(tx, diagnosis_id)

    def all(self, diagnosis_id: str | None = None) -> list[dict[str, Any]]:
        if diagnosis_id is None:
            return self._db.query("SELECT * FROM votes ORDER BY id")
        return self._db.query("SELECT * FROM votes WHERE diagnosis_id = ? ORDER BY id", [diagnosis_id])

    def corrections(self, diagnosis_id: str | None = None) -> list[dict[str, Any]]:
        if diagnosis_id is None:
            return self._db.query("SELECT * FROM corrections ORDER BY id")
        return self._db.query("SELECT * FROM corrections WHERE diagnosis_id = ? ORDER BY id", [diagnosis_id])

    def export_rows(self, examples: dict[str, Any], with_excerpt: bool = True) -> Iterator[dict[str, Any]]:
        """One row per vote: who, what, when, the answer it judged, the correction, whether it trains.

        `examples` maps a diagnosis id to its `FeedbackExample` (the training set's current view)."""
        rows = self._db.query(
            'SELECT v.id AS vote_id, v.diagnosis_id, v."user", v.direction, v.source, v.created, v.updated, '
            "v.throttled, d.team, d.channel, d.thread_ts, d.message_ts, d.category AS predicted, d.confidence, "
            "d.incident AS predicted_incident, d.model_version, d.excerpt_hash, d.excerpt, "
            "c.category AS corrected_category, c.incident AS corrected_incident, c.new_incident "
            'FROM votes v JOIN diagnoses d ON d.id = v.diagnosis_id LEFT JOIN corrections c '
            'ON c.diagnosis_id = v.diagnosis_id AND c."user" = v."user" ORDER BY v.id')
        allow = self._trust.current
        for r in rows:
            found = examples.get(r["diagnosis_id"])
            ex = found if found is not None and r["vote_id"] in found.vote_ids else None  # the example it backs
            down = r["direction"] < 0
            out = {
                "vote_id": r["vote_id"], "diagnosis_id": r["diagnosis_id"], "user": r["user"],
                "vote": "up" if r["direction"] > 0 else "down", "source": r["source"],
                "created": _iso(r["created"]), "updated": _iso(r["updated"]), "team": r["team"],
                "channel": r["channel"], "thread_ts": r["thread_ts"], "reply_ts": r["message_ts"],
                "predicted": r["predicted"], "confidence": r["confidence"], "predicted_incident": r["predicted_incident"],
                "model_version": r["model_version"],
                "corrected_category": r["corrected_category"] if down else None,
                "corrected_incident": r["corrected_incident"] if down else None,
                "new_incident": r["new_incident"] if down else None,
                "trusted": allow.allows(r["user"]), "throttled": bool(r["throttled"]),
                "example_id": ex.id if ex else None, "example_label": ex.category if ex else None,
                "example_holdout": ex.holdout if ex else None, "excerpt_hash": r["excerpt_hash"],
            }
            if with_excerpt:
                out["excerpt"] = r["excerpt"]
            yield out

    # -- the parts of a write ----------------------------------------------------------------------
    @staticmethod
    def _require_diagnosis(tx: Transaction, diagnosis_id: str) -> dict[str, Any]:
        tx.serialize("diagnosis", diagnosis_id)
        rows = tx.rows("SELECT * FROM diagnoses WHERE id = ?", [diagnosis_id])
        if not rows:
            raise NotFound(f"no diagnosis {diagnosis_id!r}")
        return rows[0]

    def _put_correction(self, tx: Transaction, diagnosis_id: str, user: str, category: str,
                        incident: str | None, new_incident: str | None) -> None:
        now = self._clock()
        tx.execute('INSERT INTO corrections (diagnosis_id, "user", category, incident, new_incident, created, updated) '
                   'VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (diagnosis_id, "user") DO UPDATE SET '
                   "category = excluded.category, incident = excluded.incident, new_incident = excluded.new_incident, "
                   "updated = excluded.updated",
                   [diagnosis_id, user, category, incident or new_incident, new_incident, now, now])

    def _cast(self, tx: Transaction, diagnosis_id: str, user: str, direction: int, source: str) -> VoteResult:
        now = self._clock()
        prev = tx.one('SELECT id, direction, throttled FROM votes WHERE diagnosis_id = ? AND "user" = ?',
                      [diagnosis_id, user])
        recent = [r[0] for r in tx.all('SELECT at FROM vote_events WHERE "user" = ? AND at > ?',
                                       [user, now - self.rate_limit.longest_window])]
        throttled = self.rate_limit.exceeded(recent, now)
        if prev is not None and prev[1] == direction:
            # The same vote again (a second click, a reaction after the button): nothing to change,
            # but a re-cast of a throttled vote may lift the throttle once the window allows it.
            vote_id, changed = int(prev[0]), False
            throttled = bool(prev[2]) and throttled
            if bool(prev[2]) != throttled:
                tx.execute("UPDATE votes SET throttled = ?, updated = ? WHERE id = ?", [int(throttled), now, vote_id])
        elif prev is not None:
            vote_id, changed = int(prev[0]), True
            tx.execute("UPDATE votes SET direction = ?, source = ?, updated = ?, throttled = ? WHERE id = ?",
                       [direction, source, now, int(throttled), vote_id])
        else:
            vote_id = tx.insert('INSERT INTO votes (diagnosis_id, "user", direction, source, created, updated, '
                                "throttled) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id",
                                [diagnosis_id, user, direction, source, now, now, int(throttled)])
            changed = True
        tx.execute('INSERT INTO vote_events (vote_id, diagnosis_id, "user", direction, source, at, throttled) '
                   "VALUES (?, ?, ?, ?, ?, ?, ?)", [vote_id, diagnosis_id, user, direction, source, now, int(throttled)])
        self._derivation.derive(tx, diagnosis_id)
        return VoteResult(vote_id, diagnosis_id, user, direction, changed, throttled, self._trust.current.allows(user),
                          self._derivation.tally(tx, diagnosis_id))


def _iso(t: float | None) -> str | None:
    if t is None:
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))
