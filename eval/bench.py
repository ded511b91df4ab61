"""Speed of servetriage on this machine: run `python eval/bench.py [--quick]`; prints a JSON report.

Measures warm latency on a 200-line and a 5,000-line paste (p50, p99: serving traffic, then the crash
that ended the run), whole-file diagnosis of 10 MB and 100 MB logs (a crash, then a restart that served on),
the same 100 MB scanned by `grep -F -f` over every literal signature (for comparison), cold start
(process start to first diagnosis), peak memory (of this process, and of `servetriage diagnose` alone on
each 100 MB file), and `servetriage train` time. Figures go in the notes, never into unit tests.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

NOISE = [
    "INFO 11-28 09:{m:02d}:{s:02d} [loggers.py:116] Engine 000: Avg prompt throughput: {a}.4 tokens/s, "
    "Avg generation throughput: {b}.1 tokens/s, Running: {r} reqs, Waiting: 0 reqs, GPU KV cache usage: {u}.2%",
    "[2025-11-28 09:{m:02d}:{s:02d} TP0] Decode batch. #running-req: {r}, #token: {a}, token usage: 0.{u}, "
    "gen throughput (token/s): {b}.22, #queue-req: 0",
    "INFO:     10.0.{r}.17:51234 - \"POST /v1/chat/completions HTTP/1.1\" 200 OK",
    "[2025-11-28 09:{m:02d}:{s:02d} TP1] Prefill batch. #new-seq: 1, #new-token: {a}, #cached-token: {b}, token usage: 0.{u}, "
    "#running-req: {r}",
]
FAULT = [
    "(VllmWorker rank=1 pid=2291) ERROR 11-28 09:59:09 [multiproc_executor.py:527] Traceback (most recent call last):",
    "(VllmWorker rank=1 pid=2291) ERROR 11-28 09:59:09 [multiproc_executor.py:527]   "
    "File \"/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_model_runner.py\", line 1329, in execute_model",
    "(VllmWorker rank=1 pid=2291) ERROR 11-28 09:59:09 [multiproc_executor.py:527] torch.OutOfMemoryError: CUDA out of memory. "
    "Tried to allocate 4.64 GiB. GPU 1 has a total capacity of 79.19 GiB of which 3.12 GiB is free.",
    "ERROR 11-28 09:59:14 [async_llm.py:420] vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. "
    "See stack trace (above) for the root cause.",
]


RESTART = "INFO 11-28 10:02:41 [api_server.py:1289] vLLM API server version 0.9.1"


def noise(lines: int, seed: int = 0) -> list[str]:
    rnd = random.Random(seed)
    return [rnd.choice(NOISE).format(m=rnd.randrange(60), s=rnd.randrange(60), a=rnd.randrange(99999),
                                     b=rnd.randrange(9999), r=1 + rnd.randrange(255), u=rnd.randrange(99))
            for _ in range(max(0, lines))]


def synthetic_log(lines: int, seed: int = 0) -> str:
    """A whole-log paste: serving traffic, then the crash that ended the run."""
    return "\n".join(noise(lines - len(FAULT), seed) + FAULT) + "\n"


def log_of_size(path: Path, megabytes: int) -> None:
    """Serving traffic, the crash 80% of the way in, a restart, and the restarted server's traffic."""
    block = "\n".join(noise(5000, seed=1)) + "\n"
    target = megabytes * 1024 * 1024
    with open(path, "w") as fh:
        written = 0
        while written < target * 0.8:
            fh.write(block)
            written += len(block)
        tail = "\n".join(FAULT + [RESTART]) + "\n"
        fh.write(tail)
        written += len(tail)
        while written < target:
            fh.write(block)
            written += len(block)


def restarting_log(path: Path, megabytes: int) -> None:
    """A supervisor's log of a server restarted again and again, with non-ASCII progress bars (the
    weight-loading bar's blocks): the shapes that once made reading a log quadratic in its length."""
    bar = "Loading safetensors checkpoint shards: 100% Completed | " + "\u2588" * 5 + " | 4/4 [00:03<00:00,  1.21it/s]"
    notice = ("WARNING 11-28 10:02:42 [config.py:1388] Possibly too large swap space. 4.00 GiB out of the "
              "15.49 GiB total CPU memory is allocated for the swap space.")
    block = "\n".join([RESTART, bar, notice, *noise(40, seed=2)]) + "\n"
    target = megabytes * 1024 * 1024
    with open(path, "w", encoding="utf-8") as fh:
        written = 0
        while written < target:
            fh.write(block)
            written += len(block.encode("utf-8"))
        fh.write("\n".join(FAULT) + "\n")


def percentile(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer repetitions, no 100 MB file, no train timing")
    ap.add_argument("--repeat", type=int, default=200)
    args = ap.parse_args()
    exe = shutil.which("servetriage") or str(Path(sys.executable).with_name("servetriage"))
    report: dict[str, object] = {"python": sys.version.split()[0], "cpus": os.cpu_count()}

    from servetriage import Engine, Settings  # noqa: PLC0415
    from servetriage.classifier import read_path  # noqa: PLC0415
    from servetriage.corpus import load_corpus  # noqa: PLC0415

    settings = Settings.from_env()
    with tempfile.TemporaryDirectory() as tmp:
        tmpdir = Path(tmp)
        engine = Engine(settings)
        t = time.perf_counter()
        engine.warm()
        report["warm_up_s"] = round(time.perf_counter() - t, 2)

        for size in (200, 5000):
            pastes = [synthetic_log(size, seed=i) for i in range(20)]
            lat = []
            for i in range(args.repeat if not args.quick else 40):
                t = time.perf_counter()
                d = engine.diagnose_text(pastes[i % len(pastes)])
                lat.append((time.perf_counter() - t) * 1000)
            assert d.category == "gpu-oom", d.category
            report[f"paste_{size}_lines_ms"] = {"p50": round(statistics.median(lat), 1),
                                                "p99": round(percentile(lat, 99), 1), "n": len(lat)}
        pastes = [synthetic_log(200, seed=i) for i in range(20)]

        sizes = (10,) if args.quick else (10, 100)
        for mb in sizes:
            path = tmpdir / f"{mb}mb.log"
            log_of_size(path, mb)
            t = time.perf_counter()
            log = read_path(path, settings.max_input_bytes)
            d = engine.diagnose(log)
            total = time.perf_counter() - t
            report[f"file_{mb}mb_s"] = round(total, 2)
            report[f"file_{mb}mb_category"] = d.category
            path = tmpdir / f"{mb}mb-restarts.log"
            restarting_log(path, mb)
            t = time.perf_counter()
            d = engine.diagnose(read_path(path, settings.max_input_bytes))
            report[f"file_{mb}mb_restarting_s"] = round(time.perf_counter() - t, 2)
            report[f"file_{mb}mb_restarting_category"] = d.category
            if mb == sizes[-1]:  # what `servetriage diagnose` itself holds at its peak, start-up included
                report[f"diagnose_{mb}mb_peak_mb"] = _peak_mb([exe, "diagnose", str(tmpdir / f"{mb}mb.log")])
                report[f"diagnose_{mb}mb_restarting_peak_mb"] = _peak_mb([exe, "diagnose", str(path)])
        big = tmpdir / f"{sizes[-1]}mb.log"
        literals = tmpdir / "signatures.txt"
        corpus = load_corpus(settings.extra_corpus_dirs)
        literals.write_text("\n".join(s.pattern for i in corpus.incidents for s in i.signatures if not s.regex) + "\n")
        t = time.perf_counter()
        subprocess.run(["grep", "-F", "-n", "-f", str(literals), str(big)], stdout=subprocess.DEVNULL, check=False)
        grep_s = round(time.perf_counter() - t, 2)
        report[f"grep_F_f_{sizes[-1]}mb_s"] = grep_s
        report["grep_ratio"] = round(round(total, 2) / max(grep_s, 1e-3), 2)  # total: the largest file's

        paste = tmpdir / "paste.log"
        paste.write_text(pastes[0])
        colds = []
        for _ in range(2 if args.quick else 3):
            t = time.perf_counter()
            subprocess.run([exe, "diagnose", "--json", str(paste)], check=True, capture_output=True)
            colds.append(time.perf_counter() - t)
        report["cold_start_s"] = round(min(colds), 2)
        report["cold_start_rules_only_s"] = round(_timed([exe, "diagnose", "--rules-only", "--json", str(paste)]), 2)

        report["peak_rss_mb_this_process"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
        if not args.quick:
            env = {**os.environ, "SERVETRIAGE_DATA_DIR": str(tmpdir / "train")}
            t = time.perf_counter()
            subprocess.run([exe, "train", "--json"], check=True, capture_output=True, env=env)
            report["train_s"] = round(time.perf_counter() - t, 2)
    print(json.dumps(report, indent=2))


def _peak_mb(cmd: list[str]) -> float:
    """Peak resident memory of `cmd` alone: measured by a parent of its own, whose only child it is."""
    probe = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True, capture_output=True); "
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    out = subprocess.run([sys.executable, "-c", probe, *cmd], check=True, capture_output=True, text=True).stdout
    return round(int(out.split()[-1]) / 1024, 1)


def _timed(cmd: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    return time.perf_counter() - t


if __name__ == "__main__":
    main()
