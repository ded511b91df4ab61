"""At most N replies per channel per minute, so an incident storm does not become a bot storm."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable


class ChannelRateLimiter:
    """A sliding one-minute window per channel; `allow()` takes a slot when one is free."""

    def __init__(self, per_minute: int, clock: Callable[[], float] = time.monotonic, window_s: float = 60.0) -> None:
        self.per_minute = per_minute
        self._clock = clock
        self._window = window_s
        self._sent: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def allow(self, channel: str) -> bool:
        if self.per_minute <= 0:
            return True
        now = self._clock()
        with self._lock:
            q = self._sent.setdefault(channel, deque())
            while q and now - q[0] >= self._window:
                q.popleft()
            if len(q) >= self.per_minute:
                return False
            q.append(now)
            return True
