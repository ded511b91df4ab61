"""The classifier's text features and its incident centroids, on a few documents written here."""

from __future__ import annotations

import pickle

import numpy as np

from servetriage.classifier._textclf import TextClassifier

DOCS = [
    "torch.outofmemoryerror cuda out of memory tried to allocate <num> gib",
    "cuda out of memory while capturing cuda graphs for batch size <num>",
    "nccl watchdog caught collective operation timeout after <num> milliseconds",
    "collective operation timeout on rank <num> allreduce ran for <num> ms",
    "address already in use while binding port <num>",
    "error while attempting to bind on address port <num> address already in use",
]
LABELS = ["gpu-oom", "gpu-oom", "distributed-comm", "distributed-comm", "port-in-use", "port-in-use"]
INCIDENTS = ["oom-a", "oom-b", "nccl-a", "nccl-a", "port-a", "port-b"]


def _fitted() -> TextClassifier:
    clf = TextClassifier().fit(DOCS, LABELS)
    clf.fit_incidents(clf.transform(DOCS), INCIDENTS, LABELS)
    return clf


def test_rows_are_the_feature_union_s_own():
    clf = _fitted()
    assert clf.features is not None
    ours, union = clf.transform(DOCS), clf.features.transform(DOCS)
    assert ours.shape == union.shape and abs(ours - union).max() == 0


def test_a_document_is_nearest_the_centroid_of_its_own_incident():
    clf = _fitted()
    sims = clf.incident_similarity("watchdog timeout in a collective operation on rank <num>")
    assert max(sims, key=lambda k: sims[k]) == "nccl-a" and set(sims) == set(INCIDENTS)


def test_a_model_saved_with_centroids_as_rows_loads_with_the_same_similarities():
    clf = _fitted()
    state = clf.__getstate__()
    state["_centroids"] = state.pop("_by_feature").T.tocsr()  # as models saved before 2026-12-02 kept them
    old = TextClassifier.__new__(TextClassifier)
    old.__setstate__(pickle.loads(pickle.dumps(state)))
    old.attach(clf.features)
    doc = ["port <num> address already in use"]
    a, b = clf.incident_similarities(clf.transform(doc))[0], old.incident_similarities(old.transform(doc))[0]
    assert a.keys() == b.keys() and np.allclose([a[k] for k in a], [b[k] for k in a])
