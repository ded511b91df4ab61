"""Reading a log's own numbers: throughput lines and benchmark tables that hold no error at all.

Some pastes carry no fault line, only figures: vLLM's periodic `Avg generation throughput` lines,
SGLang's `Decode batch … gen throughput (token/s)` lines, or a benchmark's result table. Whether that
is a performance complaint or a healthy result is in the figures, not in any wording a rule or an
embedding could match: a few tokens per second per running request is slow on any GPU, while a table
of ordinary benchmark numbers is a report, not an incident. This module reads the figures and says
which, with the lines it read. It is consulted only when no rule fired and no line reports a fault.
"""

from __future__ import annotations

import dataclasses
import re
import statistics

PERFORMANCE = "performance"
UNKNOWN = "unknown"

SLOW_TOKENS_PER_REQUEST = 5.0   # decode tokens/s per running request: below this any GPU is crawling
METRICS_SHARE = 0.5             # a paste that is mostly throughput lines was pasted for its throughput
MIN_METRIC_LINES = 3
SLOW_REQUESTS_PER_S = 0.2       # benchmark figures that only a broken or saturated setup produces
SLOW_MEAN_TTFT_MS = 60_000.0
SLOW_TPOT_MS = 250.0
WINDOW = 2 << 20                # a log over twice this size is read at its head only
MAX_EVIDENCE = 4

_VLLM = re.compile(r"Avg generation throughput: ([\d.]+) tokens/s, Running: (\d+) reqs")
_SGLANG = re.compile(r"Decode batch[.,] #running-req: (\d+),.*?gen throughput \(token/s\): ([\d.]+)")
_BENCH = {
    "requests_per_s": re.compile(r"Request [Tt]hroughput \((?:req/s|req/sec)\):\s*([\d.]+)"),
    "mean_ttft_ms": re.compile(r"(?:Mean TTFT \(ms\)|Average time-to-first-token \[TTFT\] \(ms\)):\s*([\d.]+)"),
    "mean_tpot_ms": re.compile(r"(?:Mean TPOT \(ms\)|Median TPOT \(ms\)):\s*([\d.]+)"),
    "successful": re.compile(r"Successful requests:\s*(\d+)"),
    "output_tokens_per_s": re.compile(r"Output token throughput \(tok/s\):\s*([\d.]+)"),
}


@dataclasses.dataclass(frozen=True)
class MetricsVerdict:
    """What the figures say: `performance` (slow) or `unknown` (an ordinary report), and why."""

    category: str
    confidence: float
    reason: str
    lines: tuple[tuple[int, str], ...]  # (line number, text) of the figures read


def assess(text: str) -> MetricsVerdict | None:
    """A verdict when the log's figures decide it, else None (the figures say nothing either way)."""
    window = text if len(text) <= 2 * WINDOW else text[:WINDOW]
    lines = window.splitlines()
    server: list[tuple[int, str, float, int]] = []  # (line no, text, tokens/s, running requests)
    bench: dict[str, float] = {}
    bench_lines: list[tuple[int, str]] = []
    for no, line in enumerate(lines, 1):
        m = _VLLM.search(line)
        if m:
            server.append((no, line, float(m.group(1)), int(m.group(2))))
            continue
        m = _SGLANG.search(line)
        if m:
            server.append((no, line, float(m.group(2)), int(m.group(1))))
            continue
        for key, pattern in _BENCH.items():
            m = pattern.search(line)
            if m and key not in bench:
                bench[key] = _number(m.group(1))
                bench_lines.append((no, line))
    if server:
        return _server_verdict(server, sum(1 for l in lines if l.strip()))
    if len(bench) >= 2:
        return _bench_verdict(bench, bench_lines)
    return None


def _number(value: str) -> float:
    try:
        return float(value)
    except ValueError:
        return 0.0


def _server_verdict(server: list[tuple[int, str, float, int]], nonempty: int) -> MetricsVerdict | None:
    busy = [(no, line, tps / running) for no, line, tps, running in server if running > 0 and tps > 0]
    evidence = tuple((no, line) for no, line, *_ in server[:MAX_EVIDENCE])
    if busy:
        per_request = statistics.median(r for _, _, r in busy)
        if per_request < SLOW_TOKENS_PER_REQUEST:
            slow = tuple((no, line) for no, line, r in busy if r < SLOW_TOKENS_PER_REQUEST)[:MAX_EVIDENCE]
            return MetricsVerdict(PERFORMANCE, 0.85,
                                  f"decode runs at {per_request:.1f} tokens/s per running request", slow)
    if len(server) >= MIN_METRIC_LINES and len(server) >= METRICS_SHARE * nonempty:
        return MetricsVerdict(PERFORMANCE, 0.55, "the paste is throughput lines and nothing else", evidence)
    return None


def _bench_verdict(bench: dict[str, float], lines: list[tuple[int, str]]) -> MetricsVerdict:
    slow = []
    if 0 < bench.get("requests_per_s", 1.0) < SLOW_REQUESTS_PER_S:
        slow.append(f"{bench['requests_per_s']} requests/s")
    if bench.get("mean_ttft_ms", 0.0) > SLOW_MEAN_TTFT_MS:
        slow.append(f"mean TTFT {bench['mean_ttft_ms'] / 1000:.0f} s")
    if bench.get("mean_tpot_ms", 0.0) > SLOW_TPOT_MS:
        slow.append(f"{bench['mean_tpot_ms']:.0f} ms per output token")
    evidence = tuple(lines[:MAX_EVIDENCE])
    if slow:
        return MetricsVerdict(PERFORMANCE, 0.8, "benchmark figures far below any healthy setup: " + ", ".join(slow),
                              evidence)
    return MetricsVerdict(UNKNOWN, 0.8, "an ordinary benchmark result, no failure in it", evidence)
