"""A throw-away PostgreSQL server on this machine, from the `pgserver` wheel (a dev dependency): what
the tests and the storage benchmark run against. Nothing in the bot uses it."""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

SOCKET_DIR_LIMIT = 90  # a Unix socket path must stay under ~107 bytes


class LocalPostgres:
    """A server whose data lives under `root` (a shorter directory under /tmp when `root` is too long
    for its socket); `new_database()` gives each user a database of its own."""

    def __init__(self, root: Path) -> None:
        root = root if len(str(root)) < SOCKET_DIR_LIMIT else Path("/tmp") / f"st-pg-{uuid.uuid4().hex[:8]}"
        runtime = root / "run"
        runtime.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.environ.setdefault("XDG_RUNTIME_DIR", str(runtime))  # pgserver asks for one; a CI shell may have none
        import pgserver  # noqa: PLC0415 - a dev dependency, loaded only here

        self._server: Any = pgserver.get_server(str(root / "data"), cleanup_mode="stop")  # type: ignore[attr-defined]

    def new_database(self, name: str | None = None) -> str:
        """A fresh, empty database; returns its `postgresql://` URL (over the server's Unix socket)."""
        import psycopg  # noqa: PLC0415

        name = name or "t_" + uuid.uuid4().hex[:12]
        with psycopg.connect(self._server.get_uri(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return str(self._server.get_uri(name))

    def stop(self) -> None:
        cleanup = getattr(self._server, "cleanup", None)
        if cleanup is not None:
            cleanup()
