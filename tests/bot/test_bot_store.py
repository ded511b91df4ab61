"""The persistent delivery ledger (on SQLite and on PostgreSQL) and the in-memory reply recorder."""

from __future__ import annotations

import sqlite3
import threading

from servetriage.bot import EventLedger, InMemoryRecorder, ReplyRecorder
from servetriage.bot.triage import ChannelRateLimiter
from servetriage.storage import connect


def test_a_key_is_claimed_once_across_threads_replicas_and_restarts(database_url):
    ledgers = [EventLedger(connect(database_url)) for _ in range(2)]  # two replicas on one database
    wins: list[bool] = []
    barrier = threading.Barrier(8)

    def claim(i: int) -> None:
        barrier.wait()
        wins.append(ledgers[i % 2].claim("event:Ev1"))

    threads = [threading.Thread(target=claim, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wins.count(True) == 1
    for ledger in ledgers:
        ledger.close()
    again = EventLedger(connect(database_url))
    assert not again.claim("event:Ev1") and again.claim("event:Ev2") and again.seen("event:Ev2")
    assert not again.seen("event:Ev3")
    again.close()


def test_without_a_database_url_the_ledger_is_its_own_sqlite_file_in_wal_mode(tmp_path):
    from servetriage import Settings

    EventLedger.for_settings(Settings(data_dir=tmp_path)).close()
    assert sqlite3.connect(tmp_path / "slack_events.sqlite").execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_the_in_memory_recorder_is_a_bounded_reply_recorder():
    from servetriage.classifier import Diagnosis

    rec = InMemoryRecorder(capacity=2)
    assert isinstance(rec, ReplyRecorder)
    d = Diagnosis("unknown", 0.0, None, (), (), None, (), None, {})
    ids = [rec.record(d, "log", team=None, channel="C", thread_ts="1", user="U", source="message") for _ in range(3)]
    assert len(set(ids)) == 3 and len(rec) == 2 and rec.get(ids[0]) is None
    rec.attach_reply(ids[2], "99.1")
    assert rec.get(ids[2]).reply_ts == "99.1"


def test_the_channel_rate_limit_is_a_sliding_minute():
    now = [0.0]
    limiter = ChannelRateLimiter(2, clock=lambda: now[0])
    assert limiter.allow("C1") and limiter.allow("C1") and not limiter.allow("C1")
    assert limiter.allow("C2")
    now[0] = 60.0
    assert limiter.allow("C1")


def test_the_pool_refuses_work_beyond_its_queue_instead_of_queueing_forever():
    from servetriage.bot.triage import WorkPool

    gate = threading.Event()
    pool = WorkPool(workers=1, max_pending=2)
    assert pool.submit(gate.wait) and pool.submit(gate.wait)
    assert not pool.submit(gate.wait)
    gate.set()
    pool.close(wait=True)
    assert not pool.submit(lambda: None)
