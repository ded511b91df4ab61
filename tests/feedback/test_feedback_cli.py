"""The commands: `model list|promote|rollback`, `feedback export|forget`, `db backup`, `corpus export`
and `eval --online`, through `servetriage.cli.main` as a user runs them."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import yaml
from fbhelpers import NOVEL_LABEL, NOVEL_LOG, diagnosis, novel_variant

import servetriage.corpus
from servetriage.classifier import ArtefactStore
from servetriage.cli import main
from servetriage.corpus import parse_incidents
from servetriage.feedback import FeedbackStore, ModelHandle, RateLimit, Retrainer


@pytest.fixture
def cli(fb_settings, fb_corpus, monkeypatch):
    """`main([...])` against the test data dir and the test corpus; returns (exit code, stdout, stderr)."""
    monkeypatch.setenv("SERVETRIAGE_DATA_DIR", str(fb_settings.data_dir))
    monkeypatch.setenv("SERVETRIAGE_THREADS", "2")
    monkeypatch.setattr(servetriage.corpus, "load_corpus", lambda *a, **k: fb_corpus)

    def run(capsys, *argv: str) -> tuple[int, str, str]:
        code = main(list(argv))
        out, err = capsys.readouterr()
        return code, out, err

    return run


def _learn_novel(fb_settings, fb_corpus) -> tuple[str, str, str]:
    """One correction retrained and promoted; returns (first version, new version, diagnosis id)."""
    with FeedbackStore(fb_settings.db_path, categories=fb_corpus.categories, rate_limit=RateLimit.off()) as store:
        handle = ModelHandle(fb_settings, fb_corpus, training=store.training, incidents=store.incidents)
        start = handle.version
        did = store.replies.record(handle.diagnose_text(NOVEL_LOG), NOVEL_LOG, team="T1", channel="C1", thread_ts="1",
                           user="UASK", source="message")
        store.votes.vote(did, "U1", False)
        store.votes.correct(did, "U1", NOVEL_LABEL)
        result = Retrainer(fb_settings, store, handle).run_once()
    assert result.promoted
    return start, result.version, did


def test_model_list_rollback_and_promote(cli, capsys, fb_settings, fb_corpus):
    start, new, _ = _learn_novel(fb_settings, fb_corpus)
    code, out, _ = cli(capsys, "model", "list", "--json")
    states = {r["version"]: r["state"] for r in map(json.loads, out.splitlines())}
    assert code == 0 and states == {start: "retired", new: "active"}
    code, out, _ = cli(capsys, "model", "list")
    assert code == 0 and new in out and "active" in out

    code, out, _ = cli(capsys, "model", "rollback")
    assert code == 0 and ArtefactStore(fb_settings.model_dir).active() == start
    _, out, _ = cli(capsys, "model", "list", "--json")
    assert {r["version"]: r["state"] for r in map(json.loads, out.splitlines())} == {start: "active", new: "rejected"}

    assert cli(capsys, "model", "promote", new)[0] == 0
    assert ArtefactStore(fb_settings.model_dir).active() == new
    code, _, err = cli(capsys, "model", "promote", "19990101-000000-0")
    assert code == 2 and err.startswith("servetriage: error: no model version") and err.count("\n") == 1
    assert ArtefactStore(fb_settings.model_dir).active() == new


def test_feedback_export_and_forget(cli, capsys, fb_settings, fb_corpus, tmp_path):
    start, learned, did = _learn_novel(fb_settings, fb_corpus)
    code, out, _ = cli(capsys, "feedback", "export")
    [row] = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and row["diagnosis_id"] == did and row["corrected_category"] == NOVEL_LABEL
    target = tmp_path / "votes.csv"
    assert cli(capsys, "feedback", "export", "--format", "csv", "-o", str(target), "--no-excerpt")[0] == 0
    [csv_row] = list(csv.DictReader(target.open()))
    assert csv_row["vote"] == "down" and "excerpt" not in csv_row

    with FeedbackStore(fb_settings.db_path) as store:
        before = store.counts()
    code, _, err = cli(capsys, "feedback", "forget", "--vote", "999")
    assert code == 2 and "no vote 999" in err
    with pytest.raises(SystemExit):  # argparse: one of --vote, --user, --diagnosis is required
        main(["feedback", "forget"])
    capsys.readouterr()
    with FeedbackStore(fb_settings.db_path) as store:
        assert store.counts() == before

    code, out, _ = cli(capsys, "feedback", "forget", "--diagnosis", did)
    assert code == 0 and "forgot diagnosis" in out and "retrained: active" in out
    active = ArtefactStore(fb_settings.model_dir).active()
    assert active not in (start, learned)
    extra = ArtefactStore(fb_settings.model_dir).load_object(active, "extra")
    assert not [e for e in extra if e["source"] == "feedback"]
    with FeedbackStore(fb_settings.db_path) as store:
        assert store.training.examples() == [] and store.votes.all() == []


def test_db_backup_and_corpus_export(cli, capsys, fb_settings, tmp_path):
    code, _, err = cli(capsys, "db", "backup", str(tmp_path / "b.sqlite"))
    assert code == 2 and "no feedback database" in err
    with FeedbackStore(fb_settings.db_path) as store:
        did = store.replies.record(diagnosis(), NOVEL_LOG, team="T1", channel="C1", thread_ts="1", user="UASK", source="message")
        inc, _ = store.votes.new_incident(did, "U4", category=NOVEL_LABEL, title="Triton cannot compile fp8 kernels",
                                    cause="fp8e4nv needs compute capability 8.9.", first_action="Use fp16 KV cache.")
    dest = tmp_path / "b.sqlite"
    assert cli(capsys, "db", "backup", str(dest))[0] == 0
    with FeedbackStore(dest) as copy:
        assert [i.id for i in copy.incidents.all()] == [inc.id]
    code, _, err = cli(capsys, "db", "backup", str(dest))
    assert code == 2 and "already exists" in err

    out_file = tmp_path / "new.yaml"
    assert cli(capsys, "corpus", "export", "-o", str(out_file))[0] == 0
    data = yaml.safe_load(out_file.read_text())
    from servetriage.corpus import load_categories
    [parsed] = parse_incidents(data, load_categories(), "export.yaml")
    assert parsed.id == inc.id and parsed.category == NOVEL_LABEL and parsed.first_action == "Use fp16 KV cache."
    assert "Triton compilation failed" in parsed.examples[0] and parsed.sources == (f"feedback:{did}",)
    code, out, _ = cli(capsys, "corpus", "export")
    assert code == 0 and out.startswith("# Incidents written by on-call")


def test_online_eval_learns_on_a_temporary_copy(cli, capsys, fb_settings, tmp_path):
    labelled = tmp_path / "set"
    labelled.mkdir()
    logs = [(NOVEL_LOG, NOVEL_LABEL), (novel_variant(1), NOVEL_LABEL), (novel_variant(2), NOVEL_LABEL),
            ("ERROR 05-12 10:00:41 model_runner.py:1204] Error in model execution\n"
             "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB.\n", "gpu-oom")]
    with open(labelled / "labels.jsonl", "w") as fh:
        for n, (text, label) in enumerate(logs):
            (labelled / f"{n}.log").write_text(text)
            fh.write(json.dumps({"id": str(n), "file": f"{n}.log", "category": label, "surface": "paste"}) + "\n")
    installed = ArtefactStore(fb_settings.model_dir)
    before = (installed.active(), [m.version for m in installed.versions()])

    other = tmp_path / "other"  # the same failure in other pastes: other numbers, more lines around it
    other.mkdir()
    with open(other / "labels.jsonl", "w") as fh:
        for n in range(3):
            (other / f"{n}.log").write_text("INFO 05-12 10:00:01 engine.py:200] serving\n" + novel_variant(10 + n))
            fh.write(json.dumps({"id": f"o{n}", "file": f"{n}.log", "category": NOVEL_LABEL, "surface": "paste"}) + "\n")

    code, out, err = cli(capsys, "eval", "--online", str(labelled), "--then", str(other), "--json")
    report = json.loads(out.strip().splitlines()[-1])
    assert code == 0 and report["cases"] == 4 and report["then_cases"] == 3
    assert report["static_then_top1"] < report["then_top1"] == 1.0  # what the replay taught carries over
    assert report["then_top3"] >= report["then_top1"]
    for key in ("static_top1", "online_top1", "second_pass_top1", "retrain_seconds_p50", "retrain_seconds_max"):
        assert key in report
    assert report["online_top1"] > report["static_top1"] and report["second_pass_top1"] == 1.0
    assert report["retrains"] >= 1 and report["retrain_seconds_max"] > 0
    assert (installed.active(), [m.version for m in installed.versions()]) == before  # never the installed model
    assert not fb_settings.db_path.exists()
    code, _, err = cli(capsys, "eval", str(labelled), "--then", str(other))
    assert code == 2 and "go with --online" in err
    code, _, err = cli(capsys, "eval", "--online", str(labelled), "--noise", "1.5")
    assert code == 2 and "between 0 and 1" in err

    code, out, _ = cli(capsys, "eval", "--online", str(labelled), "--noise", "1.0", "--json")
    noisy = json.loads(out.strip().splitlines()[-1])
    assert noisy["noise"] == 1.0 and noisy["wrong_feedback"] == 4  # every piece of feedback was wrong
    assert noisy["second_pass_top1"] < report["second_pass_top1"]  # and it shows

    code, out, _ = cli(capsys, "eval", "--online", str(labelled), "--locality", "--json")
    reach = json.loads(out.strip().splitlines()[-1])
    assert code == 0 and reach["cases"] == 4 and 0 <= reach["others_changed_max"] <= 3
    # the three build-toolchain logs are one failure: feedback on one may settle the others, never the OOM
    assert reach["unrelated_changed_max"] == 0 and reach["unrelated_within_one"] == 1.0 and reach["corrections"] >= 1
    assert (installed.active(), [m.version for m in installed.versions()]) == before
    code, _, err = cli(capsys, "eval", "--online", str(labelled), "--locality", "--then", str(other))
    assert code == 2 and "one piece of feedback at a time" in err

    code, _, err = cli(capsys, "eval", "--online", str(tmp_path / "nothing"))
    assert code == 2 and "labels.jsonl" in err


def test_train_fine_tune_goes_through_the_folds_and_the_gate(cli, capsys, fb_settings, fb_corpus, monkeypatch):
    import servetriage.classifier._finetune as finetune

    _learn_novel(fb_settings, fb_corpus)  # on-call's correction: one feedback example to tune on
    installed = ArtefactStore(fb_settings.model_dir)
    before = installed.active()
    monkeypatch.setattr(finetune, "MIN_GAIN", -1.0)  # a candidate whatever the folds say: the gate decides
    code, out, _ = cli(capsys, "train", "--fine-tune", "--json")
    report = json.loads(out.strip().splitlines()[-1])
    assert code == 0 and report["feedback_examples"] == 1 and len(report["folds"]) >= 2
    gate = report["gate"]
    assert gate["how"] == "fine-tuned embedder" and gate["candidate"]["cases"] == gate["active"]["cases"] > 0
    tuned_pointer = fb_settings.model_dir / "embedder" / "ACTIVE"
    if gate["candidate"]["correct"] >= gate["active"]["correct"]:
        assert report["promoted"] and installed.active() == report["model_version"] != before
        assert tuned_pointer.read_text().strip() == report["version"]
        assert installed.meta(installed.active()).embedder != installed.meta(before).embedder
    else:
        assert not report["promoted"] and installed.active() == before and not tuned_pointer.exists()
        assert installed.status(report["model_version"]).state == "rejected"
        assert not Path(report["candidate"]).exists()  # the discarded tuned model's disk is given back
