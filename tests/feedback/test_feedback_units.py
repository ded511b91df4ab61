"""Small parts: the gate's fixed sample, the tally block, reactions, pruning old versions."""

from __future__ import annotations

from servetriage.feedback import FeedbackStore, Tally
from servetriage.feedback._gate import corpus_gate_cases, gate_hash
from servetriage.feedback._retrain import prune
from servetriage.feedback._rules import Derived
from servetriage.feedback._slack import TALLY_BLOCK, reaction_direction, tally_text, with_tally


def test_the_gate_sample_is_fixed_and_covers_every_category(fb_corpus):
    cases = corpus_gate_cases(fb_corpus, limit=7)
    assert cases == corpus_gate_cases(fb_corpus, limit=7) and gate_hash(cases) == gate_hash(list(cases))
    assert {c.label for c in cases} == {i.category for i in fb_corpus.incidents}
    assert len(corpus_gate_cases(fb_corpus)) == sum(len(i.examples) for i in fb_corpus.incidents)


def test_tally_block_sits_above_the_buttons_and_is_replaced():
    blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": f"s{i}"}} for i in range(49)]
    blocks.append({"type": "actions", "block_id": "servetriage_feedback", "elements": []})
    once = with_tally(blocks, Tally(1, 0, None))
    twice = with_tally(once, Tally(2, 1, Derived("worker-dead", None, "corrected", (1, 2), (3,))))
    assert len(twice) == 50 and twice[-1]["block_id"] == "servetriage_feedback"
    assert [b.get("block_id") for b in twice].count(TALLY_BLOCK) == 1 and twice[-2]["block_id"] == TALLY_BLOCK
    assert tally_text(Tally(2, 1, Derived("worker-dead", None, "corrected", (1,), (2,)))) == \
        "👍 2 · 👎 1 · on-call says: `worker-dead`"
    assert "suggested: `gpu-oom` (1)" in tally_text(Tally(1, 1, None, (("gpu-oom", 1),)))


def test_reactions():
    assert reaction_direction("+1") == 1 and reaction_direction("thumbsup::skin-tone-3") == 1
    assert reaction_direction("-1") == -1 and reaction_direction("eyes") is None


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
            store.put_model(f"v{n:02d}", state="retired", parent=f"v{n - 1:02d}" if n else None, created=float(n),
                            training_hash=None, examples=1, feedback_examples=0)
        store.set_model_state("v13", "active")
        store.set_model_state("v00", "retired")
        removed = prune(store, _Artefacts(tmp_path, "v13"))
        assert removed == ["v00", "v01", "v02"]  # ten retired ones stay, and v12 (the parent) anyway
        assert (tmp_path / "v13").is_dir() and (tmp_path / "v12").is_dir()
        assert {m.version for m in store.models()} == {f"v{n:02d}" for n in range(14)}  # the rows stay
