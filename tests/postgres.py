"""A real PostgreSQL server for the tests, started once per session from the `pgserver` wheel.

Each test that asks for one gets a database of its own on it. Where no server can be started the
tests that need one are skipped with the reason, except in CI (`CI` set), where that is a failure.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

import pytest

SOCKET_DIR_LIMIT = 90  # a Unix socket path must stay under ~107 bytes


class PostgresServer:
    def __init__(self, root: Path) -> None:
        runtime = root / "run"
        runtime.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.environ.setdefault("XDG_RUNTIME_DIR", str(runtime))  # pgserver asks for one; a CI shell may have none
        import pgserver  # a test dependency; only the PostgreSQL tests need it

        self._server: Any = pgserver.get_server(str(root / "data"), cleanup_mode="stop")

    def new_database(self) -> str:
        """A fresh, empty database; returns its `postgresql://` URL (over the server's Unix socket)."""
        import psycopg

        name = "t_" + uuid.uuid4().hex[:12]
        with psycopg.connect(self._server.get_uri(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return str(self._server.get_uri(name))

    def stop(self) -> None:
        cleanup = getattr(self._server, "cleanup", None)
        if cleanup is not None:
            cleanup()


def start_or_skip(tmp_root: Path) -> PostgresServer:
    root = tmp_root if len(str(tmp_root)) < SOCKET_DIR_LIMIT else Path("/tmp") / f"st-pg-{uuid.uuid4().hex[:8]}"
    try:
        return PostgresServer(root)
    except Exception as exc:  # noqa: BLE001 — any reason the server cannot start is reported the same way
        reason = f"no PostgreSQL server could be started here ({type(exc).__name__}: {exc})"
        if os.environ.get("CI"):
            pytest.fail(reason + " — CI must run the PostgreSQL tests")
        pytest.skip(reason)
