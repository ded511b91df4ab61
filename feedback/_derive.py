"""Deriving a diagnosis's training example from its votes, inside the write that changed them.

Every feedback write ends by re-deriving the example of the diagnosis it touched (`derive`), so the
examples table always says what the current votes of trusted voters agree on; a change to what
trains bumps the `generation`, which the retrainer and the memory watch.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable

from servetriage.storage import Transaction

from ._rules import UNKNOWN, Allowlist, CorrectionView, Derived, Support, VoteView, derive, held_out, waits


@dataclasses.dataclass(frozen=True)
class Tally:
    up: int
    down: int
    label: Derived | None               # the agreed example, if the trusted voters agree
    suggested: tuple[tuple[str, int], ...] = ()  # corrections offered (category, count), best first
    waiting: str | None = None          # a correction waiting for a second voice (see `_rules`)


class AllowlistCache:
    """The allow-list as configured plus the cached members of its user groups (refreshed from Slack)."""

    def __init__(self, allowlist: Allowlist) -> None:
        self.current = allowlist

    def with_members(self, members: frozenset[str]) -> None:
        self.current = dataclasses.replace(self.current, group_members=members)


def support_of(alternatives: str | None, diagnosis: str | None) -> Support:
    """What a recorded answer supported: its candidates and its rule hits (`unknown` too when no rule
    matched: saying "no failure here" against a matched failure line needs a second voice)."""
    try:
        candidates = [(str(c["category"]), float(c.get("score") or 0.0)) for c in json.loads(alternatives or "[]")]
        rules = list((json.loads(diagnosis or "{}").get("passes") or {}).get("rules") or {})
    except (ValueError, TypeError, AttributeError, KeyError):
        return Support()  # an answer recorded without them: nothing to hold a correction against
    return Support.of(candidates + ([] if rules else [(UNKNOWN, 1.0)]), rules)


class Derivation:
    def __init__(self, trust: AllowlistCache, clock: Callable[[], float]) -> None:
        self._trust = trust
        self._clock = clock

    def derive(self, tx: Transaction, diagnosis_id: str) -> None:
        """Re-derive the diagnosis's example from its current votes; bump the generation on any change."""
        drow = tx.one("SELECT category, incident, excerpt_hash, alternatives, diagnosis FROM diagnoses WHERE id = ?",
                      [diagnosis_id])
        old = tx.one("SELECT category, incident, kind, holdout, vote_ids, correction_ids FROM examples "
                     "WHERE diagnosis_id = ?", [diagnosis_id])
        new = None
        if drow is not None:
            votes, fixes = self._views(tx, diagnosis_id)
            new = derive(drow[0], drow[1], votes, fixes, self._trust.current, support_of(drow[3], drow[4]))
        now = self._clock()
        if new is None:
            if old is not None:
                tx.execute("DELETE FROM examples WHERE diagnosis_id = ?", [diagnosis_id])
                self.bump(tx)
            return
        holdout = int(held_out(drow[2], new.kind)) if drow is not None else 0
        values = (new.category, new.incident, new.kind, holdout, json.dumps(list(new.vote_ids)),
                  json.dumps(list(new.correction_ids)))
        if old is not None and tuple(old) == values:
            return
        tx.execute("INSERT INTO examples (diagnosis_id, category, incident, kind, holdout, vote_ids, correction_ids, "
                   "created, updated) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (diagnosis_id) DO UPDATE SET "
                   "category = excluded.category, incident = excluded.incident, kind = excluded.kind, "
                   "holdout = excluded.holdout, vote_ids = excluded.vote_ids, correction_ids = excluded.correction_ids, "
                   "updated = excluded.updated", [diagnosis_id, *values, now, now])
        if old is None or tuple(old[:4]) != values[:4]:
            self.bump(tx)

    @staticmethod
    def bump(tx: Transaction) -> None:
        tx.execute("INSERT INTO meta (key, value) VALUES ('generation', '1') ON CONFLICT (key) DO UPDATE SET "
                   "value = CAST(CAST(meta.value AS INTEGER) + 1 AS TEXT)")

    def tally(self, tx: Transaction, diagnosis_id: str) -> Tally:
        up = down = 0
        for direction, n in tx.all("SELECT direction, COUNT(*) FROM votes WHERE diagnosis_id = ? GROUP BY direction",
                                   [diagnosis_id]):
            if direction > 0:
                up = int(n)
            else:
                down = int(n)
        label = None
        ex = tx.one("SELECT category, incident, kind, vote_ids, correction_ids FROM examples WHERE diagnosis_id = ?",
                    [diagnosis_id])
        if ex is not None:
            label = Derived(ex[0], ex[1], ex[2], tuple(json.loads(ex[3])), tuple(json.loads(ex[4])))
        suggested = tuple((r[0], int(r[1])) for r in tx.all(
            'SELECT c.category, COUNT(*) AS n FROM corrections c JOIN votes v ON v.diagnosis_id = c.diagnosis_id '
            'AND v."user" = c."user" AND v.direction = -1 WHERE c.diagnosis_id = ? GROUP BY c.category '
            'ORDER BY n DESC, c.category', [diagnosis_id]))
        waiting = None
        if label is None and suggested:
            drow = tx.one("SELECT category, alternatives, diagnosis FROM diagnoses WHERE id = ?", [diagnosis_id])
            votes, fixes = self._views(tx, diagnosis_id)
            trusted = {v.user for v in votes if not v.throttled and self._trust.current.allows(v.user)}
            backers = [f.user for f in fixes if f.category == suggested[0][0] and f.user in trusted]
            if drow is not None and backers and waits(suggested[0][0], drow[0], backers, support_of(drow[1], drow[2]),
                                                      self._trust.current):
                waiting = suggested[0][0]
        return Tally(up, down, label, suggested, waiting)

    @staticmethod
    def _views(tx: Transaction, diagnosis_id: str) -> tuple[list[VoteView], list[CorrectionView]]:
        votes = [VoteView(r[0], r[1], r[2], bool(r[3])) for r in tx.all(
            'SELECT id, "user", direction, throttled FROM votes WHERE diagnosis_id = ? ORDER BY id', [diagnosis_id])]
        fixes = [CorrectionView(r[0], r[1], r[2], r[3]) for r in tx.all(
            'SELECT id, "user", category, incident FROM corrections WHERE diagnosis_id = ? ORDER BY id', [diagnosis_id])]
        return votes, fixes
