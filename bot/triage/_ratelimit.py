"""Pacing replies to Slack's own limit: about one message per second per channel.

An incident storm is answered, not dropped: each channel has a next free slot; a reply that would
come too early waits for it (a short wait in the worker), or its job goes back to the queue until
then (a long one), so every paste gets its answer in turn.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

INLINE_WAIT_S = 2.0     # a wait up to this is slept in the worker; a longer one defers the job


class Defer(Exception):
    """The job's next reply must wait `seconds`: back to the queue until then."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"deferred {seconds:.1f} s")
        self.seconds = seconds


class ChannelPacer:
    """`per_minute` replies per channel, evenly spaced; 0 means no pacing."""

    def __init__(self, per_minute: int, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.per_minute = per_minute
        self.interval = 60.0 / per_minute if per_minute > 0 else 0.0
        self._clock = clock
        self._sleep = sleep
        self._next: dict[str, float] = {}
        self._lock = threading.Lock()

    def wait(self, channel: str) -> float:
        """Take the channel's next slot: sleep until it when it is near (returns the seconds slept),
        else raise `Defer`."""
        if self.interval <= 0:
            return 0.0
        with self._lock:
            now = self._clock()
            slot = max(now, self._next.get(channel, now))
            delay = slot - now
            if delay > INLINE_WAIT_S:
                raise Defer(delay)
            self._next[channel] = slot + self.interval
        if delay > 0:
            self._sleep(delay)
        return delay
