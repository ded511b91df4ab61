"""Speed of the storage seam: `python eval/bench_store.py [--writes 400] [--json]`.

For SQLite (the embedded default) and PostgreSQL (a server started from the `pgserver` wheel, over
its Unix socket), measures what the bot does per Slack delivery and per click: a dedupe-ledger claim
and a vote (one transaction: the vote, its history row, the re-derived example), one writer and four
concurrent writers (four replicas' worth of connections). Prints p50/p99 latencies and writes/s.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any
from collections.abc import Callable

CONCURRENT = 4


def _percentiles(samples: list[float]) -> dict[str, float]:
    samples = sorted(samples)
    return {"p50_ms": round(statistics.median(samples) * 1000, 2),
            "p99_ms": round(samples[min(len(samples) - 1, int(len(samples) * 0.99))] * 1000, 2)}


def _timed(n: int, op: Callable[[int], Any]) -> list[float]:
    out = []
    for i in range(n):
        t0 = time.perf_counter()
        op(i)
        out.append(time.perf_counter() - t0)
    return out


def _concurrent(n: int, make: Callable[[], Callable[[int], Any]]) -> float:
    """Writes per second with CONCURRENT connections writing n operations between them."""
    ops = [make() for _ in range(CONCURRENT)]
    barrier = threading.Barrier(CONCURRENT)

    def run(k: int) -> None:
        barrier.wait()
        for i in range(k, n, CONCURRENT):
            ops[k](i)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(CONCURRENT)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return round(n / (time.perf_counter() - t0), 1)


def bench(url: str, writes: int) -> dict[str, Any]:
    from servetriage.bot import EventLedger  # noqa: PLC0415 (the package, once the bench's own arguments parse)
    from servetriage.classifier import Diagnosis  # noqa: PLC0415
    from servetriage.feedback import FeedbackStore  # noqa: PLC0415
    from servetriage.storage import connect  # noqa: PLC0415

    store = FeedbackStore(connect(url))
    d = Diagnosis("gpu-oom", 0.9, None, (), (), None, (), "vllm", {})
    ids = [store.replies.record(d, "torch.OutOfMemoryError: CUDA out of memory", team="T", channel="C",
                                thread_ts=str(i), user="U", source="message") for i in range(writes)]
    ledger = EventLedger(connect(url))
    run = uuid.uuid4().hex[:6]
    claim = _timed(writes, lambda i: ledger.claim(f"event:{run}:{i}"))
    vote = _timed(writes, lambda i: store.votes.vote(ids[i], f"U{i}", True))

    def claimer() -> Callable[[int], Any]:
        own = EventLedger(connect(url))
        return lambda i: own.claim(f"event:{run}:c:{i}")

    def voter() -> Callable[[int], Any]:
        own = FeedbackStore(connect(url))
        return lambda i: own.votes.vote(ids[i], f"W{i}", False)

    return {"claim": _percentiles(claim), "vote": _percentiles(vote),
            "claims_per_s_4_connections": _concurrent(writes, claimer),
            "votes_per_s_4_connections": _concurrent(writes, voter)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=400)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    report: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="st-bench-store-") as tmp:
        report["sqlite"] = bench(str(Path(tmp) / "bench.sqlite"), args.writes)
        try:
            from servetriage.storage import LocalPostgres  # noqa: PLC0415
            server = LocalPostgres(Path(tmp) / "pg")  # pgserver: a dev dependency
            report["postgresql"] = bench(server.new_database("bench"), args.writes)
            server.stop()
        except ImportError as exc:
            report["postgresql"] = f"skipped: {exc}"
    if args.json:
        print(json.dumps(report))
    else:
        for backend, figures in report.items():
            print(f"{backend}: {figures}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
