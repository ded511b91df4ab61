"""The workers that answer: `settings.workers` threads taking jobs from the durable queue.

They wake when this process enqueues, and poll for what other replicas enqueued (or what waited out
a channel's pace). `close()` lets them finish every job that is ready, then stops them; a job
deferred to later stays in the queue for the next start.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from ..store import Claimed, JobQueue

log = logging.getLogger(__name__)

POLL_S = 0.5          # how often an idle worker looks for jobs it was not woken for
DRAIN_TIMEOUT_S = 60.0


class JobWorkers:
    def __init__(self, queue: JobQueue, handle: Callable[[Claimed], None], workers: int,
                 poll_s: float = POLL_S) -> None:
        self.queue = queue
        self._handle = handle
        self._poll_s = poll_s
        self._wake = threading.Condition()
        self._woken = 0
        self._closing = False
        self._threads = [threading.Thread(target=self._loop, name=f"servetriage-worker-{i}", daemon=True)
                         for i in range(workers)]
        self._started = False

    def start(self) -> JobWorkers:
        if not self._started:
            self._started = True
            for t in self._threads:
                t.start()
        return self

    def wake(self) -> None:
        with self._wake:
            self._woken += 1
            self._wake.notify()

    def close(self, timeout: float = DRAIN_TIMEOUT_S) -> None:
        """Finish what is ready, then stop (safe to call twice)."""
        with self._wake:
            self._closing = True
            self._wake.notify_all()
        if self._started:
            for t in self._threads:
                t.join(timeout)

    def _loop(self) -> None:
        while True:
            try:
                claimed = self.queue.claim()
            except Exception:
                log.exception("claiming a job failed")
                claimed = None
            if claimed is not None:
                try:
                    self._handle(claimed)
                except Exception:
                    log.exception("handling job %s failed outside its own error handling", claimed.key)
                continue
            with self._wake:
                if self._closing:
                    return
                if not self._woken:
                    self._wake.wait(self._poll_s)
                self._woken = max(0, self._woken - 1)
