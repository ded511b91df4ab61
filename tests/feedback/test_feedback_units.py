"""Small parts: the gate's fixed sample, pruning old versions."""

from __future__ import annotations

from servetriage.feedback._gate import corpus_gate_cases, gate_hash
from servetriage.feedback._retrain import prune


def test_the_gate_sample_is_fixed_and_covers_every_category(fb_corpus):
    cases = corpus_gate_cases(fb_corpus, limit=7)
    assert cases == corpus_gate_cases(fb_corpus, limit=7) and gate_hash(cases) == gate_hash(list(cases))
    assert {c.label for c in cases} == {i.category for i in fb_corpus.incidents}
    assert len(corpus_gate_cases(fb_corpus)) == sum(len(i.examples) for i in fb_corpus.incidents)


def test_prune_keeps_the_active_model_its_parent_and_the_newest(tmp_path):
    import json

    from servetriage.classifier import ArtefactStore

    registry = ArtefactStore(tmp_path)
    for n in range(14):
        directory = tmp_path / f"v{n:02d}"
        directory.mkdir()
        (directory / "meta.json").write_text(json.dumps({
            "version": f"v{n:02d}", "format": 8, "corpus_fingerprint": "x", "embedder": None, "created": float(n),
            "metrics": {}, "examples": 1, "parent": f"v{n - 1:02d}" if n else None}))
        for part in ("classifier", "features"):
            (directory / f"{part}.pickle").write_bytes(b"weights")
    registry.activate("v13")
    removed = prune(registry)
    assert removed == ["v00", "v01", "v02"]  # ten retired ones stay, and v12 (the parent) anyway
    assert registry.loadable("v13") and registry.loadable("v12") and not registry.loadable("v00")
    assert {m.version for m in registry.versions()} == {f"v{n:02d}" for n in range(14)}  # the records stay
    assert registry.status("v13").state == "active" and registry.status("v00").state == "retired"
