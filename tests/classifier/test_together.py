"""Several rank logs answered as one: merged on one timeline, the first failing file named."""

from __future__ import annotations

from ranklogs import RANK0, RANK3, WRAPPER

from servetriage.classifier import from_text, merge, placed, render_text

def _logs():
    return [from_text(RANK0, "rank0.log"), from_text(WRAPPER, "launcher.log"), from_text(RANK3, "rank3.log")]


def test_lines_are_merged_on_one_timeline_and_remember_their_file():
    merged = merge(_logs())
    lines = merged.log.text.splitlines()
    assert "TP3] Decode batch" in lines[0]            # 09:59:58 comes first, whatever the file order
    assert "Scheduler hit an exception" in lines[2]   # rank 3's 10:00:01 before rank 0's 10:00:02
    assert lines[3].startswith("  File")              # a traceback stays whole behind its header
    assert lines[-1].startswith("launcher: tearing down")  # untimed lines follow, in their own order
    assert merged.where(3) == ("rank3.log", 2) and merged.where(len(lines)) == ("launcher.log", 2)


def test_one_answer_names_the_first_failing_file_and_lists_the_others(rules_engine):
    logs = _logs()
    merged = merge(logs)
    d = placed(rules_engine.diagnose(merged.log), merged, [rules_engine.diagnose(log) for log in logs])
    assert d.category == "gpu-oom"
    assert d.initiating.file == "rank3.log" and d.initiating.line == 5 and "OutOfMemoryError" in d.initiating.text
    assert any(s.file == "rank0.log" and s.category == "distributed-comm" for s in d.symptoms)
    assert all(e.file in ("rank0.log", "rank3.log", "launcher.log") for e in d.evidence)
    out = render_text(d)
    assert "Came first:    rank3.log line 5" in out and "rank0.log line 3" in out


def test_the_cli_answers_once_for_several_logs_and_refuses_a_single_one(tmp_path):
    import json

    from test_cli import run

    for log in _logs():
        (tmp_path / log.name).write_text(log.text)
    r = run("diagnose", "--together", "--json", str(tmp_path / "rank0.log"), str(tmp_path / "rank3.log"),
            tmp=tmp_path / "data")
    assert r.returncode == 0, r.stderr
    rows = r.stdout.decode().strip().splitlines()
    assert len(rows) == 1 and json.loads(rows[0])["initiating"]["file"].endswith("rank3.log")
    bad = run("diagnose", "--together", str(tmp_path / "rank0.log"), tmp=tmp_path / "data")
    assert bad.returncode == 2 and len(bad.stderr.decode().strip().splitlines()) == 1


def test_a_zip_of_rank_logs_is_read_as_its_members(tmp_path):
    import json
    import zipfile

    from test_cli import run

    archive = tmp_path / "ranks.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for log in _logs():
            zf.writestr(log.name, log.text)
    r = run("diagnose", "--together", "--json", str(archive), tmp=tmp_path / "data")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["category"] == "gpu-oom" and d["initiating"]["file"].endswith("ranks.zip:rank3.log")
    assert d["initiating"]["line"] == 5


def test_a_single_log_is_never_split():
    from servetriage.classifier import split_members
    log = from_text("INFO start\n==> not a header at the top <==\n", "x.log")
    assert split_members(log) == [log]
