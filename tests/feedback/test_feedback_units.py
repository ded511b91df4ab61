"""Small parts: the gate's fixed sample, pruning old versions."""

from __future__ import annotations

from servetriage.feedback import FeedbackStore
from servetriage.feedback._gate import corpus_gate_cases, gate_hash
from servetriage.feedback._retrain import prune


def test_the_gate_sample_is_fixed_and_covers_every_category(fb_corpus):
    cases = corpus_gate_cases(fb_corpus, limit=7)
    assert cases == corpus_gate_cases(fb_corpus, limit=7) and gate_hash(cases) == gate_hash(list(cases))
    assert {c.label for c in cases} == {i.category for i in fb_corpus.incidents}
    assert len(corpus_gate_cases(fb_corpus)) == sum(len(i.examples) for i in fb_corpus.incidents)


class _Artefacts:
    def __init__(self, root, active):
        self.root, self._active = root, active

    def active(self):
        return self._active

    def path(self, version):
        return self.root / version


def test_prune_keeps_the_active_model_its_parent_and_the_newest(tmp_path):
    with FeedbackStore(tmp_path / "p.sqlite") as store:
        for n in range(14):
            (tmp_path / f"v{n:02d}").mkdir()
            store.models.put(f"v{n:02d}", state="retired", parent=f"v{n - 1:02d}" if n else None, created=float(n),
                            training_hash=None, examples=1, feedback_examples=0)
        store.models.set_state("v13", "active")
        store.models.set_state("v00", "retired")
        removed = prune(store, _Artefacts(tmp_path, "v13"))
        assert removed == ["v00", "v01", "v02"]  # ten retired ones stay, and v12 (the parent) anyway
        assert (tmp_path / "v13").is_dir() and (tmp_path / "v12").is_dir()
        assert {m.version for m in store.models.all()} == {f"v{n:02d}" for n in range(14)}  # the rows stay
