"""The message miner on a small source tree written for this test (tests/corpus/minetree)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import re2

from servetriage.corpus import check_catalogue, load_catalogue, mine_tree
from servetriage.corpus._mine import render

TREE = Path(__file__).parent / "minetree"


def _by_template(engine: str = "fake"):
    return {t.template: t for t in mine_tree(TREE, engine, "1.0")}


def test_python_messages_become_templates_with_their_place_and_level():
    found = _by_template()
    raise_ = found["Token pool exhausted: need {} slots but only {} are free"]
    assert (raise_.level, raise_.exception, raise_.function) == ("raise", "RuntimeError", "alloc")
    assert raise_.file == "fakeengine/srt/mem_cache/pool.py" and raise_.versions == ("1.0",)
    assert found["allocation size must not be negative"].level == "assert"
    assert found["Pool usage at {}, evicting {} entries"].level == "warning"
    assert found["Allocated {} slots from the token pool"].level == "info"
    assert found["No free slots in pool {} (size {})"].exception == "ValueError"
    assert found["the legacy allocator path is deprecated and will be removed"].level == "warning"
    assert "short" not in found  # too little literal text


def test_a_message_bound_to_a_name_first_and_printed_over_several_lines_is_known_by_its_first_line():
    found = _by_template()
    bound = found["No token pool was found at '{}'."]  # `message = (…); raise FileNotFoundError(message)`
    assert (bound.level, bound.exception, bound.function) == ("raise", "FileNotFoundError", "load_pool")
    assert re2.compile(bound.regex).search("FileNotFoundError: No token pool was found at '/models/x'.")
    constant = found["The pool was built for layout {} but this runtime reads"]  # a module constant, after a break
    assert constant.exception == "RuntimeError"
    assert not any("Check that" in t or t.startswith("Failed to load") for t in found)


def test_cpp_checks_and_logs_become_templates():
    found = _by_template()
    check = found["World size {} does not equal tensor parallelism {} times pipeline parallelism {}"]
    assert (check.level, check.file, check.function) == ("check", "cpp/runtime/worldCheck.cpp", "validateWorld")
    assert found["Rank layout was guessed from the environment"].level == "warning"
    assert found["Tensor parallelism of {} is not supported here"].level == "raise"
    cond = found["Assertion failed: mpiSize >= tp && pipelineStages(pp) > 0"]  # TLLM_CHECK prints its condition
    assert cond.level == "check" and re2.compile(cond.regex).search(
        "[TensorRT-LLM][ERROR] Assertion failed: mpiSize >= tp && pipelineStages(pp) > 0 (worldCheck.cpp:7)")


def test_a_name_pasted_between_literals_is_a_value_and_a_format_macro_completes_its_conversion():
    found = _by_template()
    # `"Call to " name " failed with error %s"` inside a macro, its lines continued with backslashes
    assert found["Call to {} failed with error {}"].level == "warning"
    assert "Call to failed with error {}" not in found
    # `"%" PRIu64 " is above the " /* comment */ "configured limit"`
    assert found["Token count {} is above the configured limit"].level == "error"


def test_cpp_stream_macros_print_their_head_then_what_is_streamed():
    found = _by_template()
    check = found["Check failed: (row >= 0 && row < rows) is false: Mask row {} lies outside the batch of {} rows"]
    assert (check.level, check.file, check.function) == ("check", "cpp/grammar/matchCheck.cc", "Matcher::FillMask")
    assert found["Check failed: (mask_.ndim == 2) is false:"].level == "check"  # no text streamed: the condition
    assert 'Check failed: (schema.count("type")) is false: a schema without a type' in found  # a call in the condition
    assert found["Filling a mask for a finished matcher"].level == "warning"
    assert found["Stop token {} was never declared"].level == "error"
    assert found["mask filled for row {}"].level == "info"
    assert not any("#x" in t for t in found)  # the macro's own definition is no message
    assert re2.compile(check.regex).search(
        "[10:00:01] /src/cpp/grammar/matchCheck.cc:6: Check failed: (row >= 0 && row < rows) is false: "
        "Mask row 9 lies outside the batch of 4 rows")


def test_every_regex_is_re2_and_matches_real_renderings():
    found = _by_template()
    assert check_catalogue(tuple(found.values())) == []
    rx = re2.compile(found["Token pool exhausted: need {} slots but only {} are free"].regex)
    assert rx.search("[2026-11-30 10:00:01 TP0] RuntimeError: Token pool exhausted: need 4096 slots but only 12 are free")
    assert not rx.search("Token pool exhausted")
    world = re2.compile(found["World size {} does not equal tensor parallelism {} times pipeline parallelism {}"].regex)
    assert world.search("[TensorRT-LLM][ERROR] Assertion failed: World size 8 does not equal tensor  parallelism 4 "
                        "times pipeline parallelism 1 (worldCheck.cpp:6)")
    assert all(re2.compile(t.regex).search(render(t.template, "x y")) for t in found.values())


def test_mine_command_merges_versions_into_one_file(tmp_path):
    from test_cli import run  # the installed console script, as a user runs it

    cat = tmp_path / "catalogue"
    for version in ("1.0", "1.1"):
        r = run("corpus", "mine", str(TREE), "--engine", "fake", "--version", version, "--catalogue", str(cat),
                tmp=tmp_path / "data")
        assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in gzip.decompress((cat / "fake.jsonl.gz").read_bytes()).decode().splitlines()]
    assert len(rows) == len(_by_template()) and all(row["versions"] == ["1.0", "1.1"] for row in rows)
    assert {t.engine for t in load_catalogue(cat)} == {"fake"}
    bad = run("corpus", "mine", str(tmp_path / "nowhere"), "--engine", "fake", "--version", "1", tmp=tmp_path / "data")
    assert bad.returncode == 2 and len(bad.stderr.decode().strip().splitlines()) == 1
