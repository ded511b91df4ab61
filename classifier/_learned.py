"""The learned passes at run time, and keeping their artefact in step with the corpus.

`load_learned_passes` returns the retrieval and classifier passes of the active model version. A
missing or stale version (the corpus or the embedder changed) is rebuilt — announced on stderr,
never used silently — carrying over the feedback examples the previous version was trained with.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from servetriage._errors import ModelError
from servetriage._settings import Settings
from servetriage.corpus import Corpus, load_corpus

from ._artefacts import artefacts_for
from ._embed import Embedder, SentenceEmbedder, dir_digest, packaged_model_path
from ._extract import Extract
from ._features import document, query_lines
from ._fuse import Calibrator, PassScores
from ._retrieval import Index
from ._textclf import TextClassifier
from ._train import Model, TrainingExample, classifier_scores, retrieval_scores, train

if TYPE_CHECKING:
    from ._engine import Engine


class RetrievalPass:
    name = "retrieval"

    def __init__(self, index: Index, embedder: Embedder) -> None:
        self.index, self.embedder = index, embedder

    def score(self, ex: Extract) -> PassScores:
        lines = self.index.usable(query_lines(ex, k=8))[:4]
        if not lines:
            return PassScores({})
        return retrieval_scores(self.index, self.embedder.encode(lines))


class ClassifierPass:
    name = "classifier"

    def __init__(self, clf: TextClassifier) -> None:
        self.clf = clf

    def score(self, ex: Extract) -> PassScores:
        return classifier_scores(self.clf, [document(ex)])[0]


_EMBEDDERS: dict[str, SentenceEmbedder] = {}  # explicit cache: one model per path per process
_EMBEDDER_LOCK = threading.Lock()


def embedder_path(settings: Settings) -> Path | None:
    """The configured model, else the promoted fine-tuned one (model_dir/embedder), else None: packaged."""
    if settings.embedder_path is not None:
        return settings.embedder_path
    tuned = settings.model_dir / "embedder" / "ACTIVE"
    if tuned.is_file():
        candidate = settings.model_dir / "embedder" / tuned.read_text().strip()
        if candidate.is_dir():
            return candidate
    return None


def embedder_for(settings: Settings) -> SentenceEmbedder:
    """The embedder new models are built with: one per model path per process."""
    return embedder_at(embedder_path(settings), settings.threads)


def embedder_at(path: Path | None, threads: int) -> SentenceEmbedder:
    """The embedder at `path` (None: the packaged one), one per path per process."""
    key = str(path)
    with _EMBEDDER_LOCK:
        if key not in _EMBEDDERS:
            _EMBEDDERS[key] = SentenceEmbedder(path, threads=threads)
        return _EMBEDDERS[key]


def embedder_named(settings: Settings, name: str | None) -> SentenceEmbedder:
    """The embedder a model version was built with, by the name its metadata records: the configured
    one, the packaged one or a tuned one kept under `model_dir/embedder`; so a model rolled back to
    from before a fine-tune still reads its index with its own embedder. `ModelError` when that
    embedder is installed no more (the model must be rebuilt)."""
    configured = embedder_for(settings)
    if name is None or configured.name == name:
        return configured
    tuned = settings.model_dir / "embedder"
    places = [packaged_model_path()] + (sorted(p for p in tuned.iterdir() if p.is_dir()) if tuned.is_dir() else [])
    for path in places:
        if f"{path.name}:{dir_digest(path)}" == name:
            return embedder_at(None if path == packaged_model_path() else path, settings.threads)
    raise ModelError(f"the embedder {name} this model was built with is no longer installed")


def load_model(settings: Settings, corpus: Corpus, embedder: Embedder | None = None,
               version: str | None = None) -> Model:
    """A stored version; `embedder` None: the one it was built with (`embedder_named`)."""
    store = artefacts_for(settings)
    version = version or store.active()
    if version is None:
        raise ModelError("no trained model yet: run `servetriage train`")
    meta = store.meta(version)
    embedder = embedder if embedder is not None else embedder_named(settings, meta.embedder)
    store.check(meta, corpus.fingerprint, embedder.name)
    clf = store.load_object(version, "classifier").attach(store.load_object(version, "features"))
    calibrator = store.load_object(version, "calibrator")
    try:
        index = Index.load(store.path(version) / "index")
    except (OSError, RuntimeError, ValueError) as exc:
        raise ModelError(f"model {version}: cannot load its index ({type(exc).__name__})") from None
    return Model(clf, index, calibrator, meta, tuple(extra_examples(settings, version)), embedder)


def extra_examples(settings: Settings, version: str | None) -> list[TrainingExample]:
    if version is None:
        return []
    store = artefacts_for(settings)
    try:
        rows = store.load_object(version, "extra")
    except ModelError:
        return []
    return [TrainingExample(**r) for r in rows]


def ensure_model(settings: Settings, corpus: Corpus, embedder: Embedder) -> Model:
    """The active version (with the embedder it was built with), else a new one built with `embedder`."""
    store = artefacts_for(settings)
    active = store.active()
    try:
        return load_model(settings, corpus, None, active)
    except ModelError as exc:
        print(f"servetriage: {exc}; training a new model (takes under a minute)…", file=sys.stderr)
    model = train(corpus, embedder, store, extra_examples(settings, active), parent=active)
    store.activate(model.meta.version)
    return model


def load_learned_passes(settings: Settings, corpus: Corpus) -> tuple[tuple[Any, ...], Calibrator | None]:
    if not settings.embeddings:
        return (), None
    model = ensure_model(settings, corpus, embedder_for(settings))
    embedder = model.embedder or embedder_for(settings)
    return (RetrievalPass(model.index, embedder), ClassifierPass(model.classifier)), model.calibrator


def train_command(settings: Settings, as_json: bool = False) -> int:
    """`servetriage train`: a new version from corpus (+ the active version's feedback examples)."""
    corpus = load_corpus(settings.extra_corpus_dirs)
    embedder = embedder_for(settings)
    store = artefacts_for(settings)
    active = store.active()
    say = (lambda m: None) if as_json else (lambda m: print(f"  {m}", file=sys.stderr))
    model = train(corpus, embedder, store, extra_examples(settings, active), progress=say, parent=active)
    store.activate(model.meta.version)
    if as_json:
        print(json.dumps(dataclasses.asdict(model.meta)))
    else:
        m = model.meta.metrics
        print(f"trained model {model.meta.version} on {model.meta.examples} examples in {m['train_seconds']} s "
              f"(cross-validated top-1: rules {m.get('cv_top1_rules')}, retrieval {m.get('cv_top1_retrieval')}, "
              f"classifier {m.get('cv_top1_classifier')}, fused {m.get('cv_top1_fused')}); now active")
    return 0


def engine_for_model(settings: Settings, corpus: Corpus, model: Model) -> Engine:
    """An `Engine` that answers with one specific model version (gating, replay, A/B)."""
    from ._engine import Engine  # noqa: PLC0415 - _engine imports this module

    embedder = model.embedder or embedder_named(settings, model.meta.embedder)
    return Engine(settings, corpus=corpus, passes=(RetrievalPass(model.index, embedder), ClassifierPass(model.classifier)),
                  calibrator=model.calibrator)
