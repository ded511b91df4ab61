"""Forgetting on request: a vote, everything one user gave, or a whole answered diagnosis.

Whatever a forgotten vote or correction made trainable is re-derived in the same transaction, and
incidents written through a correction go when no correction points at them any more.
"""

from __future__ import annotations

from typing import Any

from servetriage.storage import Database, Transaction

from ._derive import Derivation
from ._errors import NotFound


class Forgetting:
    def __init__(self, db: Database, derivation: Derivation) -> None:
        self._db = db
        self._derivation = derivation

    def vote(self, vote_id: int) -> dict[str, int]:
        with self._db.transaction() as tx:
            row = tx.one('SELECT diagnosis_id, "user" FROM votes WHERE id = ?', [vote_id])
            if row is None:
                raise NotFound(f"no vote {vote_id}")
            did, user = row
            tx.serialize("diagnosis", did)
            out = {"votes": 1, "corrections": 0, "incidents": 0}
            out["corrections"], out["incidents"] = self._drop_corrections(tx, 'diagnosis_id = ? AND "user" = ?', [did, user])
            tx.execute("DELETE FROM votes WHERE id = ?", [vote_id])
            tx.execute('DELETE FROM vote_events WHERE vote_id = ? OR (diagnosis_id = ? AND "user" = ?)', [vote_id, did, user])
            self._derivation.derive(tx, did)
            Derivation.bump(tx)
        return out

    def user(self, user: str) -> dict[str, int]:
        with self._db.transaction() as tx:
            tx.serialize("user", user)
            dids = {r[0] for r in tx.all('SELECT diagnosis_id FROM votes WHERE "user" = ? UNION '
                                         'SELECT diagnosis_id FROM corrections WHERE "user" = ?', [user, user])}
            authored = int(tx.scalar("SELECT COUNT(*) FROM incidents WHERE created_by = ?", [user]))
            if not dids and not authored:
                raise NotFound(f"no feedback from user {user!r}")
            n_votes = int(tx.scalar('SELECT COUNT(*) FROM votes WHERE "user" = ?', [user]))
            n_fix, n_inc = self._drop_corrections(tx, '"user" = ?', [user])
            tx.execute('DELETE FROM votes WHERE "user" = ?', [user])
            tx.execute('DELETE FROM vote_events WHERE "user" = ?', [user])
            for (inc,) in tx.all("SELECT id FROM incidents WHERE created_by = ?", [user]):
                n_inc += self._drop_incident(tx, inc)
            for did in sorted(dids):
                self._derivation.derive(tx, did)
            Derivation.bump(tx)
        return {"votes": n_votes, "corrections": n_fix, "incidents": n_inc}

    def diagnosis(self, diagnosis_id: str) -> dict[str, int]:
        with self._db.transaction() as tx:
            tx.serialize("diagnosis", diagnosis_id)
            if tx.one("SELECT 1 FROM diagnoses WHERE id = ?", [diagnosis_id]) is None:
                raise NotFound(f"no diagnosis {diagnosis_id!r}")
            n_votes = int(tx.scalar("SELECT COUNT(*) FROM votes WHERE diagnosis_id = ?", [diagnosis_id]))
            n_fix, n_inc = self._drop_corrections(tx, "diagnosis_id = ?", [diagnosis_id])
            for (inc,) in tx.all("SELECT id FROM incidents WHERE diagnosis_id = ?", [diagnosis_id]):
                n_inc += self._drop_incident(tx, inc)
            tx.execute("DELETE FROM examples WHERE diagnosis_id = ?", [diagnosis_id])
            tx.execute("DELETE FROM quarantine WHERE text_hash = (SELECT excerpt_hash FROM diagnoses WHERE id = ?) AND "
                       "NOT EXISTS (SELECT 1 FROM diagnoses d WHERE d.excerpt_hash = quarantine.text_hash AND d.id != ?)",
                       [diagnosis_id, diagnosis_id])
            tx.execute("DELETE FROM votes WHERE diagnosis_id = ?", [diagnosis_id])
            tx.execute("DELETE FROM vote_events WHERE diagnosis_id = ?", [diagnosis_id])
            tx.execute("DELETE FROM diagnoses WHERE id = ?", [diagnosis_id])
            Derivation.bump(tx)
        return {"diagnoses": 1, "votes": n_votes, "corrections": n_fix, "incidents": n_inc}

    def _drop_corrections(self, tx: Transaction, where: str, params: list[Any]) -> tuple[int, int]:
        rows = tx.all(f"SELECT id, new_incident FROM corrections WHERE {where}", params)
        tx.execute(f"DELETE FROM corrections WHERE {where}", params)
        dropped = 0
        for _, inc in rows:
            if inc:
                dropped += self._drop_incident(tx, inc)
        return len(rows), dropped

    @staticmethod
    def _drop_incident(tx: Transaction, incident_id: str) -> int:
        """Remove a written incident once no correction points at it any more."""
        if tx.one("SELECT 1 FROM corrections WHERE new_incident = ? OR incident = ?", [incident_id, incident_id]):
            return 0
        return tx.execute("DELETE FROM incidents WHERE id = ?", [incident_id])
