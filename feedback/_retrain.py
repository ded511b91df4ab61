"""`Retrainer`: feedback examples become a candidate model, which is promoted only if no worse.

One cycle (`run_once`), the same whether the bot's background thread runs it or the online replay:

1. the training set: the corpus plus every agreed feedback example that is not held out;
2. nothing new (same training-set hash as the active model, or a set already rejected against it)
   → skipped;
3. `classifier.retrain` (the quick refit that keeps the calibrator; a full `train` if the corpus
   changed since the active model);
4. both models answer the gate set (a fixed corpus sample plus the held-out confirmed feedback)
   through the real engine; the candidate is promoted only when it gets at least as many right, else
   it is kept as `rejected` with both scores. One exception: when the active model was trained on
   examples that no longer stand (forgotten, or relabelled by later votes), the new set is promoted
   regardless — removing data is not optional;
5. promotion moves the `ACTIVE` pointer and swaps the model behind the bot's `ModelHandle`.

The background thread debounces (a burst of votes → one retrain), runs one cycle at a time (and
takes a file lock so a CLI `feedback forget` in another process does not race it), and also polls
the database's feedback generation so changes made by other processes are picked up.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import threading
import time
from collections import deque
from typing import TYPE_CHECKING, Any
from collections.abc import Callable, Sequence

from servetriage._errors import ModelError

from ._gate import (CORPUS_SAMPLE, FEEDBACK_MAX, Gate, GateCase, Predict, corpus_gate_cases, faiss_single_thread,
                    gate_hash)
from ._handle import ModelHandle
from ._store import FeedbackStore
from ._training import FeedbackExample

if TYPE_CHECKING:
    from servetriage._settings import Settings
    from servetriage.classifier import ArtefactStore, Engine, Model, TrainingExample

log = logging.getLogger(__name__)

KEEP_REJECTED = 5
KEEP_RETIRED = 10


@dataclasses.dataclass(frozen=True)
class RetrainResult:
    state: str                      # "active", "rejected" or "skipped"
    version: str | None             # the candidate (None when skipped)
    parent: str | None              # the model that was active when the cycle started
    reason: str
    seconds: float = 0.0            # the whole cycle: training set, retrain, gate, promotion
    retrain_seconds: float = 0.0    # the refit alone
    gate: dict[str, Any] = dataclasses.field(default_factory=dict)
    examples: int = 0               # feedback examples trained on

    @property
    def promoted(self) -> bool:
        return self.state == "active"


def training_set(examples: Sequence[FeedbackExample]) -> list[TrainingExample]:
    from servetriage.classifier import TrainingExample  # noqa: PLC0415
    chosen = sorted((e for e in examples if not e.holdout), key=lambda e: (e.text_hash, e.category))
    return [TrainingExample(e.text, e.category, e.incident or "", "feedback") for e in chosen]


def _key(text: str, category: str) -> tuple[str, str]:
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest(), category


def training_hash(extra: Sequence[TrainingExample]) -> str:
    h = hashlib.sha256()
    for e in sorted(extra, key=lambda e: (_key(e.text, e.category), e.incident)):
        digest, cat = _key(e.text, e.category)
        h.update(f"{digest}\0{cat}\0{e.incident}\n".encode())
    return h.hexdigest()[:16]


WARM_POLL_S = 0.5  # how often the retrainer looks whether the bot has warmed up before it primes the gate
DEBOUNCE_S = 1.0   # a retrain after a second of quiet (one costs about half a second): a burst of votes is one retrain


class Retrainer:
    """Turns stored feedback into promoted (or rejected) model versions, in the background."""

    def __init__(self, settings: Settings, store: FeedbackStore, handle: ModelHandle, *,
                 debounce_s: float = DEBOUNCE_S,
                 max_delay_s: float = 60.0, poll_s: float = 30.0, gate_corpus: int = CORPUS_SAMPLE,
                 on_result: Callable[[RetrainResult], None] | None = None) -> None:
        self.settings = settings
        self.store = store
        self.handle = handle
        self.debounce_s = debounce_s
        self.max_delay_s = max_delay_s
        self.poll_s = poll_s
        self.gate_corpus = gate_corpus
        self.on_result = on_result
        self.gate = Gate()
        self.results: deque[RetrainResult] = deque(maxlen=100)  # the latest cycles, for status and tests
        self._run_lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._seen_generation: int | None = None
        self._extra_keys: dict[str, frozenset[tuple[str, str]]] = {}
        self._corpus_cases: list[GateCase] | None = None
        self._documents: dict[str, str] = {}   # gate log -> the classifier's input (the corpus sample: bounded)

    # -- background ----------------------------------------------------------------------------
    def notify(self) -> None:
        """Feedback changed: retrain after `debounce_s` of quiet (at most `max_delay_s` after the first)."""
        self._wake.set()

    def start(self) -> Retrainer:
        if self._thread is None or not self._thread.is_alive():
            self._stop.clear()
            self._thread = threading.Thread(target=self._loop, name="servetriage-retrainer", daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout: float = 60.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _loop(self) -> None:
        # Priming reads the gate set: not while the bot is still warming up (both would share the cores
        # and the bot would be ready later), unless feedback arrives first.
        while not (self._stop.is_set() or self._wake.is_set() or self.handle.wait_warm(WARM_POLL_S)):
            pass
        try:
            self.prime()
        except Exception:
            log.exception("scoring the active model on the gate failed")
        while not self._stop.is_set():
            woken = self._wake.wait(self.poll_s)
            if self._stop.is_set():
                break
            if woken:
                first = time.monotonic()
                while True:  # debounce: wait for a quiet spell, but not forever
                    self._wake.clear()
                    left = self.max_delay_s - (time.monotonic() - first)
                    if left <= 0 or not self._wake.wait(min(self.debounce_s, left)) or self._stop.is_set():
                        break
                if self._stop.is_set():
                    break
            elif self._seen_generation is not None and self.store.training.generation() == self._seen_generation:
                continue
            try:
                self.run_once()
            except Exception:
                log.exception("retraining failed; the active model stays")

    def prime(self) -> None:
        """Answer the gate set with the active model now (the bot calls this at start, off the request
        path), so that the first retrain pays only for its candidate."""
        engine, version = self.handle.engine, self.handle.version
        if not self.handle.learning or version is None:
            return
        from servetriage.classifier import warm_retrain  # noqa: PLC0415
        warm_retrain(self.handle.model, self.handle.corpus)
        with faiss_single_thread():
            self.gate.score(version, self._predictor(engine, self.handle.model),
                            self._gate_cases(self.store.training.examples()), context=self.handle.memory_key)

    # -- one cycle ---------------------------------------------------------------------------------
    def run_once(self, *, force: bool = False, require_gate: bool = True) -> RetrainResult:
        with self._run_lock, self.store.db.exclusive("retrain"):  # one retrain across replicas
            result = self._cycle(force=force, require_gate=require_gate)
        self.results.append(result)
        if self.on_result is not None:
            self.on_result(result)
        log.info("retrain: %s %s (%s) in %.2f s", result.state, result.version or "", result.reason, result.seconds)
        return result

    def _cycle(self, *, force: bool, require_gate: bool) -> RetrainResult:
        from servetriage.classifier import artefacts_for, retrain, train  # noqa: PLC0415

        t0 = time.perf_counter()
        generation = self.store.training.generation()
        if not self.handle.learning:
            self._seen_generation = generation
            return RetrainResult("skipped", None, None, "the learned passes are off")
        self.handle.reload()
        parent = self.handle.model
        artefacts = artefacts_for(self.settings)
        feedback = self.store.training.examples()
        quarantined = self.store.training.quarantined()
        extra = training_set([e for e in feedback if (e.text_hash, e.category) not in quarantined])
        thash = training_hash(extra)
        parent_keys = self._parent_keys(artefacts, parent.meta.version)
        parent_hash = artefacts.status(parent.meta.version).training_hash or self._hash_of(artefacts, parent.meta.version)
        stale = parent_keys - {_key(e.text, e.category) for e in extra}
        self._seen_generation = generation
        if not force and thash == parent_hash:
            return RetrainResult("skipped", None, parent.meta.version, "the active model has this training set",
                                 time.perf_counter() - t0)
        if not force and not stale and any(
                m.parent == parent.meta.version and artefacts.status(m.version).state == "rejected"
                and artefacts.status(m.version).training_hash == thash for m in artefacts.versions()):
            return RetrainResult("skipped", None, parent.meta.version,
                                 "this training set was already rejected against the active model",
                                 time.perf_counter() - t0)

        corpus = self.handle.corpus
        embedder = parent.embedder or self.handle.embedder()  # a retrain keeps its parent's embedder
        t1 = time.perf_counter()
        try:
            candidate = retrain(parent, corpus, embedder, artefacts, extra)
            how = "retrain"
        except ValueError:  # the corpus changed since the parent: the calibration must be redone
            candidate = train(corpus, embedder, artefacts, extra, parent=parent.meta.version)
            how = "full train (the corpus changed)"
        retrain_s = time.perf_counter() - t1
        version = candidate.meta.version
        artefacts.set_status(version, state="candidate", training_hash=thash)

        t2 = time.perf_counter()
        cases = self._gate_cases(feedback)
        g_active, g_cand, cand_engine = self._score_both(parent, candidate, cases)
        gate = {"set": gate_hash(cases), "active": g_active, "candidate": g_cand, "how": how,
                "stale_examples": len(stale), "seconds": round(time.perf_counter() - t2, 3),
                "retrain_seconds": round(retrain_s, 3)}
        no_worse = g_cand["correct"] >= g_active["correct"]
        if no_worse or stale or not require_gate:
            reason = "no worse on the gate" if no_worse else (
                f"removes {len(stale)} example(s) that no longer stand" if stale else "promoted without the gate")
            artefacts.activate(version, note=reason, gate=gate)
            self.handle.swap(candidate, cand_engine)
            state = "active"
        else:
            reason = (f"worse on the gate: {g_cand['correct']}/{g_cand['cases']} right, "
                      f"the active model {g_active['correct']}/{g_active['cases']}")
            # The examples this candidate added are what made it worse: set them aside, so the next
            # retrain can still learn from everything else (the memory keeps answering with them).
            added = {_key(e.text, e.category) for e in extra} - parent_keys
            if added:
                self.store.training.quarantine(added, version, reason)
                reason += f"; {len(added)} new example(s) quarantined"
            artefacts.set_status(version, state="rejected", note=reason, gate=gate)
            state = "rejected"
        try:
            prune(artefacts)
        except OSError as exc:
            log.warning("pruning old model versions failed: %s", exc)
        return RetrainResult(state, version, parent.meta.version, reason, time.perf_counter() - t0, retrain_s, gate,
                             len(extra))

    def judge(self, candidate: Model, *, how: str) -> RetrainResult:
        """Promote a model built elsewhere (with a fine-tuned embedder) only when it is no worse than the
        active one on the gate: the same test every retrain passes."""
        from servetriage.classifier import artefacts_for  # noqa: PLC0415

        with self._run_lock, self.store.db.exclusive("retrain"):
            t0 = time.perf_counter()
            self.handle.reload()
            parent = self.handle.model
            artefacts = artefacts_for(self.settings)
            cases = self._gate_cases(self.store.training.examples())
            g_active, g_cand, engine = self._score_both(parent, candidate, cases)
            gate = {"set": gate_hash(cases), "active": g_active, "candidate": g_cand, "how": how,
                    "seconds": round(time.perf_counter() - t0, 3)}
            version = candidate.meta.version
            if g_cand["correct"] >= g_active["correct"]:
                state, reason = "active", f"{how}: no worse on the gate"
                artefacts.activate(version, note=reason, gate=gate)
                self.handle.swap(candidate, engine)
            else:
                state, reason = "rejected", (f"{how}: worse on the gate: {g_cand['correct']}/{g_cand['cases']} right, "
                                             f"the active model {g_active['correct']}/{g_active['cases']}")
                artefacts.set_status(version, state="rejected", note=reason, gate=gate)
            result = RetrainResult(state, version, parent.meta.version, reason, time.perf_counter() - t0, 0.0, gate,
                                   len(candidate.extra))
        self.results.append(result)
        if self.on_result is not None:
            self.on_result(result)
        return result

    def _score_both(self, parent: Model, candidate: Model,
                    cases: Sequence[GateCase]) -> tuple[dict[str, float | int], dict[str, float | int], Engine]:
        """The gate's figures for the active model (cached) and the candidate, and the candidate's engine."""
        active_engine = self.handle.engine_for(parent) if self.handle.version != parent.meta.version \
            else self.handle.engine
        cand_engine = self.handle.engine_for(candidate)
        active, cand = self._predictor(active_engine, parent), self._predictor(cand_engine, candidate)
        with faiss_single_thread():
            g_active = self.gate.score(parent.meta.version, active, cases, context=self.handle.memory_key)
            g_cand = self.gate.score(candidate.meta.version, cand, cases, context=self.handle.memory_key)
        return g_active, g_cand, cand_engine

    def _predictor(self, engine: Engine, model: Model) -> Predict:
        """Feedback cases: the answer on-call would see. Corpus cases: the classifier's own first answer
        (see `_gate`), for the whole batch at once: the rules answer every corpus example, and a retrain
        never changes them."""
        def predict(cases: Sequence[GateCase]) -> list[str]:
            docs = [self._document(engine, c.text) if c.part == "corpus" else "" for c in cases]
            read = [i for i, d in enumerate(docs) if d]
            first = dict(zip(read, model.classifier.first_answers([docs[i] for i in read])))
            return [first[i] if i in first else engine.diagnose_text(c.text).category for i, c in enumerate(cases)]
        return predict

    def _document(self, engine: Engine, text: str) -> str:
        """The classifier's input for a gate log (the same for every model: the reading is the rules')."""
        key = hashlib.blake2b(text.encode("utf-8", "replace"), digest_size=16).hexdigest()
        doc = self._documents.get(key)
        if doc is None:
            doc = self._documents[key] = engine.classifier_document(text)
        return doc

    def _gate_cases(self, feedback: Sequence[FeedbackExample]) -> list[GateCase]:
        if self._corpus_cases is None:
            self._corpus_cases = corpus_gate_cases(self.handle.corpus, self.gate_corpus)
        held = [e for e in feedback if e.holdout][-FEEDBACK_MAX:]
        return self._corpus_cases + [GateCase(e.text, e.category, "feedback") for e in held]

    def _parent_keys(self, artefacts: ArtefactStore, version: str) -> frozenset[tuple[str, str]]:
        if version not in self._extra_keys:
            try:
                rows = artefacts.load_object(version, "extra")
            except ModelError:
                rows = []
            self._extra_keys[version] = frozenset(_key(r["text"], r["category"]) for r in rows
                                                  if r.get("source") == "feedback")
        return self._extra_keys[version]

    def _hash_of(self, artefacts: ArtefactStore, version: str) -> str:
        from servetriage.classifier import TrainingExample  # noqa: PLC0415
        try:
            rows = artefacts.load_object(version, "extra")
        except ModelError:
            rows = []
        return training_hash([TrainingExample(**r) for r in rows if r.get("source") == "feedback"])


# -- old versions ----------------------------------------------------------------------------------------
def prune(artefacts: Any) -> list[str]:
    """Strip the objects of old rejected, retired and candidate versions; their records stay."""
    active = artefacts.active()
    protect = {active}
    if active is not None and artefacts.meta(active).parent:
        protect.add(artefacts.meta(active).parent)
    versions = [m for m in artefacts.versions() if m.version != active and artefacts.loadable(m.version)]
    removed = []
    for state, keep in (("rejected", KEEP_REJECTED), ("retired", KEEP_RETIRED), ("candidate", KEEP_REJECTED)):
        old = sorted((m for m in versions if artefacts.status(m.version).state == state),
                     key=lambda m: (m.created, m.version))[:-keep or None]
        for m in old:
            if m.version in protect:  # counted among the kept, never stripped
                continue
            artefacts.strip(m.version)
            removed.append(m.version)
    return removed
