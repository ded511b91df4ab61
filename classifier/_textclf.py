"""The trained classifier: TF-IDF of words and character n-grams, then a linear SVM.

Character n-grams carry what a reworded message keeps (`OutOfMemory`, `nccl`, `xgrammar`). A linear
SVM fits the corpus in well under a second (a retrain on every vote stays cheap) and, cross-validated
by incident on the corpus, was as accurate as logistic regression at a tenth of the time. Its margins
become scores through a softmax; the fusion calibrator maps them to probabilities.

The vectoriser (`features`) and the SVM (`head`) are two parts: a full training fits both, a retrain
after a vote keeps the parent's vectoriser and refits only the head (`refit`) on the parent's cached
rows plus the new ones, so it neither refits the vocabulary nor saves it again (the model store links
the parent's file). The vectoriser is saved apart from the head (`features.pickle`).
"""

from __future__ import annotations

import copy
import hashlib
import threading
from collections import Counter, OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.sparse import csr_matrix, hstack, vstack
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.pipeline import FeatureUnion
from sklearn.preprocessing import normalize
from sklearn.svm import LinearSVC

TEMPERATURE = 4.0
ROW_CACHE = 4096   # documents whose feature rows are kept per vectoriser (the gate's set, with room)
MARGIN = -1.0      # hinge loss: a negative example scored below this adds no loss and moves no boundary
REFIT_SHARE = 0.02  # past this share of rows changed since the head's last full fit, fit it whole again


def build_features() -> FeatureUnion:
    return FeatureUnion([
        ("words", TfidfVectorizer(token_pattern=r"[A-Za-z_][A-Za-z0-9_]{1,}", ngram_range=(1, 2), min_df=1,
                                  sublinear_tf=True, lowercase=True, max_features=40000)),
        ("chars", TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 5), min_df=2, sublinear_tf=True,
                                  lowercase=True, max_features=60000)),
    ])


class RowCache:
    """Feature rows of documents by content hash, for one fitted vectoriser (bounded, thread-safe)."""

    def __init__(self, size: int = ROW_CACHE) -> None:
        self._rows: OrderedDict[str, csr_matrix] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def rows(self, features: FeatureUnion, docs: Sequence[str]) -> csr_matrix:
        keys = [hashlib.blake2b(d.encode("utf-8", "replace"), digest_size=16).hexdigest() for d in docs]
        with self._lock:
            missing = [i for i, k in enumerate(keys) if k not in self._rows]
        if missing:
            fresh = csr_matrix(features.transform([docs[i] for i in missing]))
            with self._lock:
                for n, i in enumerate(missing):
                    self._rows[keys[i]] = fresh[n]
                while len(self._rows) > self._size:
                    self._rows.popitem(last=False)
        with self._lock:
            got = [self._rows[k] for k in keys if k in self._rows]
        if len(got) < len(keys):  # evicted meanwhile by a bigger batch: compute directly
            return csr_matrix(features.transform(list(docs)))
        return csr_matrix(vstack(got))


class TextClassifier:
    """Fit on documents and labels; `proba` gives a score in 0..1 per known category, summing to 1."""

    def __init__(self, c: float = 0.5) -> None:
        self.c = c
        self.features: FeatureUnion | None = None
        self.head: LinearSVC | None = None
        self.classes: tuple[str, ...] = ()
        self.incidents: tuple[str, ...] = ()
        self.incident_categories: tuple[str, ...] = ()
        self._by_feature: Any = None   # each incident's TF-IDF centroid, as a column
        self._cache = RowCache()
        self.drift = 0     # rows added or removed by class-wise updates since the head's last full fit
        self.moved: tuple[str, ...] = ()   # the classes the last fit or update refitted

    # -- fitting -----------------------------------------------------------------------------------
    def fit(self, docs: Sequence[str], labels: Sequence[str],
            weights: Sequence[float] | None = None) -> TextClassifier:
        """Fit the vectoriser and the head."""
        return self.fit_head(self.fit_vectoriser(docs), labels, weights)

    def fit_vectoriser(self, docs: Sequence[str]) -> csr_matrix:
        """Fit the vectoriser on `docs`; returns their feature rows."""
        self.features = build_features()
        self._cache = RowCache()
        return csr_matrix(self.features.fit_transform(list(docs)))

    def refit(self, rows: csr_matrix, labels: Sequence[str], weights: Sequence[float] | None = None) -> TextClassifier:
        """A new classifier with this one's vectoriser (and row cache) and a head fitted on `rows`
        (feature rows from `transform`)."""
        new = TextClassifier(self.c)
        new.features, new._cache = self.features, self._cache
        return new.fit_head(rows, labels, weights)

    def updated(self, rows: csr_matrix, labels: Sequence[str], weights: Sequence[float], changed: csr_matrix,
                changed_labels: Sequence[str]) -> TextClassifier:
        """A new classifier whose head is this one's with only the classes the changed examples can move
        refitted on `rows` (all of the new training rows); `changed`: rows of the examples added or
        removed. The head is one-vs-rest, each class its own problem: a class moves when a changed
        example is its own, or lies inside its margin as a negative (`MARGIN`); any other class's
        problem is unchanged but for the balanced class weights' share of one more row, and those
        shares are renewed by a whole fit once `REFIT_SHARE` of the rows has changed. Each refitted
        class is fitted exactly as the multi-class fit would (positives weighted by the balanced
        class weight, negatives at 1), so a fresh fit and the update agree on it."""
        n_changed = changed.shape[0]
        if self.head is None or set(labels) - set(self.classes) or \
                self.drift + n_changed > REFIT_SHARE * len(labels) or set(self.classes) - set(labels):
            return self.refit(rows, labels, weights)
        inside = np.atleast_2d(self.head.decision_function(changed)) > MARGIN
        moved = set(changed_labels) | {self.classes[j] for j in np.flatnonzero(inside.any(axis=0))}
        y = np.asarray(labels)
        w = np.asarray(weights, dtype=float)
        counts = Counter(labels)
        coef, intercept = self.head.coef_.copy(), self.head.intercept_.copy()
        for j, c in enumerate(self.classes):
            if c not in moved:
                continue
            pos = y == c
            binary = LinearSVC(C=self.c, random_state=0)
            binary.fit(rows, pos, sample_weight=w * np.where(pos, len(y) / (len(self.classes) * counts[c]), 1.0))
            coef[j], intercept[j] = binary.coef_[0], binary.intercept_[0]
        new = TextClassifier(self.c)
        new.features, new._cache, new.classes = self.features, self._cache, self.classes
        new.head = copy.copy(self.head)
        new.head.coef_, new.head.intercept_ = coef, intercept
        new.drift = self.drift + n_changed
        new.moved = tuple(sorted(moved))
        return new

    def fit_head(self, rows: csr_matrix, labels: Sequence[str], weights: Sequence[float] | None) -> TextClassifier:
        self.head = LinearSVC(C=self.c, class_weight="balanced", random_state=0)
        self.head.fit(rows, list(labels), sample_weight=None if weights is None else np.asarray(weights, dtype=float))
        self.classes = tuple(str(c) for c in self.head.classes_)
        self.drift = 0
        self.moved = self.classes
        return self

    def transform(self, docs: Sequence[str]) -> csr_matrix:
        """Feature rows of `docs` (fitted vectoriser required)."""
        if self.features is None:
            raise ValueError("the classifier has no fitted vectoriser")
        if self.features.transformer_weights:  # (build_features sets none; a union with weights scales)
            return csr_matrix(self.features.transform(list(docs)))
        # Each vectoriser in turn, as FeatureUnion does, without its joblib dispatch: a third of the
        # cost of one paste's row.
        parts = [vectoriser.transform(list(docs)) for _, vectoriser in self.features.transformer_list]
        return csr_matrix(hstack(parts, format="csr"))

    def cached_rows(self, docs: Sequence[str]) -> csr_matrix:
        """Feature rows of `docs`, reused across the refits that share this vectoriser."""
        if self.features is None:
            raise ValueError("the classifier has no fitted vectoriser")
        return self._cache.rows(self.features, docs)

    def fit_incidents(self, rows: csr_matrix, incidents: Sequence[str], categories: Sequence[str]) -> None:
        """One TF-IDF centroid per incident: which incident of a category a whole log resembles most."""
        keep = [i for i, inc in enumerate(incidents) if inc]
        if not keep:
            return
        order = sorted({incidents[i] for i in keep})
        row = {inc: n for n, inc in enumerate(order)}
        cat = {incidents[i]: categories[i] for i in keep}
        members = csr_matrix((np.ones(len(keep)), ([row[incidents[i]] for i in keep], range(len(keep)))),
                             shape=(len(order), len(keep)))
        self._by_feature = normalize(members @ rows[keep]).T.tocsr()  # features x incidents: a row's product is cheap
        self.incidents = tuple(order)
        self.incident_categories = tuple(cat[i] for i in order)

    # -- answering ---------------------------------------------------------------------------------
    def incident_similarity(self, doc: str) -> dict[str, float]:
        return self.incident_similarities(self.transform([doc]))[0]

    def incident_similarities(self, rows: csr_matrix) -> list[dict[str, float]]:
        """Per row: its cosine similarity to each incident's centroid."""
        if self._by_feature is None:
            return [{} for _ in range(rows.shape[0])]
        sims = (normalize(rows) @ self._by_feature).toarray()
        return [{inc: float(s) for inc, s in zip(self.incidents, sims[n])} for n in range(rows.shape[0])]

    def proba(self, docs: Sequence[str]) -> np.ndarray:
        return self.proba_rows(self.transform(docs))

    def proba_rows(self, rows: csr_matrix) -> np.ndarray:
        if self.head is None:
            raise ValueError("the classifier is not fitted")
        margins: np.ndarray = np.atleast_2d(self.head.decision_function(rows)) * TEMPERATURE
        margins -= margins.max(axis=1, keepdims=True)
        exp = np.exp(margins)
        probs: np.ndarray = exp / exp.sum(axis=1, keepdims=True)
        return probs

    def first_answers(self, docs: Sequence[str]) -> list[str]:
        """The top category for each document (rows cached: the promotion gate asks this of every candidate)."""
        if not docs:
            return []
        if self.head is None:
            raise ValueError("the classifier is not fitted")
        scores = np.atleast_2d(self.head.decision_function(self.cached_rows(docs)))
        return [self.classes[i] for i in scores.argmax(axis=1)]

    # -- persistence: the vectoriser is saved on its own (`features`), linked between retrains --------
    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["features"] = None
        state.pop("_cache", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        rows = state.pop("_centroids", None)  # a model saved before the centroids were kept as columns
        if rows is not None and state.get("_by_feature") is None:
            state["_by_feature"] = rows.T.tocsr()
        self.__dict__.update({"drift": 0, "moved": (), "_by_feature": None, **state})
        self._cache = RowCache()

    def attach(self, features: FeatureUnion) -> TextClassifier:
        """Give a loaded head its vectoriser (saved apart)."""
        self.features = features
        return self
