import json
from pathlib import Path

import pytest

from servetriage.corpus import load_corpus
from servetriage.eval.inside import load_probes
from servetriage.eval import Prediction, abstention, initiating_accuracy, load_cases, macro_f1, reliability, summary, top_k
from servetriage import InputError


def p(label, cat, cands=(), surface=None, conf=0.5):
    return Prediction("x", label, surface, cat, (cat, *cands), conf)


def test_top_k_counts_alternatives():
    preds = [p("a", "a"), p("a", "b", ("c", "a")), p("a", "b", ("c", "d", "a"))]
    assert top_k(preds, 1) == pytest.approx(1 / 3)
    assert top_k(preds, 3) == pytest.approx(2 / 3)


def test_abstention_initiating_and_f1():
    preds = [p("unknown", "unknown"), p("unknown", "a"), p("a", "a", surface="worker-dead"),
             p("b", "worker-dead", surface="worker-dead")]
    assert abstention(preds) == 0.5
    assert initiating_accuracy(preds) == 0.5
    assert 0 < macro_f1(preds) < 1
    assert summary(preds)["cases"] == 4


def test_reliability_bins():
    rows = reliability([p("a", "a", conf=0.95), p("a", "b", conf=0.9), p("a", "a", conf=0.1)])
    top = [r for r in rows if r["low"] == 0.8][0]
    assert top["n"] == 2 and top["accuracy"] == 0.5


def test_labels_are_validated(tmp_path):
    with pytest.raises(InputError, match="labels.jsonl"):
        load_cases(tmp_path)
    (tmp_path / "labels.jsonl").write_text(json.dumps({"id": "1", "file": "missing.log", "category": "a"}) + "\n")
    with pytest.raises(InputError, match="not found"):
        load_cases(tmp_path)
    (tmp_path / "labels.jsonl").write_text("{not json\n")
    with pytest.raises(InputError, match="malformed"):
        load_cases(tmp_path)


def test_the_trtllm_probes_parse_into_spec_categories():
    probes = load_probes(Path(__file__).parents[2] / "eval" / "probes" / "trtllm.txt")
    assert len(probes) >= 20
    known = set(load_corpus().categories)
    assert {p.category for p in probes} <= known
    assert all(p.text and "===" not in p.text for p in probes)
