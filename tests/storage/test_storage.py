"""The storage seam on both backends: transactions, placeholders, the replica-wide lock, the shared
active-model pointer, and what a lost connection or a bad URL does."""

from __future__ import annotations

import json
import threading
import time

import pytest

from servetriage import Settings
from servetriage.classifier import ArtefactStore, artefacts_for
from servetriage.storage import ActivePointerRow, StorageError, connect


def test_a_transaction_commits_together_or_not_at_all(database_url):
    db = connect(database_url)
    with db.transaction() as tx:
        tx.execute("CREATE TABLE t (k TEXT PRIMARY KEY, v TEXT)")
    with db.transaction() as tx:
        tx.execute("INSERT INTO t (k, v) VALUES (?, ?)", ["a", "50% off"])  # a literal % is data, not a placeholder
    with pytest.raises(RuntimeError), db.transaction() as tx:
        tx.execute("INSERT INTO t (k, v) VALUES (?, ?)", ["b", "x"])
        raise RuntimeError("boom")
    assert db.query("SELECT k, v FROM t ORDER BY k") == [{"k": "a", "v": "50% off"}]
    with db.transaction() as tx:
        assert tx.execute("INSERT INTO t (k, v) VALUES (?, ?) ON CONFLICT (k) DO NOTHING", ["a", "y"]) == 0
        assert tx.scalar("SELECT COUNT(*) FROM t") == 1
    db.close()


def test_the_exclusive_lock_is_held_by_one_connection_at_a_time(database_url):
    first, second = connect(database_url), connect(database_url)
    with first.transaction() as tx:
        tx.execute("CREATE TABLE IF NOT EXISTS seq (n INTEGER)")
    inside: list[str] = []
    overlap = []

    def work(db, name: str) -> None:
        with db.exclusive("retrain"):
            inside.append(name)
            overlap.append(len(inside))
            time.sleep(0.2)
            inside.remove(name)

    threads = [threading.Thread(target=work, args=(db, n)) for db, n in ((first, "a"), (second, "b"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert overlap == [1, 1]
    first.close()
    second.close()


def _version(root, name: str) -> None:
    (root / name).mkdir(parents=True)
    (root / name / "meta.json").write_text(json.dumps({
        "version": name, "format": 8, "corpus_fingerprint": "x", "embedder": None, "created": 1.0, "metrics": {},
        "examples": 1}))
    for part in ("classifier", "features"):
        (root / name / f"{part}.pickle").write_bytes(b"w")


def test_replicas_follow_one_active_pointer_in_the_database(database_url, tmp_path):
    shared = tmp_path / "models"   # the directory every replica reads
    _version(shared, "v1")
    _version(shared, "v2")
    a = ArtefactStore(shared, ActivePointerRow(connect(database_url)))
    b = ArtefactStore(shared, ActivePointerRow(connect(database_url)))
    assert a.active() is None and not (shared / "ACTIVE").exists()
    a.activate("v1", note="first")
    assert b.active() == "v1" and b.status("v1").state == "active" and b.status("v1").note == "first"
    b.activate("v2")
    assert a.active() == "v2" and a.status("v1").state == "retired" and a.status("v2").activated is not None
    assert not (shared / "ACTIVE").exists()  # the pointer is the row, not a file


def test_artefacts_for_puts_the_pointer_where_the_settings_say(tmp_path, postgres):
    url = postgres.new_database()
    _version(tmp_path / "models", "v1")
    embedded = artefacts_for(Settings(data_dir=tmp_path))
    shared = artefacts_for(Settings(data_dir=tmp_path, database_url=url))
    embedded.activate("v1")
    assert (tmp_path / "models" / "ACTIVE").read_text() == "v1" and shared.active() is None
    shared.activate("v1")
    assert shared.active() == "v1" and artefacts_for(Settings(data_dir=tmp_path, database_url=url)).active() == "v1"


def test_a_dropped_connection_is_opened_again(postgres):
    url = postgres.new_database()
    db = connect(url)
    pid = db.query("SELECT pg_backend_pid() AS pid")[0]["pid"]
    killer = connect(url)
    killer.query("SELECT pg_terminate_backend(?) AS done", [pid])
    assert db.query("SELECT 1 AS one") == [{"one": 1}]  # one retry on a fresh connection
    pid = db.query("SELECT pg_backend_pid() AS pid")[0]["pid"]
    killer.query("SELECT pg_terminate_backend(?) AS done", [pid])
    with db.transaction() as tx:  # found dead at BEGIN: replaced before anything was sent
        assert tx.scalar("SELECT 2") == 2
    db.close()
    killer.close()


def test_an_unreachable_database_is_one_line_without_the_password():
    with pytest.raises(StorageError) as err:
        connect("postgresql://bot:s3cret@127.0.0.1:1/servetriage?connect_timeout=2")
    message = str(err.value)
    assert "s3cret" not in message and "\n" not in message and "cannot connect" in message
