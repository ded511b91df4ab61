"""`fine_tune` tunes with sentence-transformers' trainer and keeps a candidate only when it wins on folds
that hold out whole incidents; a model keeps reading its index with the embedder it was built with."""

import json
from pathlib import Path

import pytest

import servetriage.classifier._finetune as finetune
from servetriage.classifier import (ArtefactStore, TrainingExample, activate_embedder, embedder_for, embedder_named,
                                    fine_tune, load_model, train)


@pytest.mark.slow
def test_fine_tune_decides_by_held_out_folds_and_keeps_its_figures(settings, mini_corpus):
    feedback = [TrainingExample("RuntimeError: CUDA error: an illegal memory access was encountered in the attention "
                                "kernel", "illegal-memory-access", "", "feedback")]
    result = fine_tune(settings, mini_corpus, feedback)
    assert result.pairs >= 1 and result.feedback_examples == 1 and len(result.folds) >= 2
    assert all(0.0 <= f <= 1.0 and 0.0 <= t <= 1.0 for f, t in result.folds)
    assert result.wins == (result.tuned_top1 >= result.frozen_top1 + finetune.MIN_GAIN)
    assert not (settings.model_dir / "embedder" / "ACTIVE").exists()  # a candidate is not the default yet
    if result.wins:
        kept = json.loads((result.candidate / "servetriage.json").read_text())
        assert kept["tuned_top1"] == result.tuned_top1 and kept["frozen_top1"] == result.frozen_top1


@pytest.mark.slow
def test_a_model_reads_its_index_with_the_embedder_it_was_built_with(settings, mini_corpus, monkeypatch):
    monkeypatch.setattr(finetune, "MIN_GAIN", -1.0)  # keep the candidate whatever the folds say
    store = ArtefactStore(settings.model_dir)
    packaged = embedder_for(settings)
    before = train(mini_corpus, packaged, store)
    store.activate(before.meta.version)
    result = fine_tune(settings, mini_corpus)
    assert result.candidate is not None and (result.candidate / "config.json").is_file()
    activate_embedder(settings, result.candidate)
    tuned = embedder_for(settings)
    assert Path(tuned.path) == result.candidate and tuned.name != packaged.name
    after = train(mini_corpus, tuned, store, parent=before.meta.version)
    assert load_model(settings, mini_corpus, None, after.meta.version).embedder is tuned
    # rolled back to, the model from before the fine-tune still finds its own embedder
    assert load_model(settings, mini_corpus, None, before.meta.version).embedder is packaged
    assert embedder_named(settings, before.meta.embedder) is packaged
