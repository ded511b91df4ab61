"""The pipeline in one place: ingest → read (shape, extract, rules, chain) → retrieve / classify → fuse →
adjust → Diagnosis.

`Engine` holds what is costly to build (the scanner, the embedder, the index, the trained model) and
builds each on first use, never at import; `warm()` builds them ahead of the first request.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import threading
import time
from collections.abc import Mapping
from typing import Protocol

from servetriage._settings import Settings
from servetriage.corpus import Corpus, Incident, incident_link, load_corpus

from ._adjust import AdjustContext, adjust
from ._chain import Chain
from ._earlier import earlier_fault
from ._diagnosis import (UNKNOWN, Candidate, Diagnosis, Earlier, EvidenceLine, IncidentRef, Initiating, OtherRun,
                         PassVotes, Symptom)
from ._extract import Extract
from ._features import document, first_fault_line, has_fault
from ._fuse import Calibrator, Fusion, PassScores, fuse
from ._ingest import LogText, from_text
from ._metrics import MetricsVerdict
from ._messages import MessageIndex
from ._parts import CorpusParts, corpus_parts
from ._precedence import Ordering
from ._reading import Reading, read_log
from ._redact import redact
from ._rules import Scanner
from ._shape import LifecyclePatterns, LogShape

MAX_EVIDENCE = 8
MAX_EVIDENCE_CHARS = 400


class LearnedPass(Protocol):
    """A pass that scores categories from the extracted lines (retrieval, classifier)."""

    name: str

    def score(self, ex: Extract) -> PassScores: ...


class Steer(Protocol):
    """A last word between fusion and the answer (the feedback memory): returns the fusion to use and
    any extra per-pass scores to report with it."""

    def __call__(self, log: LogText, ex: Extract, fusion: Fusion) -> tuple[Fusion, dict[str, PassScores]]: ...


class Engine:
    """Diagnoses logs. Thread-safe once warm; one per process is enough."""

    def __init__(self, settings: Settings | None = None, corpus: Corpus | None = None,
                 passes: tuple[LearnedPass, ...] | None = None, calibrator: Calibrator | None = None,
                 steer: Steer | None = None) -> None:
        self.settings = settings or Settings.from_env()
        self._corpus = corpus
        self._passes = passes
        self._calibrator = calibrator
        self._steer = steer
        self._lock = threading.RLock()  # a part built under it may need another (the passes need the corpus)

    # -- lazily built parts -------------------------------------------------------------------
    @property
    def corpus(self) -> Corpus:
        if self._corpus is None:
            with self._lock:
                if self._corpus is None:
                    self._corpus = load_corpus(self.settings.extra_corpus_dirs)
        return self._corpus

    @property
    def scanner(self) -> Scanner:
        return self._parts.scanner

    @property
    def passes(self) -> tuple[LearnedPass, ...]:
        if self._passes is None:
            with self._lock:
                if self._passes is None:
                    self._passes, fitted = self._load_learned()
                    self._calibrator = self._calibrator or fitted
        return self._passes

    @property
    def calibrator(self) -> Calibrator:
        self.passes  # noqa: B018 - loading the learned passes loads the calibrator fitted with them
        return self._calibrator or Calibrator()

    @property
    def threshold(self) -> float:
        """The configured confidence floor, else the one fitted with the model."""
        if self.settings.min_confidence is not None:
            return self.settings.min_confidence
        return self.calibrator.threshold

    @property
    def lifecycle(self) -> LifecyclePatterns:
        return self._parts.lifecycle

    @property
    def messages(self) -> MessageIndex:
        return self._parts.messages

    @functools.cached_property
    def _parts(self) -> CorpusParts:
        return corpus_parts(self.corpus, self.settings.cache_dir)

    @functools.cached_property
    def symptom_roles(self) -> frozenset[str]:
        return frozenset(c for c, cat in self.corpus.categories.items() if cat.symptom)

    def _load_learned(self) -> tuple[tuple[LearnedPass, ...], Calibrator | None]:
        if not self.settings.embeddings:
            return (), None  # not even imported: scikit-learn alone is over a second of start-up
        from ._learned import load_learned_passes  # noqa: PLC0415 - heavy imports only when learned passes are wanted
        return load_learned_passes(self.settings, self.corpus)

    def warm(self) -> Engine:
        """Build every part now (the bot calls this before it reports ready)."""
        self.scanner  # noqa: B018 - each of these properties builds its part on first use
        self.lifecycle  # noqa: B018
        self.messages  # noqa: B018
        self.passes  # noqa: B018
        self.diagnose_text("warm-up: RuntimeError: CUDA error: out of memory")
        return self

    # -- diagnosis ----------------------------------------------------------------------------
    def focus(self, text: str) -> Extract:
        """The lines of `text` the passes read (the failed run's salient lines, the engine's own noise
        and printouts set aside): the same for every model, so the feedback memory and the promotion
        gate read a stored log once."""
        return self._read(text).focus

    def _read(self, log: str | bytes) -> Reading:
        return read_log(log, self.scanner, self.corpus, self.lifecycle, self.symptom_roles, self.messages)

    def classifier_document(self, text: str) -> str:
        """What the classifier pass reads of `text` ("" when nothing is left to read)."""
        if not text or text.isspace():
            return ""
        ex = self.focus(text)
        return document(ex) if ex.lines else ""

    def diagnose_text(self, text: str, name: str | None = None) -> Diagnosis:
        return self.diagnose(from_text(text, name or "-"))

    def diagnose(self, log: LogText) -> Diagnosis:
        timings: dict[str, float] = {}
        t0 = time.perf_counter()
        reading = self._read(log.data)
        shape, chain, ordering, ex = reading.shape, reading.chain, reading.ordering, reading.focus
        blank = log.blank
        t1 = t0 + reading.shape.seconds
        t2 = time.perf_counter()
        timings["shape_ms"] = (t1 - t0) * 1000
        timings["read_ms"] = (t2 - t1) * 1000
        learned: dict[str, PassScores] = {}
        if ex.lines and not blank:
            for p in self.passes:
                ts = time.perf_counter()
                learned[p.name] = p.score(ex)
                timings[f"{p.name}_ms"] = (time.perf_counter() - ts) * 1000
        if learned.get("classifier") is not None:
            classifier = next(p for p in self.passes if p.name == "classifier")
            moved = earlier_fault(ex, ordering, lambda sub: (classifier.score(sub),),
                                  self.symptom_roles | self.corpus.downstream)
            if moved is not None:
                ordering = moved
        rule_incidents = _rule_incidents(ordering, learned.get("retrieval"), learned.get("classifier"))
        fusion = fuse(ordering, learned.get("retrieval"), learned.get("classifier"), self.calibrator,
                      self.symptom_roles, rule_incidents, has_fault(ex))
        ctx = AdjustContext(ordering, ex, log.data, reading.has_faults, self.corpus, self.symptom_roles,
                            lambda: _run_text(shape, chain), reading.stopping_at)
        fusion = adjust(fusion, ctx)
        figures = ctx.figures
        if figures is not None:
            learned = {**learned, "figures": PassScores({figures.category: figures.confidence})}
        if self._steer is not None and not blank:  # (with no lines read too: the memory may know one)
            fusion, extra = self._steer(log, ex, fusion)
            learned = {**learned, **extra}
        diagnosis = self._build(log, ex, ordering, fusion, learned, figures)
        diagnosis = self._whole_log(diagnosis, chain, shape.setup())
        timings["total_ms"] = (time.perf_counter() - t0) * 1000
        return _with_timings(diagnosis, timings)

    def _whole_log(self, d: Diagnosis, chain: Chain, setup: dict[str, str]) -> Diagnosis:
        """What the whole paste adds to the answer: handled faults before the chain, other failed runs."""
        earlier = tuple(Earlier(line=f.line.no, text=_clip(redact(f.line.text)), severity=f.severity.name.lower(),
                                outcome=f.outcome.value, category=f.category, timestamp=f.line.timestamp)
                        for f in chain.context)
        others = tuple(OtherRun(first=r.first, last=r.last, line=r.line, category=r.category) for r in chain.other_failed)
        return dataclasses.replace(d, earlier=earlier, other_runs=others, runs=len(chain.runs), missing=self._missing(d),
                                   run=chain.run.index + 1 if chain.run is not None and not d.is_unknown else 0,
                                   orderly_stop=chain.orderly_stop and d.is_unknown, setup=setup)

    def _build(self, log: LogText, ex: Extract, ordering: Ordering, fusion: Fusion,
               learned: dict[str, PassScores], figures: MetricsVerdict | None = None) -> Diagnosis:
        corpus = self.corpus
        ranking = list(fusion.ranking)
        category = ranking[0][0] if ranking else UNKNOWN
        confidence = fusion.confidence if ranking else 0.0
        if log.blank:
            category, confidence = UNKNOWN, 0.0
        elif confidence < self.threshold:
            category = UNKNOWN
        top = tuple(
            Candidate(category=c, incident=fusion.incident_for.get(c), score=round(s, 4),
                      title=corpus.categories[c].title if c in corpus.categories else "")
            for c, s in ranking[:5]
        )
        incident = None
        if category != UNKNOWN:
            inc = corpus.incident(fusion.incident_for.get(category, "")) or _resembled(corpus, category, learned)
            incident = self._ref(inc) if inc else None
        initiating = None
        symptoms: tuple[Symptom, ...] = ()
        rule_init = ordering.initiating.category if ordering.initiating is not None else None
        feature_of_fault = rule_init in corpus.kernel_faults and category in corpus.feature_code_paths
        if ordering.initiating is not None and (category == rule_init or feature_of_fault):
            line = ordering.initiating.best.line
            initiating = Initiating(line=line.no, text=_clip(redact(line.text)), rank=line.rank, timestamp=line.timestamp)
            symptoms = tuple(Symptom(category=e.category, line=e.line_no, text=_clip(redact(e.best.line.text)),
                                     rank=e.best.line.rank) for e in ordering.symptoms)
        elif figures is not None and category == figures.category != UNKNOWN and figures.lines:
            no, text = figures.lines[0]
            initiating = Initiating(line=no, text=_clip(redact(text)))
        elif category != UNKNOWN:
            first = first_fault_line(ex)
            if first is not None:
                initiating = Initiating(line=first.no, text=_clip(redact(first.text)), rank=first.rank,
                                        timestamp=first.timestamp)
        evidence = self._evidence(ex, ordering, category)
        if figures is not None:
            evidence = tuple(EvidenceLine(no, _clip(redact(text)), None, figures.category)
                             for no, text in figures.lines) or evidence
        return Diagnosis(
            category=category, confidence=round(confidence, 4), incident=incident, top=top, evidence=evidence,
            initiating=initiating, symptoms=symptoms, engine=ex.engine, versions=ex.versions,
            category_title=corpus.categories[category].title if category in corpus.categories else "",
            passes=PassVotes.of({c: round(s, 3) for c, s in ordering.scores.items()},
                                {name: {c: round(s, 3) for c, s in sorted(p.scores.items(), key=lambda kv: -kv[1])[:5]}
                                 for name, p in learned.items()}),
            file=log.name, lines_read=ex.total_lines,
        )

    def _missing(self, d: Diagnosis) -> str | None:
        """What would settle the cause: the rank a line names as the first to fail, else the category's
        next thing to fetch (recovery.yaml `missing`)."""
        if d.is_unknown:
            return None
        if d.initiating is not None and self.corpus.other_rank:
            named = _other_rank(d.initiating, d.evidence)
            if named is not None:
                return self.corpus.other_rank.format(rank=named)
        return self.corpus.missing.get(d.category)

    def _ref(self, inc: Incident) -> IncidentRef:
        link = incident_link(self.settings.manual_base_url, inc)  # the incident's own anchor in the manual
        return IncidentRef(id=inc.id, title=inc.title, cause=inc.cause, first_action=inc.first_action,
                           fix_or_status=inc.fix_or_status, section=inc.section, link=link, sources=inc.sources,
                           verify=self.corpus.verify_of(inc), klass=inc.klass,
                           recovery=self.corpus.recovery_of(inc))

    def _evidence(self, ex: Extract, ordering: Ordering, category: str) -> tuple[EvidenceLine, ...]:
        """The rule hits of the answer first, then the exception lines the learned passes read."""
        chosen: dict[int, EvidenceLine] = {}
        for e in ordering.events:
            if e.category == category or (ordering.initiating is not None and e is ordering.initiating):
                chosen.setdefault(e.line_no, EvidenceLine(e.line_no, _clip(redact(e.best.line.text)), e.best.line.rank,
                                                          e.category))
        for sym in ordering.symptoms:
            chosen.setdefault(sym.line_no, EvidenceLine(sym.line_no, _clip(redact(sym.best.line.text)), sym.best.line.rank,
                                                        sym.category))
        if len(chosen) < 3:
            for line in ex.lines:
                if line.frame:
                    continue
                if line.body.startswith("Traceback"):
                    continue
                if line.exception or line.level in ("ERROR", "FATAL", "CRITICAL"):
                    chosen.setdefault(line.no, EvidenceLine(line.no, _clip(redact(line.text)), line.rank, None))
                if len(chosen) >= 4:
                    break
        return tuple(sorted(chosen.values(), key=lambda e: e.line)[:MAX_EVIDENCE])


def _resembled(corpus: Corpus, category: str, learned: Mapping[str, PassScores]) -> Incident | None:
    """The category's incident for an answer no incident named (a catalogue placement, a code path, a
    source group's example): the one the whole log resembles most, else the category's first."""
    alike = learned["classifier"].incident_scores if "classifier" in learned else {}
    mine = list(corpus.by_category(category))
    scored = [i for i in mine if i.id in alike]
    return max(scored, key=lambda i: alike[i.id]) if scored else next(iter(mine), None)


def _rule_incidents(ordering: Ordering, retrieval: PassScores | None, classifier: PassScores | None) -> dict[str, str]:
    """The incident each rule-seen category names: among incidents sharing a signature on the line,
    the one whose examples the whole log resembles most, else the most specific signature's."""
    out: dict[str, str] = {}
    nearest = dict(retrieval.incidents) if retrieval is not None else {}
    alike = classifier.incident_scores if classifier is not None else {}
    if classifier is not None:
        nearest.update(classifier.incidents)
    events = list(ordering.events)
    if ordering.initiating is not None:
        events.insert(0, ordering.initiating)
    for e in events:
        if e.category in out:
            continue
        if not e.best.incident:  # an event the learned passes found: retrieval names its incident
            if nearest.get(e.category):
                out[e.category] = nearest[e.category]
            continue
        same = [h.incident for h in e.hits if h.category == e.category]
        if alike and any(i in alike for i in same):
            out[e.category] = max(same, key=lambda i: alike.get(i, -1.0))
        else:
            near = nearest.get(e.category)
            out[e.category] = near if near is not None and near in same else e.best.incident
    return out


def _run_text(shape: LogShape, chain: Chain) -> str:
    """The text the figures are read from: the diagnosed run, else the last one."""
    run = chain.run or chain.runs[-1]
    start, end = shape.offset(run.first), shape.offset(run.last + 1)
    return shape.data[start:end].decode("utf-8", "replace")


_RANK_NAMED = re.compile(r"\b(?:[Rr]ank|RANK)[ =:]?(\d+)\b")


def _other_rank(init: Initiating, evidence: tuple[EvidenceLine, ...] = ()) -> str | None:
    """`rank N` when the first fault's line (or the evidence beside it) names a rank other than the one
    that printed it: rank 0's collective timeout reporting that rank 3 never answered."""
    own = re.search(r"\d+", init.rank or "")
    for text in (init.text, *(e.text for e in evidence)):
        body = re.sub(r"^(?:\[[^\]]*\]:?\s*)+", "", text)  # the printing rank's own prefixes
        for m in _RANK_NAMED.finditer(body):
            if own is None or m.group(1) != own.group(0):
                return f"rank {m.group(1)}"
    return None


def _clip(text: str) -> str:
    text = text.rstrip()
    return text if len(text) <= MAX_EVIDENCE_CHARS else text[: MAX_EVIDENCE_CHARS - 1] + "…"


def _with_timings(d: Diagnosis, timings: dict[str, float]) -> Diagnosis:
    return dataclasses.replace(d, timings_ms={k: round(v, 2) for k, v in timings.items()})
