"""`ModelHandle`: the bot's diagnoser, answering with whichever model version is active right now.

The bot is given the handle instead of a bare `Engine`. A promotion (by the `Retrainer`, or by
`servetriage model promote|rollback` from another process) swaps the engine behind it without a
restart: in-process through `swap`, across processes by noticing that the `ACTIVE` pointer moved
(checked at most every `check_every_s` seconds, a single small file read). A request that already
started finishes on the engine it started with; the swap is one reference assignment under a lock.

Incidents on-call wrote through the bot live in the feedback database (the corpus overlay) until
they are exported and reviewed; when the model's answer names one, the handle fills the reply's
incident from the overlay.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
import functools
from typing import TYPE_CHECKING, Any
from collections.abc import Callable

from servetriage._errors import ModelError, ServetriageError
from servetriage._settings import Settings

from ._errors import NotFound
from ._memory import EMPTY, FeedbackMemory, SignatureCache

if TYPE_CHECKING:
    from servetriage.classifier import (Calibrator, Diagnosis, Embedder, Engine, Extract, Fusion, IncidentRef,
                                        LearnedPass, LogText, Model, PassScores)
    from servetriage.corpus import Corpus

    from ._incidents import Incidents
    from ._training import TrainingSet

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class _Live:
    version: str | None
    model: Model | None
    engine: Engine


class ModelHandle:
    """A `Diagnoser` (`diagnose`, `warm`) whose model can be swapped while it serves."""

    def __init__(self, settings: Settings, corpus: Corpus | None = None, *, training: TrainingSet | None = None,
                 incidents: Incidents | None = None, check_every_s: float = 5.0) -> None:
        self.settings = settings
        self._corpus = corpus
        self._training = training      # the feedback memory's examples (None: no memory)
        self._incidents = incidents    # the corpus overlay (None: corpus incidents only)
        self.check_every_s = check_every_s
        self._lock = threading.RLock()
        self._live: _Live | None = None
        self._checked = 0.0
        self._sigs = SignatureCache(reader=self._focus)
        self._memory = EMPTY
        self._memory_lock = threading.Lock()
        self._warmed = threading.Event()

    # -- what it serves ----------------------------------------------------------------------------
    @property
    def corpus(self) -> Corpus:
        if self._corpus is None:
            from servetriage.corpus import load_corpus  # noqa: PLC0415
            with self._lock:
                if self._corpus is None:
                    self._corpus = load_corpus(self.settings.extra_corpus_dirs)
        return self._corpus

    @property
    def learning(self) -> bool:
        """False when the learned passes are off (SERVETRIAGE_EMBEDDINGS=off): nothing to retrain."""
        return self.settings.embeddings

    @property
    def version(self) -> str | None:
        return self._current().version

    @property
    def model(self) -> Model:
        live = self._current()
        if live.model is None:
            raise ModelError("the learned passes are off (SERVETRIAGE_EMBEDDINGS=off): no model to retrain")
        return live.model

    @property
    def engine(self) -> Engine:
        return self._current().engine

    def embedder(self) -> Embedder:
        from servetriage.classifier import embedder_for  # noqa: PLC0415
        embedder: Embedder = embedder_for(self.settings)  # a lazy name: Any to mypy
        return embedder

    # -- Diagnoser ---------------------------------------------------------------------------------
    def warm(self) -> ModelHandle:
        self._current().engine.warm()
        self._warmed.set()
        return self

    def wait_warm(self, timeout: float | None = None) -> bool:
        """Whether `warm()` has finished (waiting up to `timeout` seconds for it)."""
        return self._warmed.wait(timeout)

    def diagnose(self, log_text: LogText) -> Diagnosis:
        live = self._current()
        d = self._overlay(live.engine.diagnose(log_text))
        return dataclasses.replace(d, model_version=live.version) if live.version else d

    def diagnose_text(self, text: str, name: str | None = None) -> Diagnosis:
        from servetriage.classifier import from_text  # noqa: PLC0415
        return self.diagnose(from_text(text, name or "-"))

    # -- swapping ----------------------------------------------------------------------------------
    def engine_for(self, model: Model) -> Engine:
        """An engine answering with `model` and the feedback memory: what the bot would answer with that
        version active (the gate scores models through this)."""
        from servetriage.classifier import engine_for_model  # noqa: PLC0415

        base = engine_for_model(self.settings, self.corpus, model)
        return steered_engine_class()(self.settings, self.corpus, base.passes, base.calibrator, self.memory,
                                      self._sigs)

    # -- the feedback memory ----------------------------------------------------------------------
    def _focus(self, text: str) -> Extract:
        """A stored paste read as the engine reads a live one (the corpus's parts only, no model)."""
        return self._reader.focus(text)

    @functools.cached_property
    def _reader(self) -> Engine:
        from servetriage.classifier import Engine  # noqa: PLC0415
        return Engine(self.settings, corpus=self.corpus, passes=())

    def memory(self) -> FeedbackMemory:
        """The memory as of the database's current feedback generation (rebuilt when it moved)."""
        if self._training is None:
            return EMPTY
        generation = self._training.generation()
        mem = self._memory
        if mem.generation == generation:
            return mem
        with self._memory_lock:
            if self._memory.generation != generation:
                items = [(self._sigs.of_text(e.text), e.category, e.incident)
                         for e in self._training.examples() if not e.holdout]
                self._memory = FeedbackMemory(items, generation=generation)
            return self._memory

    def memory_key(self, text: str) -> tuple[str, str | None] | None:
        """What the memory would say about `text` (None: nothing): a cache key for gate answers."""
        match = self.memory().match_signature(self._sigs.of_text(text))
        return (match.category, match.incident) if match else None

    def swap(self, model: Model, engine: Engine | None = None) -> None:
        """Serve `model` from now on (its engine is built and warmed before the switch)."""
        engine = engine or self.engine_for(model)
        engine.scanner  # noqa: B018 — build the costly parts outside the lock
        with self._lock:
            self._live = _Live(model.meta.version, model, engine)
            self._checked = time.monotonic()
        log.info("now answering with model %s", model.meta.version)

    def reload(self) -> bool:
        """Follow the `ACTIVE` pointer if another process moved it; True when the model changed."""
        if not self.learning:
            return False
        from servetriage.classifier import artefacts_for, load_model  # noqa: PLC0415
        active = artefacts_for(self.settings).active()
        with self._lock:
            self._checked = time.monotonic()
            current = self._live.version if self._live else None
        if active is None or active == current:
            return False
        try:
            model = load_model(self.settings, self.corpus, None, active)  # with the embedder it was built with
        except ServetriageError as exc:
            log.warning("model %s is active but cannot be loaded (%s); still answering with %s", active, exc, current)
            return False
        self.swap(model)
        return True

    def _current(self) -> _Live:
        live = self._live
        if live is None:
            with self._lock:
                if self._live is None:
                    self._live = self._load()
                    self._checked = time.monotonic()
                live = self._live
        elif self.learning and time.monotonic() - self._checked >= self.check_every_s:
            try:
                self.reload()
            except Exception:
                log.exception("checking the active model failed")
            live = self._live or live
        return live

    def _load(self) -> _Live:
        from servetriage.classifier import Engine  # noqa: PLC0415
        if not self.learning:
            return _Live(None, None, Engine(self.settings, corpus=self.corpus))
        from servetriage.classifier import ensure_model  # noqa: PLC0415
        model = ensure_model(self.settings, self.corpus, self.embedder())
        return _Live(model.meta.version, model, self.engine_for(model))

    # -- the corpus overlay -------------------------------------------------------------------------
    def _overlay(self, d: Diagnosis) -> Diagnosis:
        """Name an incident written through the bot when the answer points at one."""
        if self._incidents is None or d.is_unknown:
            return d
        cand = next((c for c in d.top if c.category == d.category), None)
        if cand is None or not cand.incident or self.corpus.incident(cand.incident) is not None:
            return d
        try:
            inc = self._incidents.get(cand.incident)
        except NotFound:
            return d
        return dataclasses.replace(d, incident=overlay_ref(inc, self.settings))


def overlay_ref(inc: Any, settings: Settings) -> IncidentRef:
    from servetriage.classifier import IncidentRef  # noqa: PLC0415
    return IncidentRef(id=inc.id, title=inc.title, cause=inc.cause, first_action=inc.first_action,
                       fix_or_status="Written by on-call through the bot; not reviewed yet.", section=None,
                       link=settings.manual_base_url, sources=(f"feedback:{inc.diagnosis_id}",), verify=None)


@functools.lru_cache(maxsize=1)
def steered_engine_class() -> Callable[..., Engine]:
    """A factory of `Engine`s with the feedback memory as their `steer` hook (built on first use,
    so importing this package does not import the engine)."""
    from servetriage.classifier import Engine  # noqa: PLC0415
    from servetriage.classifier import PassScores  # noqa: PLC0415

    from ._memory import steer  # noqa: PLC0415

    def steered(settings: Settings, corpus: Corpus, passes: tuple[LearnedPass, ...], calibrator: Calibrator,
                memory: Callable[[], FeedbackMemory], signatures: SignatureCache) -> Engine:
        """`memory` is a callable returning the current FeedbackMemory."""

        def apply(log: LogText, ex: Extract, fusion: Fusion) -> tuple[Fusion, dict[str, PassScores]]:
            mem = memory()
            if len(mem):
                sig = signatures.of_text(log.text, ex)
                match = mem.match_signature(sig) if sig else mem.match_lines(log.text)
                if match is not None:
                    return steer(fusion, match), {"memory": PassScores({match.category: match.strength})}
            return fusion, {}

        return Engine(settings, corpus=corpus, passes=passes, calibrator=calibrator, steer=apply)

    return steered
