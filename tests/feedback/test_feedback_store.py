"""The feedback database: schema and migrations, votes, corrections, agreement, allow-list, rate
limits, forgetting, export and backup. No engine needed. The `store` and `database_url` fixtures run
each test on SQLite and on a real PostgreSQL server; what only SQLite has uses `sqlite_store`."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
import threading

import pytest
from fbhelpers import diagnosis

from servetriage.feedback import (SCHEMA_VERSION, Allowlist, FeedbackError, FeedbackStore, NotFound, RateLimit,
                                  SchemaError, backup_database)
from servetriage.feedback._export import write_feedback
from servetriage.feedback._rules import CorrectionView, Support, VoteView, derive
from servetriage.feedback._schema import LATEST, migrate
from servetriage.storage import connect

LOG = "ERROR x\ntorch.OutOfMemoryError: CUDA out of memory. hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345\n"


def record(store: FeedbackStore, category: str = "gpu-oom", text: str = LOG, ts: str = "1700.1") -> str:
    did = store.replies.record(diagnosis(category), text, team="T1", channel="C1", thread_ts="1699.0", user="UASK",
                       source="message")
    store.replies.attach_reply(did, ts)
    return did


# -- schema ------------------------------------------------------------------------------------------
def test_new_database_is_at_the_latest_schema(store):
    assert store.schema_version == LATEST == SCHEMA_VERSION
    assert {"diagnoses", "votes", "vote_events", "corrections", "incidents", "examples",
            "quarantine", "schema_migrations"} <= store.db.tables()


def test_a_new_sqlite_database_is_wal_and_fully_synchronous(sqlite_store):
    db = sqlite_store.db.db
    assert db.journal_mode == "wal"
    assert db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL


def test_two_processes_migrating_a_new_database_at_once_apply_each_step_once(database_url):
    barrier = threading.Barrier(3, timeout=30)
    results: list[list[int]] = []
    errors: list[BaseException] = []

    def open_one() -> None:
        try:
            db = connect(database_url)
            barrier.wait()
            results.append(migrate(db))
            db.close()
        except BaseException as exc:  # noqa: BLE001 — reported below, not lost in a thread
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=open_one) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not [e for e in errors if not isinstance(e, threading.BrokenBarrierError)], errors
    assert sorted(v for r in results for v in r) == list(range(1, LATEST + 1))


def test_migrating_an_old_database_keeps_its_feedback(database_url):
    db = connect(database_url)
    assert migrate(db, target=1) == [1]
    with db.transaction() as tx:
        tx.execute("INSERT INTO diagnoses (id, created, channel, excerpt, excerpt_hash, category) "
                   "VALUES ('d1', 1.0, 'C1', 'log', 'h', 'gpu-oom')")
        tx.execute('INSERT INTO votes (diagnosis_id, "user", direction, source, created, updated) '
                   "VALUES ('d1', 'U1', 1, 'button', 1.0, 1.0)")
    db.close()
    with FeedbackStore(connect(database_url)) as store:
        assert store.schema_version == LATEST
        assert [v["user"] for v in store.votes.all("d1")] == ["U1"]
        [ex] = store.training.examples()  # derived on upgrade: the old vote still teaches
        assert (ex.diagnosis_id, ex.category, ex.kind) == ("d1", "gpu-oom", "confirmed")
        applied = [r["version"] for r in store.db.query("SELECT version FROM schema_migrations ORDER BY version")]
        assert applied == list(range(1, LATEST + 1))


def test_a_newer_schema_is_refused_and_left_alone(database_url):
    FeedbackStore(connect(database_url)).close()
    db = connect(database_url)
    with db.transaction() as tx:
        tx.execute("INSERT INTO schema_migrations (version, name, applied) VALUES (99, 'future', 0)")
    with pytest.raises(SchemaError, match="newer"):
        FeedbackStore(db.reopen())
    assert db.query("SELECT MAX(version) AS v FROM schema_migrations")[0]["v"] == 99
    db.close()


# -- recording and votes --------------------------------------------------------------------------------
def test_record_redacts_the_excerpt_and_links_the_reply(store):
    did = record(store)
    row = store.replies.get(did)
    assert "hf_AbCdEf" not in row.excerpt and "[REDACTED]" in row.excerpt
    assert len(row.excerpt_hash) == 64 and row.category == "gpu-oom" and row.team == "T1"
    assert row.alternatives[1]["category"] == "worker-dead"
    assert store.replies.by_reply("C1", "1700.1").id == did
    assert store.replies.by_reply("C1", "nope") is None


def test_one_vote_per_user_and_it_can_change(store):
    did = record(store)
    first = store.votes.vote(did, "U1", True)
    again = store.votes.vote(did, "U1", True)
    changed = store.votes.vote(did, "U1", False)
    assert first.changed and not again.changed and changed.changed
    assert first.vote_id == again.vote_id == changed.vote_id
    [vote] = store.votes.all(did)
    assert vote["direction"] == -1
    history = [r["direction"] for r in store.db.query("SELECT direction FROM vote_events ORDER BY id")]
    assert history == [1, 1, -1]  # every action kept
    assert (changed.tally.up, changed.tally.down) == (0, 1)


def test_unknown_diagnosis_and_bad_labels_change_nothing(store):
    did = record(store)
    before = store.counts()
    with pytest.raises(NotFound):
        store.votes.vote("nope", "U1", True)
    strict = FeedbackStore(store.db.reopen(), categories={"gpu-oom", "worker-dead"})
    try:
        with pytest.raises(FeedbackError, match="unknown category"):
            strict.votes.correct(did, "U1", "no-such-category")
        with pytest.raises(FeedbackError, match="needs a title"):
            strict.votes.new_incident(did, "U1", category="gpu-oom", title=" ", cause="c", first_action="a")
    finally:
        strict.close()
    assert store.counts() == before


# -- agreement ---------------------------------------------------------------------------------------
def test_agreement_rules():
    open_list = Allowlist()
    up = lambda i, u: VoteView(i, u, 1, False)  # noqa: E731
    down = lambda i, u: VoteView(i, u, -1, False)  # noqa: E731
    fix = lambda i, u, c: CorrectionView(i, u, c, None)  # noqa: E731
    assert derive("gpu-oom", "i", [up(1, "a")], [], open_list).category == "gpu-oom"
    # one voter cannot flip what two confirmed
    two_up = derive("gpu-oom", "i", [up(1, "a"), up(2, "b"), down(3, "c")], [fix(1, "c", "worker-dead")], open_list)
    assert two_up.category == "gpu-oom" and two_up.kind == "confirmed" and two_up.vote_ids == (1, 2)
    # a 1-1 split teaches nothing
    assert derive("gpu-oom", "i", [up(1, "a"), down(2, "c")], [fix(1, "c", "worker-dead")], open_list) is None
    # a correction alone, or agreeing corrections against one 👍, relabel
    alone = derive("gpu-oom", "i", [down(1, "c")], [fix(7, "c", "worker-dead")], open_list)
    assert (alone.category, alone.kind, alone.correction_ids) == ("worker-dead", "corrected", (7,))
    agree = derive("gpu-oom", "i", [up(1, "a"), down(2, "b"), down(3, "c")],
                   [fix(1, "b", "worker-dead"), fix(2, "c", "worker-dead")], open_list)
    assert agree.category == "worker-dead"
    # a bare 👎 backs nothing
    assert derive("gpu-oom", "i", [down(1, "c")], [], open_list) is None


def test_a_correction_the_answer_gave_no_support_waits_for_a_second_voice():
    down = lambda i, u: VoteView(i, u, -1, False)  # noqa: E731
    fix = lambda i, u, c: CorrectionView(i, u, c, None)  # noqa: E731
    answer = Support.of([("gpu-oom", 0.97), ("kv-cache-exhausted", 0.21), ("router", 0.004)], rules=["gpu-oom"])
    one = derive("gpu-oom", "i", [down(1, "a")], [fix(1, "a", "router")], Allowlist(), answer)
    assert one is None  # `router` scored nothing worth a candidate: one careless click must not teach it
    two = derive("gpu-oom", "i", [down(1, "a"), down(2, "b")], [fix(1, "a", "router"), fix(2, "b", "router")],
                 Allowlist(), answer)
    assert two.category == "router" and two.correction_ids == (1, 2)
    backed = derive("gpu-oom", "i", [down(1, "a")], [fix(1, "a", "kv-cache-exhausted")], Allowlist(), answer)
    assert backed.category == "kv-cache-exhausted"  # one of the answer's own "might be"s: one voice is enough
    trainer = derive("gpu-oom", "i", [down(1, "a")], [fix(1, "a", "router")], Allowlist(("a",)), answer)
    assert trainer.category == "router"  # a trainer the allow-list names is trusted on their own
    nothing_claimed = derive("unknown", None, [down(1, "a")], [fix(1, "a", "router")], Allowlist(),
                             Support.of([]))
    assert nothing_claimed.category == "router"  # an `unknown` answer claimed nothing to overturn


def test_an_uncorroborated_correction_is_said_to_wait_and_trains_nothing(store):
    from servetriage.classifier import Candidate
    did = store.replies.record(diagnosis(top=(Candidate("gpu-oom", "fb-test-oom-forward", 0.95, "t"),)), LOG,
                               team="T1", channel="C1", thread_ts="1699.0", user="UASK", source="message")
    first = store.votes.correct(did, "U1", "distributed-comm")
    assert first.tally.label is None and first.tally.waiting == "distributed-comm"
    assert store.training.examples() == []
    second = store.votes.correct(did, "U2", "distributed-comm")
    assert second.tally.waiting is None and second.tally.label.category == "distributed-comm"
    [ex] = store.training.examples()
    assert ex.category == "distributed-comm" and ex.kind == "corrected"


def test_agreement_through_the_store(store):
    did = record(store)
    store.votes.vote(did, "U1", True)
    store.votes.vote(did, "U2", True)
    result = store.votes.correct(did, "U3", "worker-dead", "fb-test-engine-dead")
    assert result.tally.label.category == "gpu-oom" and result.tally.suggested == (("worker-dead", 1),)
    [ex] = store.training.examples()
    assert ex.category == "gpu-oom" and len(ex.vote_ids) == 2
    store.votes.vote(did, "U2", False)  # now 1 👍 against 2 👎, one of them without a correction
    assert store.training.examples() == []
    store.votes.correct(did, "U2", "worker-dead")
    [ex] = store.training.examples()
    assert (ex.category, ex.incident, ex.kind) == ("worker-dead", "fb-test-engine-dead", "corrected")


def test_votes_outside_the_allowlist_are_stored_but_do_not_train(database_url):
    with FeedbackStore(connect(database_url), allowlist=Allowlist(("UTRAIN", "SGROUP"))) as store:
        did = record(store)
        outsider = store.votes.vote(did, "UOUT", True)
        assert not outsider.trusted and len(store.votes.all(did)) == 1 and store.training.examples() == []
        store.trust.set_group_members("SGROUP", ["UMEMBER"])
        member = store.votes.vote(did, "UMEMBER", True)
        assert member.trusted
        [ex] = store.training.examples()
        assert ex.vote_ids == (member.vote_id,)
        with pytest.raises(FeedbackError):
            store.trust.set_group_members("UNOTAGROUP", [])


def test_rate_limited_votes_are_stored_but_do_not_train(database_url):
    now = [1000.0]
    with FeedbackStore(connect(database_url), rate_limit=RateLimit(((60.0, 3),)), clock=lambda: now[0]) as store:
        dids = [record(store, ts=f"17.{i}") for i in range(5)]
        results = [store.votes.vote(d, "UFAST", True) for d in dids[:4]]
        assert [r.throttled for r in results] == [False, False, False, True]
        assert len(store.votes.all()) == 4 and len(store.training.examples()) == 3
        now[0] += 120  # the window has passed: casting it again lifts the throttle
        assert not store.votes.vote(dids[3], "UFAST", True).throttled
        assert len(store.training.examples()) == 4


# -- new incidents, forgetting -------------------------------------------------------------------------
def test_new_incident_becomes_the_label_and_forget_user_removes_it(store):
    did = record(store)
    inc, result = store.votes.new_incident(did, "U1", category="gpu-oom", title="FP8 kernel OOM on H20",
                                     cause="The fp8 GEMM workspace is allocated per stream.",
                                     first_action="Set VLLM_FP8_WORKSPACE=small.")
    assert inc.id == "fb-fp8-kernel-oom-on-h20" and inc.engines == ("vllm",)
    assert result.direction == -1
    [ex] = store.training.examples()
    assert (ex.category, ex.incident, ex.kind) == ("gpu-oom", inc.id, "corrected")
    store.forget.user("U1")
    assert store.incidents.all() == [] and store.training.examples() == [] and store.votes.all() == []


def test_forget_removes_votes_and_their_examples(store):
    a, b = record(store, ts="1.1"), record(store, ts="1.2")
    va = store.votes.vote(a, "U1", True)
    store.votes.vote(b, "U1", True)
    store.votes.correct(b, "U2", "worker-dead")
    generation = store.training.generation()
    assert store.forget.vote(va.vote_id) == {"votes": 1, "corrections": 0, "incidents": 0}
    assert [e.diagnosis_id for e in store.training.examples()] == [] and store.training.generation() > generation  # b is 1-1 now
    assert store.forget.user("U2")["corrections"] == 1
    assert [e.diagnosis_id for e in store.training.examples()] == [b]
    assert store.forget.diagnosis(b)["votes"] == 1
    assert store.training.examples() == [] and store.counts()["diagnoses"] == 1
    before = store.counts()
    for bad in (lambda: store.forget.vote(999), lambda: store.forget.user("UNONE"), lambda: store.forget.diagnosis("x")):
        with pytest.raises(NotFound):
            bad()
    assert store.counts() == before


# -- export, backup --------------------------------------------------------------------------------------
def test_export_jsonl_and_csv(store):
    did = record(store)
    store.votes.vote(did, "U1", True)
    store.votes.correct(did, "U2", "worker-dead", "fb-test-engine-dead")
    store.votes.vote(did, "U3", True)
    buf = io.StringIO()
    assert write_feedback(store, buf, "jsonl") == 3
    rows = [json.loads(line) for line in buf.getvalue().splitlines()]
    assert [r["vote"] for r in rows] == ["up", "down", "up"]
    assert rows[1]["corrected_category"] == "worker-dead" and rows[1]["example_id"] is None
    assert rows[0]["example_label"] == "gpu-oom" and rows[0]["predicted"] == "gpu-oom"
    assert "[REDACTED]" in rows[0]["excerpt"]
    buf = io.StringIO()
    assert write_feedback(store, buf, "csv", with_excerpt=False) == 3
    table = list(csv.DictReader(io.StringIO(buf.getvalue())))
    assert [r["user"] for r in table] == ["U1", "U2", "U3"] and "excerpt" not in table[0]
    with pytest.raises(FeedbackError):
        write_feedback(store, io.StringIO(), "xml")


def test_backup_is_consistent_while_votes_are_written(sqlite_store, tmp_path):
    store = sqlite_store
    did = record(store)
    stop = threading.Event()

    def writer() -> None:
        n = 0
        while not stop.is_set():
            store.votes.vote(did, f"W{n}", n % 2 == 0)
            n += 1

    t = threading.Thread(target=writer)
    t.start()
    try:
        dest = store.backup(tmp_path / "backup.sqlite")
    finally:
        stop.set()
        t.join()
    copy = sqlite3.connect(str(dest))
    assert copy.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    votes = copy.execute("SELECT COUNT(*) FROM votes").fetchone()[0]
    events = copy.execute("SELECT COUNT(*) FROM vote_events").fetchone()[0]
    copy.close()
    assert votes == events  # each vote and its history row arrive together, or neither
    with pytest.raises(FeedbackError, match="already exists"):
        backup_database(store.db.path, dest)
    with pytest.raises(FeedbackError, match="no such directory"):
        backup_database(store.db.path, tmp_path / "missing" / "b.sqlite")
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".backup")) == []


def test_concurrent_votes_from_many_users_all_land(database_url):
    with FeedbackStore(connect(database_url)) as first:
        did = record(first)
    stores = [FeedbackStore(connect(database_url)) for _ in range(4)]  # four connections, like four processes
    users = [f"U{i:03d}" for i in range(64)]
    barrier = threading.Barrier(len(users))

    def cast(i: int) -> None:
        barrier.wait()
        stores[i % len(stores)].votes.vote(did, users[i], i % 3 != 0)

    threads = [threading.Thread(target=cast, args=(i,)) for i in range(len(users))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    tally = stores[0].votes.tally(did)
    assert sorted(v["user"] for v in stores[0].votes.all(did)) == users
    assert (tally.up, tally.down) == (sum(i % 3 != 0 for i in range(64)), sum(i % 3 == 0 for i in range(64)))
    for s in stores:
        s.close()
