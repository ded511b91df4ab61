"""Who may teach the model, how fast, and when votes agree enough to make a training example.

Pure functions and small value objects: the store applies them inside its transactions.

* Allow-list: when `SERVETRIAGE_TRAINERS` is set, only those user ids (or members of those user
  groups, ids starting with `S`) train the model. Everyone's votes are still stored.
* Rate limit: a user's votes beyond the limits (counted over the user's vote history in sliding
  windows) are stored but marked `throttled` and do not train.
* Agreement: a label becomes an example only when the trusted voters who back it outnumber every
  trusted voter who expressed another view. A 👍 backs the bot's answer; a 👎 with a correction
  backs the corrected label; a bare 👎 backs nothing but still counts against the answer. So one
  voter cannot flip what others confirmed, and a 1-1 split teaches nothing until someone else votes.
* Corroboration: a correction to a category the answer gave no support to (no rule matched it, no
  pass scored it among the candidates: `Support`) waits for a second trusted voice before it teaches,
  unless it comes from a trainer the allow-list names. A careless click names such a category far
  more often than a real correction does (the true cause is usually among the "might be"s); waiting
  costs a real correction one more click and keeps a careless one out of the memory and the model.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections import Counter
from collections.abc import Iterable, Sequence

HOLDOUT_SHARE = 5  # one confirmed example in five is held out for the gate, chosen by its content hash
UNKNOWN = "unknown"
SUPPORT_SCORE = 0.02   # a candidate scored below this had no support from any pass
SECOND_VOICE = 2       # trusted voices an uncorroborated correction needs (or one named trainer)


@dataclasses.dataclass(frozen=True)
class Support:
    """The categories an answer itself gave some support to: its candidates scoring at least
    `SUPPORT_SCORE` and every category a rule matched. `None` of it known: everything is supported."""

    categories: frozenset[str] | None = None

    @classmethod
    def of(cls, candidates: Iterable[tuple[str, float]], rules: Iterable[str] = ()) -> Support:
        return cls(frozenset(c for c, s in candidates if s >= SUPPORT_SCORE) | frozenset(rules))

    def backs(self, category: str) -> bool:
        return self.categories is None or category in self.categories


@dataclasses.dataclass(frozen=True)
class RateLimit:
    """At most `limit` vote actions per `window_s` seconds per user (each window checked)."""

    windows: tuple[tuple[float, int], ...] = ((60.0, 12), (3600.0, 120), (86400.0, 600))

    @classmethod
    def off(cls) -> RateLimit:
        return cls(())

    def exceeded(self, recent_at: Sequence[float], now: float) -> bool:
        """True when one more action at `now` would go over a window, given the earlier action times."""
        return any(sum(1 for t in recent_at if t > now - window) >= limit for window, limit in self.windows)

    @property
    def longest_window(self) -> float:
        return max((w for w, _ in self.windows), default=0.0)


@dataclasses.dataclass(frozen=True)
class Allowlist:
    """User ids and user-group ids whose votes train; empty allows everyone."""

    entries: tuple[str, ...] = ()
    group_members: frozenset[str] = frozenset()  # resolved members of the groups among `entries`

    @property
    def groups(self) -> tuple[str, ...]:
        return tuple(e for e in self.entries if is_group_id(e))

    @property
    def open(self) -> bool:
        return not self.entries

    def allows(self, user: str) -> bool:
        return self.open or user in self.entries or user in self.group_members

    def names(self, user: str) -> bool:
        """The list names this user (or a group of theirs): a trainer, not just anyone on an open list."""
        return not self.open and self.allows(user)

    @property
    def fingerprint(self) -> str:
        raw = "\n".join(sorted(self.entries)) + "\n--\n" + "\n".join(sorted(self.group_members))
        return hashlib.sha256(raw.encode()).hexdigest()[:16]


def is_group_id(entry: str) -> bool:
    """Slack user-group ids start with S (user ids with U or W)."""
    return entry.startswith("S")


@dataclasses.dataclass(frozen=True)
class VoteView:
    id: int
    user: str
    direction: int          # +1 or -1
    throttled: bool


@dataclasses.dataclass(frozen=True)
class CorrectionView:
    id: int
    user: str
    category: str
    incident: str | None    # a corpus incident id, or a new incident's id


@dataclasses.dataclass(frozen=True)
class Derived:
    """The example a diagnosis's feedback supports, and the votes behind it."""

    category: str
    incident: str | None
    kind: str               # "confirmed" (the bot was right) or "corrected"
    vote_ids: tuple[int, ...]
    correction_ids: tuple[int, ...]


def derive(predicted: str, predicted_incident: str | None, votes: Iterable[VoteView],
           corrections: Iterable[CorrectionView], allow: Allowlist, support: Support = Support()) -> Derived | None:
    """The agreed label of one diagnosis, or None when its trusted voters do not agree on one (or a
    correction the answer gave no support to waits for its second voice)."""
    trusted = {v.user: v for v in votes if not v.throttled and allow.allows(v.user)}
    if not trusted:
        return None
    fixes = {c.user: c for c in corrections if c.user in trusted and trusted[c.user].direction < 0}
    backing: dict[str, list[str]] = {}  # category -> users backing it
    for user, v in trusted.items():
        if v.direction > 0:
            backing.setdefault(predicted, []).append(user)
        elif user in fixes:
            backing.setdefault(fixes[user].category, []).append(user)
    for category, users in backing.items():
        against = len(trusted) - len(users)
        if len(users) <= against or waits(category, predicted, users, support, allow):
            continue
        up_users = [u for u in users if trusted[u].direction > 0]
        fix_users = [u for u in users if u in fixes]
        incident = _incident(category, predicted, predicted_incident, [fixes[u] for u in fix_users], len(up_users))
        kind = "confirmed" if category == predicted and not fix_users else "corrected"
        return Derived(category, incident, kind, tuple(sorted(trusted[u].id for u in users)),
                       tuple(sorted(fixes[u].id for u in fix_users)))
    return None


def waits(category: str, predicted: str, users: Sequence[str], support: Support, allow: Allowlist) -> bool:
    """A correction to `category` that needs another voice before it teaches (see Corroboration)."""
    if category == predicted or predicted == UNKNOWN or support.backs(category) or any(allow.names(u) for u in users):
        return False  # (an `unknown` answer claimed nothing a correction could overturn)
    return len(users) < SECOND_VOICE


def _incident(category: str, predicted: str, predicted_incident: str | None, fixes: Sequence[CorrectionView],
              ups: int) -> str | None:
    named = Counter(c.incident for c in fixes if c.incident)
    if category == predicted and predicted_incident:
        named[predicted_incident] += ups
    if not named:
        return None
    return sorted(named.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]


def held_out(excerpt_hash: str, kind: str) -> bool:
    """A fixed share of confirmed examples is kept for the gate and never trained on."""
    if kind != "confirmed":
        return False
    return int(hashlib.sha256(("gate:" + excerpt_hash).encode()).hexdigest()[:8], 16) % HOLDOUT_SHARE == 0
