"""Slack bot latency on loopback: acknowledgement time and reply latency, pasted log and 50 MB file.

The real app (build_app + HttpAdapter under uvicorn) talks to the recording Web API stand-in; a
signed Events API request is sent and timed until its HTTP 200 (the ack Slack waits 3 s for),
and until the answer reaches the stand-in (chat.postMessage, or the chat.update that replaces
the "reading…" placeholder of a large file). Usage:

    python eval/bench_slack.py [--runs 20] [--file-mb 50] [--embeddings] [--json]
    python eval/bench_slack.py --storm 40 [--channels 1] [--embeddings]   # concurrent pastes, paced
    python eval/bench_slack.py --cold-start 5 [--embeddings]   # `servetriage serve` started to /readyz 200
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
from concurrent.futures import ThreadPoolExecutor
import statistics
import sys
import tempfile
import time
import urllib.request
from typing import Any
from collections.abc import Callable
from pathlib import Path

from servetriage import Settings
from servetriage.bot import HttpAdapter, HttpServer, build_app
from servetriage.bot.standin import Call, SlackStandIn, event_envelope, message_event, signed_headers
from servetriage.classifier import Engine
from servetriage.corpus import load_corpus
from servetriage.feedback import FeedbackStore, StoreFeedback

SECRET = "bench-signing-secret"
MB = 1024 * 1024
OOM_TAIL = """Traceback (most recent call last):
  File "/usr/lib/python3/site-packages/vllm/worker/model_runner.py", line 1204, in execute_model
    hidden_states = model_executable(input_ids=input_ids, positions=positions)
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.14 GiB of which 1.06 GiB is free.
"""  # noqa: E501 - a traceback as the engine prints it
PASTE = ("INFO 05-12 10:00:01 llm_engine.py:200] Initializing an LLM engine (v0.6.3) with config: model='m'\n"
         + OOM_TAIL)


def big_log(size: int) -> bytes:
    line = ("INFO 05-12 10:{m:02d}:{s:02d} metrics.py:351] Avg prompt throughput: 812.4 tokens/s, Avg generation "
            "throughput: 1520.7 tokens/s, Running: 61 reqs, Swapped: 0 reqs, Pending: 3 reqs, GPU KV cache usage: 87.1%\n")
    rows, total, i = [], 0, 0
    while total < size - 600:
        row = line.format(m=(i // 60) % 60, s=i % 60)
        rows.append(row)
        total += len(row)
        i += 1
    return ("".join(rows) + OOM_TAIL).encode()


def in_thread(ts: str) -> Callable[[Call], bool]:
    """Matches a Web API call that posts into the thread of message `ts`."""
    return lambda c: c.args.get("thread_ts") == ts


def post(url: str, body: str) -> float:
    req = urllib.request.Request(url, data=body.encode(), headers=signed_headers(SECRET, body), method="POST")
    start = time.perf_counter()
    with urllib.request.urlopen(req, timeout=10) as resp:
        resp.read()
        assert resp.status == 200, resp.status
    return time.perf_counter() - start


def measure(runs: int, file_mb: int, embeddings: bool) -> dict[str, Any]:
    data = Path(tempfile.mkdtemp(prefix="bench-slack-"))
    with SlackStandIn() as slack:
        settings = Settings(embeddings=embeddings, data_dir=data, slack_bot_token=slack.token,
                            slack_signing_secret=SECRET, slack_api_url=slack.api_url, channel_rate_per_minute=0)
        engine = Engine(settings)
        t = time.perf_counter()
        bot = build_app(settings, engine)
        bot.warm_in_background()
        bot.readiness.wait(600)
        warm_s = time.perf_counter() - t
        server = HttpServer(HttpAdapter(bot).asgi(), "127.0.0.1", 0).start()
        url = server.url + "/slack/events"
        try:
            paste_ack, paste_reply = [], []
            for i in range(runs):
                ts = f"1712001000.{i:06d}"
                body = json.dumps(event_envelope(message_event("```\n" + PASTE + "```", ts=ts)))
                sent = time.perf_counter()
                paste_ack.append(post(url, body))
                [reply] = slack.wait_for("chat.postMessage", where=in_thread(ts))
                paste_reply.append(reply.at - sent)
                assert "gpu-oom" in reply.text, reply.text[:300]
            content = big_log(file_mb * MB)
            file_ack, file_reply = [], []
            for i in range(max(1, runs // 10)):
                ts = f"1712002000.{i:06d}"
                f = slack.add_file(f"server-{i}.log", content, channel="C0001", ts=ts)
                body = json.dumps(event_envelope(message_event("", ts=ts, subtype="file_share", files=[f])))
                sent = time.perf_counter()
                file_ack.append(post(url, body))
                [update] = slack.wait_for("chat.update", count=i + 1, timeout=600)[i:]
                file_reply.append(update.at - sent)
                assert "gpu-oom" in update.text, update.text[:300]
        finally:
            server.stop()
            bot.close()
    return {
        "embeddings": embeddings, "warm_s": round(warm_s, 2), "runs": runs, "file_mb": file_mb,
        "file_bytes": len(content),
        "paste": {"ack_ms": _stats(paste_ack), "reply_ms": _stats(paste_reply)},
        "file": {"ack_ms": _stats(file_ack), "reply_ms": _stats(file_reply), "runs": len(file_ack)},
    }


def storm(pastes: int, channels: int, embeddings: bool, pace: int = 60, rate: float = 0.0) -> dict[str, Any]:
    """`pastes` different messages at once over `channels` channels (concurrent signed requests), the
    bot at Slack's pace (`pace` replies per channel per minute), the feedback store recording (so a
    repeat in a channel gets a pointer): every ack timed, every paste's reply awaited. With `rate`,
    the pastes arrive at that many per second instead of all at once."""
    data = Path(tempfile.mkdtemp(prefix="bench-storm-"))
    with SlackStandIn() as slack:
        settings = Settings(embeddings=embeddings, data_dir=data, slack_bot_token=slack.token, workers=4,
                            slack_signing_secret=SECRET, slack_api_url=slack.api_url, channel_rate_per_minute=pace)
        store = FeedbackStore(settings.db_path)
        bot = build_app(settings, Engine(settings), recorder=store.replies, feedback=StoreFeedback(store, load_corpus()))
        bot.warm_in_background()
        bot.readiness.wait(600)
        server = HttpServer(HttpAdapter(bot).asgi(), "127.0.0.1", 0).start()
        url = server.url + "/slack/events"
        bodies = []
        for i in range(pastes):
            ts = f"1712003{i:03d}.000100"
            body = json.dumps(event_envelope(message_event("```\n" + PASTE + "```", ts=ts, channel=f"C{i % channels:04d}")))
            bodies.append((ts, body))
        try:
            start = time.perf_counter()
            sent: dict[str, float] = {}

            def arrive(n: int) -> float:
                if rate:
                    time.sleep(max(0.0, start + n / rate - time.perf_counter()))
                ts, body = bodies[n]
                sent[ts] = time.perf_counter()
                return post(url, body)

            with ThreadPoolExecutor(max_workers=min(64, pastes)) as pool:
                acks = list(pool.map(arrive, range(pastes)))
            replies = slack.wait_for("chat.postMessage", pastes, timeout=600)
            wall = time.perf_counter() - start
            time.sleep(1.0)
            posted = slack.calls_to("chat.postMessage")
            threads = [c.args.get("thread_ts") for c in posted]
            reply_s = [c.at - sent[str(c.args.get("thread_ts"))] for c in replies if c.args.get("thread_ts") in sent]
        finally:
            server.stop()
            bot.close()
            store.close()
    return {"pastes": pastes, "channels": channels, "pace_per_minute": pace, "arrivals_per_s": rate or "all at once",
            "answered_once": len(set(threads)) == pastes == len(threads),
            "pointers": sum(1 for c in posted if c.text.startswith("🔁")),
            "ack_ms": _stats(acks), "reply_ms": _stats(reply_s), "answers_per_s": round(pastes / wall, 1)}


def cold_start(runs: int, embeddings: bool) -> dict[str, Any]:
    """`servetriage serve` (HTTP mode) as a new process, timed until its /readyz answers 200: the
    interpreter, the imports, the model and catalogue loads, the warm-up diagnosis and auth.test."""
    times = []
    with SlackStandIn() as slack, tempfile.TemporaryDirectory(prefix="servetriage-cold-") as tmp:
        env = {**os.environ, "SLACK_BOT_TOKEN": slack.token, "SLACK_SIGNING_SECRET": SECRET,
               "SLACK_API_URL": slack.api_url, "SERVETRIAGE_EMBEDDINGS": "on" if embeddings else "off"}
        env.pop("SLACK_APP_TOKEN", None)
        if not embeddings:
            env["SERVETRIAGE_DATA_DIR"] = tmp  # rules only: no model is read
        for _ in range(runs):
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
            t = time.perf_counter()
            proc = subprocess.Popen([sys.executable, "-m", "servetriage.cli", "serve", "--host", "127.0.0.1",
                                     "--port", str(port)], env=env, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
            try:
                while not _ready(f"http://127.0.0.1:{port}/readyz"):
                    if proc.poll() is not None:
                        raise SystemExit(f"servetriage serve exited with {proc.returncode} before it was ready")
                    time.sleep(0.02)
                times.append(time.perf_counter() - t)
            finally:
                proc.terminate()
                proc.wait(30)
    return {"runs": runs, "embeddings": embeddings, "ready_s_min": round(min(times), 2),
            "ready_s_median": round(statistics.median(times), 2), "ready_s_max": round(max(times), 2)}


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as resp:
            return bool(resp.status == 200)
    except OSError:
        return False


def _stats(seconds: list[float]) -> dict[str, float]:
    ms = sorted(s * 1000 for s in seconds)
    return {"median": round(statistics.median(ms), 1), "p95": round(ms[min(len(ms) - 1, int(0.95 * len(ms)))], 1),
            "p99": round(ms[min(len(ms) - 1, int(0.99 * len(ms)))], 1), "max": round(ms[-1], 1)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--file-mb", type=int, default=50)
    p.add_argument("--embeddings", action="store_true", help="the full engine (default: rules only)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--storm", type=int, metavar="N", help="instead: N pastes at once (see --channels)")
    p.add_argument("--channels", type=int, default=1, help="with --storm: spread over this many channels")
    p.add_argument("--rate", type=float, default=0.0, help="with --storm: pastes arriving per second (0: all at once)")
    p.add_argument("--cold-start", type=int, metavar="N", help="instead: start `servetriage serve` N times, "
                   "timed to /readyz")
    args = p.parse_args(argv)
    if args.cold_start:
        print(json.dumps(cold_start(args.cold_start, args.embeddings)))
        return 0
    if args.storm:
        print(json.dumps(storm(args.storm, args.channels, args.embeddings, rate=args.rate)))
        return 0
    result = measure(args.runs, args.file_mb, args.embeddings)
    if args.json:
        print(json.dumps(result))
        return 0
    print(f"engine: {'full (embeddings on)' if args.embeddings else 'embeddings off (SERVETRIAGE_EMBEDDINGS=off)'}; "
          f"warm {result['warm_s']} s")
    for name, label in (("paste", "pasted log"), ("file", f"{args.file_mb} MB file")):
        r = result[name]
        print(f"{label:>14}: ack median {r['ack_ms']['median']} ms (p95 {r['ack_ms']['p95']}), "
              f"reply median {r['reply_ms']['median']} ms (p95 {r['reply_ms']['p95']}, max {r['reply_ms']['max']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
