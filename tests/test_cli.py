"""The command line, run as a user runs it: the installed console script in a subprocess."""

import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXE = shutil.which("servetriage") or str(Path(sys.executable).with_name("servetriage"))


def run(*args, stdin=None, env_extra=None, tmp=None):
    env = {**os.environ, "SERVETRIAGE_EMBEDDINGS": "off", "NO_COLOR": "1"}
    if tmp is not None:
        env["SERVETRIAGE_DATA_DIR"] = str(tmp)
    env.update(env_extra or {})
    for k in ("SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET"):
        env.pop(k, None)
    return subprocess.run([EXE, *args], input=stdin, capture_output=True, env=env, timeout=120)


def test_diagnose_json_one_object_per_input_in_order(tmp_path):
    a = tmp_path / "a.log"
    a.write_text("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    b = tmp_path / "b.log.gz"
    b.write_bytes(gzip.compress(b"nothing to see here\n"))
    r = run("diagnose", "--json", str(a), str(b), "-", stdin=b"", tmp=tmp_path)
    assert r.returncode == 0, r.stderr
    rows = [json.loads(l) for l in r.stdout.decode().splitlines()]
    assert [row["file"] for row in rows] == [str(a), str(b), "-"]
    assert rows[0]["category"] == "gpu-oom"
    assert rows[1]["category"] == "unknown" and rows[2]["category"] == "unknown"


def test_missing_path_is_one_line_exit_2(tmp_path):
    r = run("diagnose", str(tmp_path / "missing.log"), tmp=tmp_path)
    assert r.returncode == 2 and r.stdout == b""
    assert len(r.stderr.decode().strip().splitlines()) == 1 and "missing.log" in r.stderr.decode()


def test_over_limit_is_one_line_exit_2_and_no_diagnosis(tmp_path):
    big = tmp_path / "big.log"
    big.write_bytes(b"RuntimeError: CUDA error: out of memory\n" * 60000)
    r = run("diagnose", "--json", str(big), tmp=tmp_path, env_extra={"SERVETRIAGE_MAX_INPUT_MB": "1"})
    assert r.returncode == 2 and r.stdout == b""
    assert "limit" in r.stderr.decode() and len(r.stderr.decode().strip().splitlines()) == 1


def test_bad_setting_is_one_line_exit_2(tmp_path):
    r = run("diagnose", "-", stdin=b"x", tmp=tmp_path, env_extra={"SERVETRIAGE_MAX_INPUT_MB": "lots"})
    assert r.returncode == 2 and "SERVETRIAGE_MAX_INPUT_MB" in r.stderr.decode()


def test_human_reply_names_cause_first_action_and_what_came_first(tmp_path):
    r = run("run", tmp=tmp_path)
    out = r.stdout.decode()
    assert r.returncode == 0, r.stderr
    assert "gpu-oom" in out and "First action:" in out and "Came first:" in out and "worker-dead" in out
    assert "SLACK_BOT_TOKEN" in r.stderr.decode()


def test_corpus_stats_json(tmp_path):
    r = run("corpus", "stats", "--json", tmp=tmp_path)
    stats = json.loads(r.stdout)
    assert stats["incidents"] == sum(stats["per_category"].values())
    assert set(stats) >= {"incidents", "examples", "per_category"}


@pytest.mark.skipif(not (Path(__file__).resolve().parents[2] / "shared/eval/dev/labels.jsonl").exists(),
                    reason="the shared dev set is not beside this checkout")
def test_eval_runs_on_the_dev_set(tmp_path):
    dev = Path(__file__).resolve().parents[2] / "shared/eval/dev"
    r = run("eval", str(dev), "--json", tmp=tmp_path)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout.decode().splitlines()[-1])
    assert report["summary"]["cases"] == 74 and 0.0 <= report["summary"]["top1"] <= 1.0


def test_eval_prints_sets_side_by_side_and_counts_false_alarms_on_healthy_logs(tmp_path):
    excerpts, whole, healthy = tmp_path / "excerpts", tmp_path / "whole", tmp_path / "healthy"
    crash = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    start = ("INFO 11-30 07:00:03 [api_server.py:1395] vLLM API server version 0.9.2\n"
             "INFO:     Started server process [7311]\nINFO:     Application startup complete.\n"
             'INFO:     10.0.0.5:51000 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n')
    for d, text in ((excerpts, crash), (whole, start + crash)):
        d.mkdir()
        (d / "oom.log").write_text(text)
        (d / "labels.jsonl").write_text(json.dumps({"id": "oom", "file": "oom.log", "category": "gpu-oom"}) + "\n")
    healthy.mkdir()
    (healthy / "served.log").write_text(start * 3)
    (healthy / "crashed.log").write_text(start + crash)  # a false alarm on purpose: it must be counted
    r = run("eval", str(excerpts), str(whole), "--healthy", str(healthy), tmp=tmp_path / "data")
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode()
    header = next(line for line in out.splitlines() if "excerpts" in line and "whole" in line)
    assert header.index("excerpts") < header.index("whole")
    assert "1 of 2 answered unknown" in out and "crashed.log" in out and "gpu-oom" in out
    r = run("eval", str(excerpts), "--healthy", str(healthy), "--json", tmp=tmp_path / "data")
    data = json.loads(r.stdout)  # one set: its report as before, the healthy logs beside it
    assert data["summary"]["top1"] == 1.0
    assert data["healthy"][0]["files"] == 2 and data["healthy"][0]["unknown"] == 1
    r = run("eval", str(excerpts), str(whole), "--json", tmp=tmp_path / "data")
    assert set(json.loads(r.stdout)["sets"]) == {"excerpts", "whole"}


def test_eval_without_a_directory_is_one_line_exit_2(tmp_path):
    r = run("eval", tmp=tmp_path)
    assert r.returncode == 2 and len(r.stderr.decode().strip().splitlines()) == 1
