"""The quick retrain after a vote: the parent's vectoriser and index are kept, only what changed is redone."""

import hashlib
import os

import numpy as np
from scipy.sparse import vstack

from servetriage.classifier import ArtefactStore, TrainingExample, embedder_for, load_model, retrain
from servetriage.classifier._retrieval import Entry, Index


class CountingEmbedder:
    """A deterministic embedder that records what it was asked to encode."""

    name, dim = "counting", 8

    def __init__(self) -> None:
        self.asked: list[str] = []

    def encode(self, texts):
        self.asked.extend(texts)
        rows = [np.frombuffer(hashlib.sha256(t.encode()).digest()[:8], dtype=np.uint8).astype(np.float32) + 1
                for t in texts]
        out = np.asarray(rows, dtype=np.float32).reshape(len(texts), self.dim)
        return out / np.linalg.norm(out, axis=1, keepdims=True).clip(min=1e-9)


def _index(embedder):
    corpus = [Entry("cuda out of memory", "gpu-oom", "i1", "example"), Entry("nccl timeout", "distributed-comm", "i2",
                                                                          "example")]
    return Index(corpus, embedder.encode([e.text for e in corpus]))


def test_one_more_feedback_line_extends_the_index_and_encodes_only_that_line():
    emb = CountingEmbedder()
    base = _index(emb)
    first = [Entry("radix tree refcount below zero", "radix-cache-state", "f1", "feedback")]
    one = base.with_feedback(first, emb.encode)
    emb.asked.clear()
    two = one.with_feedback(first + [Entry("grammar backend crashed", "structured-output", "f2", "feedback")], emb.encode)
    assert emb.asked == ["grammar backend crashed"]  # the first feedback line kept its vector
    assert [e.text for e in two.entries][-2:] == ["radix tree refcount below zero", "grammar backend crashed"]
    scores, incidents = two.search(emb.encode(["grammar backend crashed"]))
    assert max(scores, key=scores.__getitem__) == "structured-output" and incidents["structured-output"] == "f2"


def test_a_forgotten_feedback_line_leaves_the_index():
    emb = CountingEmbedder()
    both = _index(emb).with_feedback([Entry("a", "gpu-oom", "f1", "feedback"), Entry("b", "router", "f2", "feedback")],
                                     emb.encode)
    emb.asked.clear()
    kept = both.with_feedback([Entry("b", "router", "f2", "feedback")], emb.encode)
    assert emb.asked == []
    assert [e.text for e in kept.entries] == ["cuda out of memory", "nccl timeout", "b"]
    assert np.allclose(kept.vectors[-1], both.vectors[-1])


def _example(text, category):
    return TrainingExample(text, category, "", "feedback")


def test_a_retrain_links_the_vectoriser_and_refits_only_the_classes_it_can_move(trained):
    settings, corpus, _ = trained
    embedder = embedder_for(settings)
    parent = load_model(settings, corpus, embedder)
    store = ArtefactStore(settings.model_dir)
    extra = [_example("Traceback (most recent call last):\nRuntimeError: the draft model's acceptance buffer "
                      "overflowed while verifying speculative tokens", "speculative-decoding")]
    child = retrain(parent, corpus, embedder, store, extra)

    ours, theirs = (store.path(v) / "features.pickle" for v in (child.meta.version, parent.meta.version))
    assert os.stat(ours).st_ino == os.stat(theirs).st_ino  # one vectoriser on disk, not a copy per vote
    assert "speculative-decoding" in child.classifier.moved
    assert len(child.classifier.moved) < len(child.classifier.classes)
    assert child.meta.metrics["classes_refitted"] == len(child.classifier.moved)
    assert child.extra == tuple(extra)

    loaded = load_model(settings, corpus, embedder, child.meta.version)
    doc = "RuntimeError: the draft model's acceptance buffer overflowed while verifying speculative tokens"
    assert np.allclose(loaded.classifier.proba([doc]), child.classifier.proba([doc]))


def test_the_class_wise_update_agrees_with_a_whole_refit(trained):
    from servetriage.classifier._train import _base_rows, _documents, _prepared

    settings, corpus, _ = trained
    embedder = embedder_for(settings)
    model = load_model(settings, corpus, embedder)
    store = ArtefactStore(settings.model_dir)
    extra = []
    for n, (text, category) in enumerate([
            ("ValueError: tokenizer chat template has no generation prompt for this role", "invalid-config"),
            ("RuntimeError: xgrammar failed to compile the JSON schema: unsupported keyword", "structured-output"),
            ("OSError: safetensors shard 3 of 7 is truncated", "model-load")]):
        extra.append(_example(f"Traceback (most recent call last):\n{text} ({n})", category))
        model = retrain(model, corpus, embedder, store, extra)
    base = _base_rows(model.classifier, corpus)
    fb = _documents(_prepared(extra))
    rows = vstack([base.rows, model.classifier.cached_rows(fb.docs)]).tocsr()
    whole = model.classifier.refit(rows, base.labels + fb.labels, base.weights + fb.weights)
    # The update keeps unmoved classes' balanced weights a row behind (by design), so a row whose two best
    # classes tie within TIE in the whole fit may go either way; every other row gets the same answer.
    TIE = 0.01
    differ = np.flatnonzero(whole.head.predict(rows) != model.classifier.head.predict(rows))
    top_two = np.sort(whole.head.decision_function(rows[differ]), axis=1)[:, -2:] if len(differ) else np.zeros((0, 2))
    assert len(differ) <= 3 and (top_two[:, 1] - top_two[:, 0] < TIE).all()
    assert np.abs(whole.head.coef_ - model.classifier.head.coef_).max() < 0.05
