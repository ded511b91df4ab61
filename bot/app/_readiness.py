"""Ready means warm: `/readyz` says 200 only after `diagnoser.warm()` has returned.

Warming (the corpus, the rule scanner, the embedder and index when enabled) takes seconds to
minutes; it runs on a background thread so the process answers `/healthz` and Slack at once.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from .._protocols import Diagnoser

log = logging.getLogger(__name__)


class Readiness:
    def __init__(self) -> None:
        self._done = threading.Event()
        self.error: str | None = None
        self.warm_seconds: float | None = None
        self._thread: threading.Thread | None = None

    @property
    def ready(self) -> bool:
        return self._done.is_set() and self.error is None

    def wait(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout) and self.error is None

    def warm(self, diagnoser: Diagnoser, before: Callable[[], object] | None = None) -> None:
        if before is not None:
            try:
                before()
            except Exception:
                log.exception("pre-warm step failed")
        start = time.perf_counter()
        try:
            diagnoser.warm()
        except Exception as exc:
            self.error = f"{type(exc).__name__}: {exc}"
            log.exception("warming the diagnoser failed; /readyz stays 503")
        else:
            self.warm_seconds = time.perf_counter() - start
            log.info("diagnoser warm in %.1f s", self.warm_seconds)
        finally:
            self._done.set()

    def warm_in_background(self, diagnoser: Diagnoser, before: Callable[[], object] | None = None) -> threading.Thread:
        if self._thread is None:
            self._thread = threading.Thread(target=self.warm, args=(diagnoser, before), name="servetriage-warm",
                                            daemon=True)
            self._thread.start()
        return self._thread
