"""The persistent delivery ledger (on SQLite and on PostgreSQL) and the in-memory reply recorder."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from servetriage.bot import EventLedger, InMemoryRecorder, ReplyRecorder
from servetriage.bot.triage import ChannelPacer, Defer
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


def test_replies_are_paced_per_channel_and_a_long_wait_defers_the_job():
    now, slept = [0.0], []
    pacer = ChannelPacer(60, clock=lambda: now[0], sleep=slept.append)  # one a second
    pacer.wait("C1")
    pacer.wait("C1")        # the next slot is a second away: slept in the worker
    pacer.wait("C2")        # another channel has its own pace
    assert slept == [1.0]
    pacer.wait("C1")        # two seconds away: still slept
    assert slept == [1.0, 2.0]
    with pytest.raises(Defer) as later:
        pacer.wait("C1")    # three seconds away: back to the queue until then
    assert later.value.seconds == 3.0
    now[0] = 10.0
    pacer.wait("C1")
    assert slept == [1.0, 2.0]  # its slot has come
    ChannelPacer(0).wait("C1")  # 0: no pacing

def test_a_job_is_recorded_once_and_claimed_by_one_replica(database_url):
    from servetriage.bot.store import JobQueue

    replicas = [JobQueue(connect(database_url), owner=f"host:{n}") for n in (1, 2)]
    first = replicas[0].enqueue("event:Ev1", {"n": 1}, "C1")
    again = replicas[1].enqueue("event:Ev1", {"n": 2}, "C1")  # Slack's retry, at the other replica
    assert first.fresh and not again.fresh and first.depth == 1
    for n in range(2, 10):
        replicas[n % 2].enqueue(f"event:Ev{n}", {"n": n}, "C1")
    taken: list[str] = []
    barrier = threading.Barrier(4)

    def worker(queue) -> None:
        barrier.wait()
        while (c := queue.claim()) is not None:
            taken.append(c.key)
            queue.done(c.key)

    threads = [threading.Thread(target=worker, args=(replicas[i % 2],)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(taken) == sorted(f"event:Ev{n}" for n in range(1, 10))  # each once, whoever took it
    assert replicas[0].counts()["done"] == 9 and replicas[0].pending() == 0
    for q in replicas:
        q.close()


def test_a_failing_job_is_retried_then_parked_and_a_dead_owners_job_resumes(database_url, monkeypatch):
    from servetriage.bot.store import JobQueue, _jobs

    monkeypatch.setattr(_jobs, "RETRY_BACKOFF_S", 0.0)
    queue = JobQueue(connect(database_url), owner="thishost:1")
    queue.enqueue("command:T1", {"text": "log"}, "C1")
    for attempt in range(1, 4):
        c = queue.claim()
        assert c is not None and c.attempts == attempt
        parked = queue.failed(c.key, "RuntimeError: boom")
        assert parked == (attempt == 3)
    assert queue.claim() is None and [p["key"] for p in queue.parked()] == ["command:T1"]

    queue.enqueue("event:Ev9", {"text": "log"}, "C1")
    dead = JobQueue(connect(database_url), owner="thishost:999999999")  # a pid no process has
    c = dead.claim()
    dead.answered(c.key, "file:F1")
    assert queue.claim() is None  # held by its (now dead) owner, within its lease
    assert queue.recover() == 1
    again = queue.claim()
    assert again.key == "event:Ev9" and again.answered == frozenset({"file:F1"}) and again.attempts == 1
    queue.defer(again.key, 60.0)  # the channel's pace: later, the attempt not counted
    assert queue.claim() is None and queue.counts()["queued"] == 1
    queue.close()
    dead.close()
