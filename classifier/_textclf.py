"""The trained classifier: TF-IDF of words and character n-grams, then a linear model.

Character n-grams carry what a reworded message keeps (`OutOfMemory`, `nccl`, `xgrammar`); the
optional embedding block adds the sentence model's view of the lines.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import FeatureUnion, Pipeline


def build_pipeline(c: float = 8.0) -> Pipeline:
    features = FeatureUnion([
        ("words", TfidfVectorizer(token_pattern=r"[A-Za-z_][A-Za-z0-9_]{1,}", ngram_range=(1, 2), min_df=1,
                                  sublinear_tf=True, lowercase=True, max_features=60000)),
        ("chars", TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 5), min_df=2, sublinear_tf=True,
                                  lowercase=True, max_features=120000)),
    ])
    clf = LogisticRegression(C=c, max_iter=3000, class_weight="balanced")
    return Pipeline([("features", features), ("clf", clf)])


class TextClassifier:
    """Fit on documents and labels; `proba` gives a probability per known category."""

    def __init__(self, c: float = 8.0) -> None:
        self.pipeline = build_pipeline(c)
        self.classes: tuple[str, ...] = ()

    def fit(self, docs: Sequence[str], labels: Sequence[str]) -> "TextClassifier":
        self.pipeline.fit(list(docs), list(labels))
        self.classes = tuple(self.pipeline.classes_)
        return self

    def proba(self, docs: Sequence[str]) -> np.ndarray:
        return self.pipeline.predict_proba(list(docs))
