"""Replacing a file whole (the model's ACTIVE pointer, its status, the catalogue's cached index)."""

from __future__ import annotations

import pytest

from servetriage._atomic import replace_file


def test_a_file_is_replaced_whole_and_no_temporary_file_is_left(tmp_path):
    target = tmp_path / "ACTIVE"
    replace_file(target, "v1")
    replace_file(target, b"v2")
    assert target.read_text() == "v2" and [p.name for p in tmp_path.iterdir()] == ["ACTIVE"]


def test_a_failed_write_leaves_the_old_content_and_nothing_else(tmp_path):
    target = tmp_path / "status.json"
    replace_file(target, "{}")
    (tmp_path / "blocker").mkdir()
    with pytest.raises(OSError):
        replace_file(tmp_path / "blocker", "x")  # a directory cannot be replaced by a file
    assert target.read_text() == "{}" and sorted(p.name for p in tmp_path.iterdir()) == ["blocker", "status.json"]
