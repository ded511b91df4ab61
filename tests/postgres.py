"""A real PostgreSQL server for the tests, started once per session from the `pgserver` wheel.

Each test that asks for one gets a database of its own on it. Where no server can be started the
tests that need one are skipped with the reason, except in CI (`CI` set), where that is a failure.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from servetriage.storage import LocalPostgres


def start_or_skip(tmp_root: Path) -> LocalPostgres:
    try:
        return LocalPostgres(tmp_root)
    except Exception as exc:  # noqa: BLE001 — any reason the server cannot start is reported the same way
        reason = f"no PostgreSQL server could be started here ({type(exc).__name__}: {exc})"
        if os.environ.get("CI"):
            pytest.fail(reason + " — CI must run the PostgreSQL tests")
        pytest.skip(reason)
