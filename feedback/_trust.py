"""Whose votes train: the allow-list, its user groups' members cached in the database, and the
re-derivation of every example when who is trusted changed."""

from __future__ import annotations

from collections.abc import Callable, Collection

from servetriage.storage import Database

from ._derive import AllowlistCache, Derivation
from ._errors import FeedbackError
from ._rules import Allowlist, is_group_id


class TrustedVoters:
    def __init__(self, db: Database, cache: AllowlistCache, derivation: Derivation, clock: Callable[[], float]) -> None:
        self._db = db
        self._cache = cache
        self._derivation = derivation
        self._clock = clock

    @property
    def allowlist(self) -> Allowlist:
        return self._cache.current

    def load(self) -> None:
        """Read the cached group members; re-derive every example if trust changed since the last run."""
        self._cache.with_members(self._members(self._cache.current))
        self._rederive_if_changed()

    def set_group_members(self, group_id: str, members: Collection[str]) -> None:
        """Cache a user group's members (the Slack side resolves them); re-derives when trust changed."""
        if not is_group_id(group_id):
            raise FeedbackError(f"{group_id!r} is not a user-group id")
        now = self._clock()
        with self._db.transaction() as tx:
            tx.execute("DELETE FROM allowlist_members WHERE group_id = ?", [group_id])
            for m in sorted(set(members)):
                tx.execute("INSERT INTO allowlist_members (group_id, user_id, fetched) VALUES (?, ?, ?)",
                           [group_id, m, now])
        self.load()

    def _members(self, allow: Allowlist) -> frozenset[str]:
        groups = allow.groups
        if not groups:
            return frozenset()
        marks = ",".join("?" * len(groups))
        return frozenset(r["user_id"] for r in self._db.query(
            f"SELECT user_id FROM allowlist_members WHERE group_id IN ({marks})", list(groups)))

    def _rederive_if_changed(self) -> None:
        fp = self._cache.current.fingerprint
        rows = self._db.query("SELECT value FROM meta WHERE key = 'allowlist'")
        if rows and rows[0]["value"] == fp:
            return
        with self._db.transaction() as tx:
            tx.serialize("trust", "rederive")
            for (did,) in tx.all("SELECT DISTINCT diagnosis_id FROM votes"):
                self._derivation.derive(tx, did)
            tx.execute("INSERT INTO meta (key, value) VALUES ('allowlist', ?) ON CONFLICT (key) DO UPDATE SET "
                       "value = excluded.value", [fp])
