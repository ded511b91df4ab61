"""The bounded worker pool: `settings.workers` threads and a bounded queue in front of them.

A plain ThreadPoolExecutor queues without limit; under a flood that is memory and minutes of
latency nobody asked for. Here a submission beyond the queue bound is refused at once, so the
listener can say "busy" instead of answering an hour late.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)


class WorkPool:
    def __init__(self, workers: int, max_pending: int | None = None) -> None:
        self.workers = workers
        self.max_pending = max_pending or workers * 16
        self._slots = threading.BoundedSemaphore(self.max_pending)
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="servetriage-triage")
        self._closed = False

    def submit(self, fn: Callable[[], object]) -> bool:
        """Run `fn` on a worker; False (and nothing runs) when the queue is full or the pool closed."""
        if self._closed or not self._slots.acquire(blocking=False):
            return False
        try:
            future = self._executor.submit(_guarded, fn)
        except RuntimeError:  # shut down between the check and the submit
            self._slots.release()
            return False
        future.add_done_callback(self._release)
        return True

    def _release(self, _: Future[Any]) -> None:
        self._slots.release()

    def close(self, wait: bool = True) -> None:
        self._closed = True
        self._executor.shutdown(wait=wait, cancel_futures=not wait)


def _guarded(fn: Callable[[], object]) -> None:
    try:
        fn()
    except Exception:  # a worker must never die silently, nor take the process with it
        log.exception("triage job failed")
