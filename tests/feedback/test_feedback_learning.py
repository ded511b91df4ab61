"""Retraining from feedback with the real engine: promotion, the gate, forgetting, the memory, the
background thread and the handle that follows the active model."""

from __future__ import annotations

import dataclasses
import time

import pytest
from fbhelpers import NOVEL_LABEL, NOVEL_LOG, novel_variant

from servetriage.classifier import ArtefactStore, extract, from_text
from servetriage.feedback import FeedbackStore, ModelHandle, Retrainer, RateLimit
from servetriage.feedback._memory import FeedbackMemory, signature


@pytest.fixture
def loop(fb_settings, fb_corpus):
    store = FeedbackStore(fb_settings.db_path, categories=fb_corpus.categories, rate_limit=RateLimit.off())
    handle = ModelHandle(fb_settings, fb_corpus, training=store.training, incidents=store.incidents, check_every_s=0.0)
    store.model_version = lambda: handle.version
    retrainer = Retrainer(fb_settings, store, handle, debounce_s=0.2, max_delay_s=2.0, poll_s=60.0)
    yield store, handle, retrainer
    retrainer.stop()
    store.close()


def ask(store, handle, text: str, ts: str) -> tuple[str, object]:
    d = handle.diagnose_text(text)
    did = store.replies.record(d, text, team="T1", channel="C1", thread_ts=ts, user="UASK", source="message")
    return did, d


def test_a_correction_is_learned_and_promoted(loop, fb_settings):
    store, handle, retrainer = loop
    start = handle.version
    did, d = ask(store, handle, NOVEL_LOG, "1.1")
    assert d.category != NOVEL_LABEL  # the corpus has no such incident
    store.votes.correct(did, "U1", NOVEL_LABEL)
    result = retrainer.run_once()
    assert result.state == "active" and result.parent == start and result.examples == 1
    assert result.gate["candidate"]["correct"] >= result.gate["active"]["correct"]
    assert ArtefactStore(fb_settings.model_dir).active() == result.version == handle.version
    registry = ArtefactStore(fb_settings.model_dir)
    new, old = registry.status(result.version), registry.status(start)
    assert new.state == "active" and old.state == "retired" and new.activated is not None
    assert new.training_hash and new.gate["candidate"]["cases"] > 0
    again = handle.diagnose_text(novel_variant(7))  # the same failure, other numbers
    assert again.category == NOVEL_LABEL
    assert retrainer.run_once().state == "skipped"  # nothing new


def test_the_memory_answers_near_duplicates_and_abstains_on_disagreement(fb_corpus):
    sig = signature(extract(NOVEL_LOG))
    assert sig == signature(extract(novel_variant(3)))
    memory = FeedbackMemory([(sig, NOVEL_LABEL, None)])
    match = memory.match(extract(novel_variant(3)))
    assert match.category == NOVEL_LABEL and match.similarity == 1.0
    assert memory.match(extract("RuntimeError: CUDA error: an illegal memory access was encountered")) is None
    split = FeedbackMemory([(sig, NOVEL_LABEL, None), (sig, "gpu-oom", None)])
    assert split.match(extract(NOVEL_LOG)) is None


def test_the_memory_knows_the_failure_inside_a_longer_paste_and_not_a_paste_it_only_touches(fb_corpus):
    labelled = signature(extract(NOVEL_LOG))
    assert labelled.evidence and not any(line.startswith("INFO") for line in labelled.evidence)
    memory = FeedbackMemory([(labelled, NOVEL_LABEL, None)])
    healthy = "".join(f"(EngineCore_0 pid=7) INFO 09-09 12:0{n}:00 [loader.py:{n}] Loading weights shard {n} of 9\n"
                      for n in range(9))
    longer = healthy + novel_variant(4).replace("ERROR 09-09", "(VllmWorker rank=3 pid=91) ERROR 09-10") + healthy
    match = memory.match(extract(longer))
    assert match is not None and match.category == NOVEL_LABEL and match.found == 1.0
    crowded = longer + "".join(f"ERROR 09-09 12:30:0{n} [worker.py:9] RuntimeError: {what}\n" for n, what in enumerate((
        "NCCL watchdog caught a collective operation timeout", "ProcessGroupNCCL is shutting down the communicator",
        "the TCP store connection to the master rank was reset", "rank 3 left the process group unexpectedly")))
    assert memory.match(extract(crowded)) is None  # its failure is mostly something else
    assert not signature(extract("KeyError: 3\n"))  # a bare generic line names no failure


def test_a_labelled_printout_is_found_in_a_paste_the_engine_sees_no_fault_in(fb_corpus):
    printout = "kernels/sampler.cu:88: token 5 was masked by every grammar rule and cannot be sampled\n"
    labelled = signature(extract(printout))
    assert labelled.evidence  # a paste of that line alone: the line is its evidence
    memory = FeedbackMemory([(labelled, "structured-output", None)])
    healthy = "".join(f"INFO 09-09 12:0{n % 10}:00 [engine.py:{n}] Avg generation throughput: {n}.0 tokens/s\n"
                      for n in range(40))
    match = memory.match_lines(healthy + printout.replace("token 5", "token 17") + healthy)
    assert match is not None and match.category == "structured-output"
    assert memory.match_lines(healthy) is None
    assert memory.match_lines(healthy * 200 + printout) is None  # past SCAN_LINES: not read line by line


def test_a_worse_retrain_is_rejected_and_the_active_model_stays(loop, fb_settings, monkeypatch):
    store, handle, retrainer = loop
    start = handle.version
    did, _ = ask(store, handle, NOVEL_LOG, "2.1")
    store.votes.correct(did, "U1", NOVEL_LABEL)

    import servetriage.classifier as classifier

    real = classifier.retrain

    def sabotaged(parent, corpus, embedder, artefacts, extra):
        """A candidate whose classifier learned every corpus example under the wrong label."""
        from servetriage.classifier._train import corpus_examples
        from servetriage.classifier._textclf import TextClassifier

        model = real(parent, corpus, embedder, artefacts, extra)
        examples = corpus_examples(corpus)
        cats = sorted({e.category for e in examples})
        wrong = {c: cats[(i + 1) % len(cats)] for i, c in enumerate(cats)}
        bad = TextClassifier().fit([e.text for e in examples], [wrong[e.category] for e in examples])
        index = model.index.subset([e.kind == "feedback" for e in model.index.entries])
        return dataclasses.replace(model, classifier=bad, index=index)

    monkeypatch.setattr(classifier, "retrain", sabotaged)
    result = retrainer.run_once()
    assert result.state == "rejected", result
    assert result.gate["candidate"]["correct"] < result.gate["active"]["correct"]
    assert ArtefactStore(fb_settings.model_dir).active() == start == handle.version
    row = ArtefactStore(fb_settings.model_dir).status(result.version)
    assert row.state == "rejected" and "worse on the gate" in row.note and row.gate["candidate"]["cases"] > 0
    assert len(store.training.quarantined()) == 1  # the example it added is set aside, not retried forever
    assert retrainer.run_once().state == "skipped"
    monkeypatch.setattr(classifier, "retrain", real)
    assert handle.diagnose_text(novel_variant(2)).category == NOVEL_LABEL  # the memory still answers


def test_forgotten_examples_leave_the_model(loop, fb_settings):
    store, handle, retrainer = loop
    did, _ = ask(store, handle, NOVEL_LOG, "3.1")
    store.votes.correct(did, "U1", NOVEL_LABEL)
    learned = retrainer.run_once()
    assert learned.promoted
    assert handle.diagnose_text(novel_variant(4)).passes.memory is not None
    store.forget.diagnosis(did)
    assert handle.diagnose_text(novel_variant(4)).passes.memory is None  # the memory forgets at once
    result = retrainer.run_once()
    assert result.state == "active" and result.version != learned.version
    extra = ArtefactStore(fb_settings.model_dir).load_object(result.version, "extra")
    assert [e for e in extra if e["source"] == "feedback"] == []


def test_background_retrains_once_per_burst(loop):
    store, handle, retrainer = loop
    results = []
    retrainer.on_result = results.append
    retrainer.start()
    for n in range(3):
        did, _ = ask(store, handle, novel_variant(n), f"4.{n}")
        store.votes.correct(did, f"U{n}", NOVEL_LABEL)
        retrainer.notify()
    deadline = time.monotonic() + 60
    while not results and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    assert [r.state for r in results] == ["active"] and results[0].examples == 3


def test_the_handle_follows_a_promotion_made_elsewhere(loop, fb_settings):
    store, handle, retrainer = loop
    start = handle.version
    did, _ = ask(store, handle, NOVEL_LOG, "5.1")
    store.votes.correct(did, "U1", NOVEL_LABEL)
    new = retrainer.run_once().version
    other = ModelHandle(fb_settings, handle.corpus, check_every_s=0.0)
    assert other.version == new
    ArtefactStore(fb_settings.model_dir).activate(start)  # `servetriage model rollback` in another process
    other.diagnose(from_text("x"))
    assert other.version == start
