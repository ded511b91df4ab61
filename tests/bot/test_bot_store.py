"""The persistent delivery ledger and the in-memory reply recorder."""

from __future__ import annotations

import sqlite3
import threading

from servetriage.bot import EventLedger, InMemoryRecorder, ReplyRecorder
from servetriage.bot.triage import ChannelRateLimiter


def test_a_key_is_claimed_once_across_threads_and_restarts(tmp_path):
    ledger = EventLedger.in_dir(tmp_path)
    wins: list[bool] = []
    threads = [threading.Thread(target=lambda: wins.append(ledger.claim("event:Ev1"))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wins.count(True) == 1
    ledger.close()
    again = EventLedger.in_dir(tmp_path)
    assert not again.claim("event:Ev1") and again.claim("event:Ev2") and again.seen("event:Ev2")
    assert sqlite3.connect(tmp_path / "slack_events.sqlite").execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    again.close()


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
