"""The reply recorder used when no feedback store is plugged in: ids for the buttons, kept in memory.

The feedback store (issue 6) replaces it through `build_app(recorder=...)`; this one keeps the
last few thousand diagnoses so that a listener added through `extensions` can still look one up.
"""

from __future__ import annotations

import dataclasses
import threading
import uuid
from collections import OrderedDict
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from servetriage.classifier import Diagnosis


@dataclasses.dataclass
class RecordedReply:
    diagnosis: Diagnosis
    excerpt: str
    team: str | None
    channel: str
    thread_ts: str
    user: str | None
    source: str
    reply_ts: str | None = None


class InMemoryRecorder:
    """A bounded, thread-safe `ReplyRecorder`: the oldest entries go first once `capacity` is reached."""

    def __init__(self, capacity: int = 2000) -> None:
        self._capacity = capacity
        self._items: OrderedDict[str, RecordedReply] = OrderedDict()
        self._lock = threading.Lock()

    def record(self, diagnosis: Diagnosis, excerpt: str, *, team: str | None, channel: str, thread_ts: str,
               user: str | None, source: str) -> str:
        diagnosis_id = uuid.uuid4().hex
        with self._lock:
            self._items[diagnosis_id] = RecordedReply(diagnosis, excerpt, team, channel, thread_ts, user, source)
            while len(self._items) > self._capacity:
                self._items.popitem(last=False)
        return diagnosis_id

    def attach_reply(self, diagnosis_id: str, reply_ts: str) -> None:
        with self._lock:
            item = self._items.get(diagnosis_id)
            if item is not None:
                item.reply_ts = reply_ts

    def get(self, diagnosis_id: str) -> RecordedReply | None:
        with self._lock:
            return self._items.get(diagnosis_id)

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)
