"""Training: the classifier, the retrieval index and the fusion calibrator, from corpus (+ feedback).

Calibration is fitted on held-out folds grouped by incident: each fold's scanner, classifier and
index know nothing of the held-out incidents, so the calibrator learns how far to trust the passes
on variants no rule has seen — the situation the learned passes exist for.
"""

from __future__ import annotations

import dataclasses
import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence

import numpy as np
from scipy.sparse import csr_matrix, vstack
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GroupKFold

from servetriage.corpus import Corpus, Template
from servetriage.corpus._mine import render

from ._adjust import AdjustContext, adjust
from ._artefacts import FORMAT, ArtefactStore, Meta
from ._earlier import earlier_fault
from ._embed import Embedder, normalize_line
from ._extract import Extract, extract
from ._features import QUERY_LINES, document, has_fault, query_lines
from ._fuse import UNKNOWN, Calibrator, PassScores, candidates, features, fuse
from ._messages import ERROR_LEVELS, MessageIndex
from ._parts import corpus_parts
from ._precedence import Ordering
from ._reading import read_log
from ._retrieval import Entry, Index, stop_lines
from ._rules import Scanner
from ._textclf import TextClassifier

FOLDS = 4
WRONG_ANSWER_COST = 0.5

# One held-out prediction: (label, ordering, retrieval scores, classifier scores, faulty, context).
_Pred = tuple[str, Ordering, PassScores, PassScores, bool, AdjustContext]


@dataclasses.dataclass(frozen=True)
class TrainingExample:
    text: str
    category: str
    incident: str
    source: str = "corpus"  # or "feedback"


@dataclasses.dataclass(frozen=True)
class Model:
    """Everything the learned passes need at run time."""

    classifier: TextClassifier
    index: Index
    calibrator: Calibrator
    meta: Meta
    extra: tuple[TrainingExample, ...] = ()   # the feedback examples it was trained with
    embedder: Embedder | None = None          # the embedder its index was built with (not saved: its name is)


def corpus_examples(corpus: Corpus) -> list[TrainingExample]:
    return [TrainingExample(ex, inc.category, inc.id) for inc in corpus.incidents for ex in inc.examples]


CATALOGUE_PER_CATEGORY = 25   # rendered catalogue messages per category: a supplement, never the bulk
CATALOGUE_GROUP_DEPTH = 3     # path components naming a catalogue example's source directory (its CV group)


def catalogue_examples(messages: MessageIndex, symptom_roles: frozenset[str] = frozenset()) -> list[TrainingExample]:
    """Error messages of the catalogue that `message_paths` places, rendered inside their engine's log
    format (a traceback for Python raises), a few per category, chosen deterministically. Each keeps its
    source directory as its group, so cross-validation holds out whole directories."""
    by_category: dict[str, list[tuple[str, Template]]] = {}
    for t in messages.templates:
        if t.level not in ERROR_LEVELS:
            continue
        category = messages.place(t.file, t.template)
        if category is None or category in symptom_roles:
            continue
        key = hashlib.sha256(f"{t.engine}:{t.file}:{t.template}".encode()).hexdigest()
        by_category.setdefault(category, []).append((key, t))
    out = []
    for category, keyed in sorted(by_category.items()):
        for _, t in sorted(keyed, key=lambda kt: kt[0])[:CATALOGUE_PER_CATEGORY]:
            group = "/".join(t.file.split("/")[:CATALOGUE_GROUP_DEPTH])
            out.append(TrainingExample(render_in_log(t), category, f"{CATALOGUE_GROUP}{t.engine}:{group}", "catalogue"))
    return out


CATALOGUE_GROUP = "catalogue:"
CPP_ERROR_FORMS = {"xgrammar": "[10:00:00] /workspace/{where}:120: {message}"}  # its fatal log's own head; else bare


def render_in_log(t: Template) -> str:
    """One catalogue message as its engine prints it (values filled in), for training."""
    message = render(t.template, "7")
    exc = t.exception or "RuntimeError"
    base = t.file.rsplit("/", 1)[-1]
    if t.engine == "trtllm" and t.file.startswith("cpp/"):
        text = message if message.startswith("Assertion failed") else f"Assertion failed: {message}"
        return f"[TensorRT-LLM][ERROR] {text} (/src/tensorrt_llm/{t.file}:120)"
    if t.engine == "nccl":
        return f"gpu-node-1:4107:4190 [0] {base}:120 NCCL WARN {message}"
    if t.is_cpp:  # a C++ library's error reaches Python as the exception's text
        form = CPP_ERROR_FORMS.get(t.engine, "{message}")
        return "RuntimeError: " + form.format(where=t.file.split("/", 1)[-1], message=message)
    if t.level == "error":
        prefix = {"vllm": f"ERROR 11-30 10:00:00 [{base}:120] ", "sglang": "[2026-11-30 10:00:00 TP0] ",
                  "trtllm": "[11/30/2026-10:00:00] [TRT-LLM] [E] "}.get(t.engine, "")
        return prefix + message
    lines = ["Traceback (most recent call last):",
             f'  File "/opt/venv/lib/python3.12/site-packages/{t.file}", line 120, in {t.function}',
             f"{exc}: {message}"]
    prefix = {"vllm": "(EngineCore_0 pid=4107) ", "sglang": "[2026-11-30 10:00:00 TP0] "}.get(t.engine, "")
    return "\n".join(prefix + line for line in lines)


def _signature_entries(corpus: Corpus) -> list[Entry]:
    return [Entry(normalize_line(s.pattern), inc.category, inc.id, "signature")
            for inc in corpus.incidents for s in inc.signatures if not s.regex]


@dataclasses.dataclass
class _Prepared:
    example: TrainingExample
    ex: Extract
    doc: str
    qlines: list[str]


def _prepare(examples: Sequence[TrainingExample]) -> list[_Prepared]:
    out = []
    for e in examples:
        ex = extract(e.text)
        out.append(_Prepared(e, ex, document(ex), query_lines(ex, k=8)))
    return out


FEEDBACK_WEIGHT = 3.0   # one example on-call labelled counts as this many corpus examples in the fit


@dataclasses.dataclass(frozen=True)
class _Docs:
    """The classifier's training documents: each example's document, its last exception line (a pasted
    fragment is often just that line), the signatures' own text."""

    docs: list[str]
    labels: list[str]
    weights: list[float]


def _documents(prep: Sequence[_Prepared], sig_entries: Sequence[Entry] = ()) -> _Docs:
    docs = [p.doc for p in prep] + [e.text for e in sig_entries]
    labels = [p.example.category for p in prep] + [e.category for e in sig_entries]
    weights = [_weight(p) for p in prep] + [1.0] * len(sig_entries)
    for p in prep:  # a pasted fragment is often just the last exception line: teach that view too
        last = next((l.body for l in reversed(p.ex.lines) if l.exception), None)
        if last:
            docs.append(normalize_line(last))
            labels.append(p.example.category)
            weights.append(_weight(p))
    return _Docs(docs, labels, weights)


def _weight(p: _Prepared) -> float:
    return FEEDBACK_WEIGHT if p.example.source == "feedback" else 1.0


def _fit_classifier(prep: Sequence[_Prepared], sig_entries: Sequence[Entry]) -> TextClassifier:
    d = _documents(prep, sig_entries)
    clf = TextClassifier()
    rows = clf.fit_vectoriser(d.docs)
    clf.fit_head(rows, d.labels, d.weights)
    clf.fit_incidents(rows[: len(prep)], [p.example.incident for p in prep], [p.example.category for p in prep])
    return clf


def classifier_scores(clf: TextClassifier, docs: Sequence[str]) -> list[PassScores]:
    rows = clf.transform(docs)  # once: the categories and the incidents are both read from it
    probs = clf.proba_rows(rows)
    out = []
    for row, sims in zip(probs, clf.incident_similarities(rows)):
        best: dict[str, tuple[float, str]] = {}
        for inc, cat in zip(clf.incidents, clf.incident_categories):
            if sims.get(inc, 0.0) > best.get(cat, (-1.0, ""))[0]:
                best[cat] = (sims[inc], inc)
        out.append(PassScores({c: float(p) for c, p in zip(clf.classes, row)},
                              {c: inc for c, (_, inc) in best.items()}, sims))
    return out


def retrieval_scores(index: Index, qvecs: np.ndarray) -> PassScores:
    scores, incidents = index.search(qvecs)
    return PassScores(scores, incidents)


def train(corpus: Corpus, embedder: Embedder, store: ArtefactStore, extra: Sequence[TrainingExample] = (),
          progress: Callable[[str], None] = lambda _: None, parent: str | None = None) -> Model:
    """Fit, cross-validate, calibrate and save a new version; the caller decides whether to activate it."""
    t0 = time.perf_counter()
    examples = base_examples(corpus) + list(extra)
    progress(f"preparing {len(examples)} examples")
    prep = _prepare(examples)
    sig_entries = _signature_entries(corpus)
    kinds = ["feedback" if p.example.source == "feedback" else "example" for p in prep]
    stop = stop_lines([Entry(q, p.example.category, p.example.incident, k) for p, k in zip(prep, kinds) for q in p.qlines])
    for p in prep:
        p.qlines = [q for q in p.qlines if q not in stop][:QUERY_LINES]
    entries = [Entry(q, p.example.category, p.example.incident, k) for p, k in zip(prep, kinds) for q in p.qlines]
    entries += [e for e in sig_entries if e.text not in stop]
    owner = [i for i, p in enumerate(prep) for _ in p.qlines] + [-1] * (len(entries) - sum(len(p.qlines) for p in prep))
    progress(f"embedding {len(entries)} index entries")
    t_embed = time.perf_counter()
    full_index = Index(entries, embedder.encode([e.text for e in entries]), stop)
    embed_s = time.perf_counter() - t_embed
    qvec_rows: dict[int, list[int]] = {}
    for row, i in enumerate(owner):
        if i >= 0:
            qvec_rows.setdefault(i, []).append(row)

    progress("cross-validating and calibrating")
    rows, labels, cv_preds, known_preds = _cross_validate(corpus, prep, full_index, qvec_rows, owner)
    calibrator = _fit_calibrator(rows, labels)
    calibrator = dataclasses.replace(calibrator, threshold=_fit_threshold(cv_preds + known_preds, calibrator, corpus))
    cv = _cv_metrics(cv_preds, calibrator, corpus)
    known_cv = _cv_metrics(known_preds, calibrator, corpus)
    if known_cv:
        cv["cv_top1_fused_known"] = known_cv["cv_top1_fused"]

    progress("fitting the final classifier")
    clf = _fit_classifier([p for p in prep if p.example.category], sig_entries)
    version = store.new_version()
    meta = Meta(version=version, format=FORMAT, corpus_fingerprint=corpus.fingerprint, embedder=embedder.name,
                created=time.time(), metrics={**cv, "train_seconds": round(time.perf_counter() - t0, 2),
                                               "embed_seconds": round(embed_s, 2), "index_entries": len(entries)},
                examples=len(examples), feedback_examples=sum(e.source == "feedback" for e in examples), parent=parent)
    store.save(meta, {"features": clf.features, "classifier": clf, "calibrator": calibrator, "index": full_index,
                      "extra": [dataclasses.asdict(e) for e in extra]})
    return Model(clf, full_index, calibrator, meta, tuple(extra), embedder)


def _cross_validate(corpus: Corpus, prep: list[_Prepared], full_index: Index, qvec_rows: dict[int, list[int]],
                    owner: list[int]) -> tuple[list[list[float]], list[int], list[_Pred], list[_Pred]]:
    groups = [p.example.incident for p in prep]
    n_folds = min(FOLDS, len(set(groups)))
    rows: list[list[float]] = []
    labels: list[int] = []
    cv_preds: list[_Pred] = []
    known_preds: list[_Pred] = []
    symptom_roles = frozenset(c for c, cat in corpus.categories.items() if cat.symptom)
    if n_folds < 2:
        return rows, labels, cv_preds, known_preds
    parts = corpus_parts(corpus)  # the engine's own, when one is serving this corpus
    known, lifecycle, messages = parts.scanner, parts.lifecycle, parts.messages
    entry_incident = [e.incident for e in full_index.entries]
    for train_idx, test_idx in GroupKFold(n_splits=n_folds).split(prep, groups=groups):
        held = {groups[i] for i in test_idx}
        fold_corpus = Corpus(corpus.categories, tuple(i for i in corpus.incidents if i.id not in held))
        scanner = Scanner(fold_corpus)
        held_dirs = {g for g in held if g.startswith(CATALOGUE_GROUP)}
        fold_messages = (messages.without(lambda t: _catalogue_group(t) in held_dirs)  # noqa: B023 - called here
                         if held_dirs else messages)
        clf = _fit_classifier([prep[i] for i in train_idx],
                              list(_signature_entries(fold_corpus)))
        index = full_index.subset([inc not in held for inc in entry_incident])
        test_docs = [prep[i].doc for i in test_idx]
        clf_scores = classifier_scores(clf, test_docs)
        for i, cs in zip(test_idx, clf_scores):
            p = prep[i]
            qv = full_index.vectors[qvec_rows.get(i, [])]
            rs = retrieval_scores(index, qv)
            # Two situations the engine meets: a variant no rule knows (the fold's scanner) and a known
            # failure whose signature fires (the whole corpus's); the learned passes are held out in
            # both. Calibrating on the first alone teaches the calibrator that rule hits are noise.
            for rules, known_messages, preds in ((scanner, fold_messages, cv_preds), (known, messages, known_preds)):
                reading = read_log(p.example.text, rules, corpus, lifecycle, symptom_roles, known_messages)
                faulty = has_fault(reading.focus)
                ordering = earlier_fault(reading.focus, reading.ordering,  # as served: before fusion
                                         lambda sub: (classifier_scores(clf, [document(sub)])[0],),  # noqa: B023 - called here
                                         symptom_roles | corpus.downstream) or reading.ordering
                ctx = AdjustContext(ordering, reading.focus, p.example.text, reading.has_faults, corpus, symptom_roles,
                                    stopping_at=reading.stopping_at)
                preds.append((p.example.category, ordering, rs, cs, faulty, ctx))
                for c in candidates(ordering, rs, cs):
                    rows.append(features(c, ordering, rs, cs, symptom_roles, faulty))
                    labels.append(int(c == p.example.category))
    return rows, labels, cv_preds, known_preds


def _catalogue_group(t: Template) -> str:
    return f"{CATALOGUE_GROUP}{t.engine}:" + "/".join(t.file.split("/")[:CATALOGUE_GROUP_DEPTH])


def _fit_calibrator(rows: list[list[float]], labels: list[int]) -> Calibrator:
    if len(set(labels)) < 2:
        return Calibrator()
    lr = LogisticRegression(C=1.0, max_iter=2000)
    lr.fit(np.asarray(rows), np.asarray(labels))
    return Calibrator(coef=tuple(float(x) for x in lr.coef_[0]), intercept=float(lr.intercept_[0]))


def _fit_threshold(cv_preds: Sequence[_Pred], calibrator: Calibrator, corpus: Corpus) -> float:
    """The confidence floor that answers most held-out examples right, `unknown` ones included, where a
    wrong answer also costs `WRONG_ANSWER_COST` of a right one: on call, a confident wrong cause sends
    people down the wrong path, while "unknown, might be …" only costs them the reading."""
    if not cv_preds:
        return calibrator.threshold
    symptom_roles = frozenset(c for c, cat in corpus.categories.items() if cat.symptom)
    tops = []
    for label, ordering, rs, cs, faulty, ctx in cv_preds:
        fusion = adjust(fuse(ordering, rs, cs, calibrator, symptom_roles, {}, faulty), ctx)  # as served
        tops.append((label, fusion.ranking[0][0] if fusion.ranking else UNKNOWN, fusion.confidence))
    grid = [t / 100 for t in range(15, 71, 5)]
    right = {t: sum((top if conf >= t else UNKNOWN) == label for label, top, conf in tops)
             - WRONG_ANSWER_COST * sum(conf >= t and top != label for label, top, conf in tops) for t in grid}
    # Every threshold within half a percent of the best is as good on these folds: take the middle
    # of that plateau rather than an edge, so the choice does not hang on a handful of examples.
    best = max(right.values())
    plateau = [t for t in grid if right[t] >= best - 0.005 * len(tops)]
    return plateau[len(plateau) // 2]


def _cv_metrics(cv_preds: Sequence[_Pred], calibrator: Calibrator, corpus: Corpus) -> dict[str, float]:
    if not cv_preds:
        return {}
    threshold = calibrator.threshold
    symptom_roles = frozenset(c for c, cat in corpus.categories.items() if cat.symptom)
    hits = {"rules": 0, "retrieval": 0, "classifier": 0, "fused": 0}
    for label, ordering, rs, cs, faulty, ctx in cv_preds:
        rule_top = ordering.initiating.category if ordering.initiating else UNKNOWN
        ret_top = max(rs.scores.items(), key=lambda kv: kv[1])[0] if rs.scores else UNKNOWN
        clf_top = max(cs.scores.items(), key=lambda kv: kv[1])[0] if cs.scores else UNKNOWN
        fusion = adjust(fuse(ordering, rs, cs, calibrator, symptom_roles, {}, faulty), ctx)
        fused_top = fusion.ranking[0][0] if fusion.ranking and fusion.confidence >= threshold else UNKNOWN
        for name, top in (("rules", rule_top), ("retrieval", ret_top), ("classifier", clf_top), ("fused", fused_top)):
            hits[name] += int(top == label)
    n = len(cv_preds)
    return {f"cv_top1_{k}": round(v / n, 4) for k, v in hits.items()} | {"cv_examples": n, "threshold": threshold}


_BASE: dict[str, list[TrainingExample]] = {}  # the latest corpus's examples, by its fingerprint
_BASE_LOCK = threading.Lock()


def base_examples(corpus: Corpus) -> list[TrainingExample]:
    """The corpus's examples and the catalogue's rendered ones: the same for every retrain of one
    corpus, so built once per process (a retrain after a vote refits; it does not re-render)."""
    with _BASE_LOCK:
        cached = _BASE.get(corpus.fingerprint)
        if cached is None:
            symptom_roles = frozenset(c for c, cat in corpus.categories.items() if cat.symptom)
            cached = corpus_examples(corpus) + catalogue_examples(corpus_parts(corpus).messages, symptom_roles)
            _BASE.clear()
            _BASE[corpus.fingerprint] = cached
        return list(cached)


@dataclasses.dataclass(frozen=True)
class _BaseRows:
    """What every retrain of one parent vectoriser shares: the corpus part of the training matrix."""

    features: object        # the vectoriser these rows came from (compared by identity)
    fingerprint: str
    rows: csr_matrix        # sparse rows of _documents(base prep, signatures)
    labels: list[str]
    weights: list[float]
    prepared: int           # the first `prepared` rows are the examples' own documents (for the centroids)
    incidents: list[str]
    categories: list[str]


_BASE_ROWS: list[_BaseRows] = []
_PREPARED: OrderedDict[tuple[str, str, str, str], _Prepared] = OrderedDict()
PREPARED_CACHE = 5000    # feedback examples kept read (extract, document) between retrains


def _base_rows(parent: TextClassifier, corpus: Corpus) -> _BaseRows:
    with _BASE_LOCK:
        for b in _BASE_ROWS:
            if b.features is parent.features and b.fingerprint == corpus.fingerprint:
                return b
    prep = _prepare(base_examples(corpus))
    d = _documents(prep, _signature_entries(corpus))
    base = _BaseRows(parent.features, corpus.fingerprint, parent.transform(d.docs), d.labels, d.weights, len(prep),
                     [p.example.incident for p in prep], [p.example.category for p in prep])
    with _BASE_LOCK:
        _BASE_ROWS[:] = [base]
    return base


def warm_retrain(model: Model, corpus: Corpus) -> None:
    """Read the corpus's examples for `model`'s retrains now (the bot's start-up), not on the first vote."""
    _base_rows(model.classifier, corpus)


def _prepared(examples: Sequence[TrainingExample]) -> list[_Prepared]:
    """`_prepare` with a memory: a retrain after one vote reads only the new example."""
    out = []
    for e in examples:
        key = (hashlib.blake2b(e.text.encode("utf-8", "replace"), digest_size=16).hexdigest(), e.category,
               e.incident, e.source)
        with _BASE_LOCK:
            hit = _PREPARED.get(key)
        if hit is None:
            hit = _prepare([e])[0]
            with _BASE_LOCK:
                _PREPARED[key] = hit
                while len(_PREPARED) > PREPARED_CACHE:
                    _PREPARED.popitem(last=False)
        out.append(hit)
    return out


def retrain(parent: Model, corpus: Corpus, embedder: Embedder, store: ArtefactStore,
            extra: Sequence[TrainingExample]) -> Model:
    """A quick retrain for feedback: refit the classifier's head, extend the index, keep the calibrator.

    The parent's cross-validated calibration still describes the passes (the corpus is unchanged),
    so the seconds a full cross-validation costs are not spent on every vote; nor are the vectoriser's
    (its vocabulary was fitted on the corpus, and the corpus rows are cached) or the corpus lines'
    embeddings (the parent's index keeps them; only feedback lines are encoded).
    """
    if parent.meta.corpus_fingerprint != corpus.fingerprint:
        raise ValueError("the corpus changed since the parent model: run a full train")
    t0 = time.perf_counter()
    base = _base_rows(parent.classifier, corpus)
    fb_prep = _prepared(extra)
    fb = _documents(fb_prep)
    fb_rows = parent.classifier.cached_rows(fb.docs) if fb.docs else None
    rows = vstack([base.rows, fb_rows]).tocsr() if fb_rows is not None else base.rows
    kept = set(extra)
    changed = _documents(_prepared([e for e in extra if e not in set(parent.extra)]
                                   + [e for e in parent.extra if e not in kept]))
    if changed.docs:
        clf = parent.classifier.updated(rows, base.labels + fb.labels, base.weights + fb.weights,
                                        parent.classifier.cached_rows(changed.docs), changed.labels)
    else:
        clf = parent.classifier.refit(rows, base.labels + fb.labels, base.weights + fb.weights)
    own = vstack([base.rows[: base.prepared], fb_rows[: len(fb_prep)]]).tocsr() if fb_rows is not None \
        else base.rows[: base.prepared]
    clf.fit_incidents(own, base.incidents + [p.example.incident for p in fb_prep],
                      base.categories + [p.example.category for p in fb_prep])
    fb_entries = [Entry(q, p.example.category, p.example.incident, "feedback")
                  for p in fb_prep for q in parent.index.usable(p.qlines)[:QUERY_LINES]]
    index = parent.index.with_feedback(fb_entries, embedder.encode)
    meta = Meta(version=store.new_version(), format=FORMAT, corpus_fingerprint=corpus.fingerprint,
                embedder=embedder.name, created=time.time(),
                metrics={**{k: v for k, v in parent.meta.metrics.items() if k.startswith("cv_")},
                         "train_seconds": round(time.perf_counter() - t0, 2), "index_entries": len(index.entries),
                         "retrain_of": parent.meta.version, "classes_refitted": len(clf.moved)},
                examples=base.prepared + len(extra), feedback_examples=len(extra), parent=parent.meta.version)
    store.save(meta, {"classifier": clf, "calibrator": parent.calibrator, "index": index,
                      "extra": [dataclasses.asdict(e) for e in extra]},
               linked={"features": parent.meta.version})
    return Model(clf, index, parent.calibrator, meta, tuple(extra), embedder)
