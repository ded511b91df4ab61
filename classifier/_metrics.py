"""Reading a log's own numbers: throughput lines and benchmark tables that hold no error at all.

Some pastes carry no fault line, only figures: vLLM's periodic `Avg generation throughput` lines,
SGLang's `Decode batch … gen throughput (token/s)` lines, or a benchmark's result table. Whether that
is a performance complaint or a healthy result is in the figures, not in any wording a rule or an
embedding could match: a few tokens per second per running request is slow on any GPU, while a table
of ordinary benchmark numbers is a report, not an incident. This module reads the figures and says
which, with the lines it read. It is consulted only when no rule fired and no line reports a fault.

A server's figures are read at the end of the paste, where its latest state is: an idle server (no
request running or waiting) is healthy whatever its averages, a crawl needs requests in flight over
several intervals, and a hang is requests in flight with no token produced for several intervals. Two
figures say why a crawl or a stall happens: a KV pool that is full (requests wait for blocks) and a
speculative draft that is mostly rejected (the draft costs more than it saves).
"""

from __future__ import annotations

import dataclasses
import re
import statistics

PERFORMANCE = "performance"
UNKNOWN = "unknown"

ENGINE_HANG = "engine-hang"
SPECULATIVE = "speculative-decoding"
KV_EXHAUSTED = "kv-cache-exhausted"

SLOW_TOKENS_PER_REQUEST = 5.0   # decode tokens/s per running request: below this any GPU is crawling
EXCERPT_SHARE = 0.8             # a short paste that is all throughput lines was pasted for its throughput,
EXCERPT_LINES = 40              # ... while a whole log of a busy server is mostly throughput lines and healthy
MIN_METRIC_LINES = 3
LATEST = 5                      # the last figure lines read as the server's current state
MIN_STALLED = 3                 # intervals with requests in flight and no token at all: a hang
RELATIVE_DROP = 0.25            # the latest per-request decode rate below this share of the log's earlier one
SLOW_REQUESTS_PER_S = 0.2       # benchmark figures that only a broken or saturated setup produces
SLOW_MEAN_TTFT_MS = 60_000.0
SLOW_TPOT_MS = 250.0
FULL_KV = 0.95                  # the KV pool this full while requests crawl or stall: requests wait for blocks
LOW_ACCEPT_LENGTH = 2.0         # tokens per verify step, the bonus token included: 1.0 is a draft never accepted
LOW_ACCEPT_RATE = 0.5           # a draft whose tokens are mostly rejected costs more than it saves
WINDOW = 2 << 20                # a log over twice this size is read at its head only
MAX_EVIDENCE = 4

_VLLM = re.compile(r"(?:Avg prompt throughput: ([\d.]+) tokens/s, )?Avg generation throughput: ([\d.]+) tokens/s, "
                   r"Running: (\d+) reqs(?:, (?:Swapped: \d+ reqs, )?(?:Pending|Waiting): (\d+) reqs)?")
_ACCEPT_LENGTH = re.compile(r"[Aa]ccept(?:ance)? len(?:gth)?:\s*([\d.]+)")
_ACCEPT_RATE = re.compile(r"[Aa]ccept(?:ance)? rate:\s*([\d.]+)(%?)")
_KV_USAGE = re.compile(r"GPU KV cache usage: ([\d.]+)%|\btoken usage: ([\d.]+)")
_SGLANG = re.compile(r"Decode batch[.,] #running-req: (\d+),.*?gen throughput \(token/s\): ([\d.]+)(?:.*?#queue-req: (\d+))?")


@dataclasses.dataclass(frozen=True)
class _Figure:
    no: int
    text: str
    tokens_per_s: float   # generation
    running: int
    waiting: int
    prompt_per_s: float = 0.0
    kv_usage: float = -1.0  # share of the KV pool in use, when the line says
_BENCH = {
    "requests_per_s": re.compile(r"Request [Tt]hroughput \((?:req/s|req/sec)\):\s*([\d.]+)"),
    "mean_ttft_ms": re.compile(r"(?:Mean TTFT \(ms\)|Average time-to-first-token \[TTFT\] \(ms\)):\s*([\d.]+)"),
    "mean_tpot_ms": re.compile(r"(?:Mean TPOT \(ms\)|Median TPOT \(ms\)):\s*([\d.]+)"),
    "successful": re.compile(r"Successful requests:\s*(\d+)"),
    "output_tokens_per_s": re.compile(r"Output token throughput \(tok/s\):\s*([\d.]+)"),
    "concurrency": re.compile(r"^(?:Max request concurrency|Concurrency):\s*([\d.]+)"),
}


@dataclasses.dataclass(frozen=True)
class MetricsVerdict:
    """What the figures say: `performance` (slow), `engine-hang`, `kv-cache-exhausted`,
    `speculative-decoding` (slow for those reasons) or `unknown` (an ordinary report), and why."""

    category: str
    confidence: float
    reason: str
    lines: tuple[tuple[int, str], ...]  # (line number, text) of the figures read


def assess(text: str) -> MetricsVerdict | None:
    """A verdict when the log's figures decide it, else None (the figures say nothing either way)."""
    window = text if len(text) <= 2 * WINDOW else text[:WINDOW]
    lines = window.splitlines()
    server: list[_Figure] = []
    bench: dict[str, float] = {}
    bench_lines: list[tuple[int, str]] = []
    accept: list[tuple[int, str, float, float]] = []  # (line, text, accept length or 0, accept rate or -1)
    for no, line in enumerate(lines, 1):
        length, rate = _ACCEPT_LENGTH.search(line), _ACCEPT_RATE.search(line)
        if length or rate:
            accept.append((no, line, float(length.group(1)) if length else 0.0,
                           (float(rate.group(1)) / (100.0 if rate.group(2) else 1.0)) if rate else -1.0))
        m = _VLLM.search(line)
        if m:
            server.append(_Figure(no, line, float(m.group(2)), int(m.group(3)), int(m.group(4) or 0),
                                  float(m.group(1) or 0.0), _kv_usage(line)))
            continue
        m = _SGLANG.search(line)
        if m:
            server.append(_Figure(no, line, float(m.group(2)), int(m.group(1)), int(m.group(3) or 0),
                                  kv_usage=_kv_usage(line)))
            continue
        for key, pattern in _BENCH.items():
            m = pattern.search(line)
            if m and key not in bench:
                bench[key] = _number(m.group(1))
                bench_lines.append((no, line))
    nonempty = sum(1 for l in lines if l.strip())
    verdict = None
    if len(bench) >= 2 and (not server or bench_lines[0][0] > server[-1].no):
        verdict = _bench_verdict(bench, bench_lines)  # a benchmark's result printed after the server's own lines
    elif server:
        verdict = _kv_full(_server_verdict(server, nonempty), server)
    return _drafting(verdict, accept, nonempty) if accept else verdict


def _drafting(verdict: MetricsVerdict | None, accept: list[tuple[int, str, float, float]],
              nonempty: int) -> MetricsVerdict | None:
    """A throughput complaint whose figures show the draft model mostly rejected is speculative
    decoding not paying for itself: its settings or its draft, not the server, are what to look at.
    An idle or ordinary report stays one; a whole log needs the complaint from its other figures."""
    if verdict is not None and verdict.category != PERFORMANCE:
        return verdict
    if verdict is None and nonempty > EXCERPT_LINES:
        return None
    lengths = [a[2] for a in accept if a[2] > 0]
    rates = [a[3] for a in accept if a[3] >= 0]
    low = (bool(lengths) and statistics.median(lengths) < LOW_ACCEPT_LENGTH) or (
        not lengths and bool(rates) and statistics.median(rates) < LOW_ACCEPT_RATE)
    if not low:
        return verdict
    shown = (f"accept length {statistics.median(lengths):.2f}" if lengths
             else f"acceptance rate {statistics.median(rates):.2f}")
    return MetricsVerdict(SPECULATIVE, verdict.confidence if verdict else 0.55,
                          f"the draft is mostly rejected ({shown} per step)",
                          tuple((a[0], a[1]) for a in accept[-MAX_EVIDENCE:]))


def _kv_usage(line: str) -> float:
    m = _KV_USAGE.search(line)
    if m is None:
        return -1.0
    return float(m.group(1)) / 100.0 if m.group(1) else float(m.group(2))


def _kv_full(verdict: MetricsVerdict | None, server: list[_Figure]) -> MetricsVerdict | None:
    """A crawl or a stall while the KV pool is full is requests waiting for blocks (preempted,
    swapped, queued): the pool, not the GPU's speed, is what ran out."""
    if verdict is None or verdict.category not in (PERFORMANCE, ENGINE_HANG) or server[-1].kv_usage < FULL_KV:
        return verdict
    return MetricsVerdict(KV_EXHAUSTED, verdict.confidence,
                          f"{verdict.reason}, with the KV cache {server[-1].kv_usage:.0%} full",
                          tuple((f.no, f.text) for f in server[-MAX_EVIDENCE:]))


def _number(value: str) -> float:
    try:
        return float(value)
    except ValueError:
        return 0.0


def _server_verdict(server: list[_Figure], nonempty: int) -> MetricsVerdict | None:
    latest = server[-LATEST:]
    last = latest[-1]
    if last.running == 0 and last.waiting == 0:
        return MetricsVerdict(UNKNOWN, 0.8, "an idle server: no request running or waiting",
                              ((last.no, last.text),))
    busy: list[_Figure] = []
    for f in reversed(latest):  # the trailing intervals with work in flight
        if f.running == 0:
            break
        busy.insert(0, f)
    stalled = [f for f in busy if f.tokens_per_s == 0 and f.prompt_per_s == 0]
    if len(stalled) >= MIN_STALLED and len(stalled) == len(busy):
        return MetricsVerdict(ENGINE_HANG, 0.7, f"{len(stalled)} intervals with requests in flight and no token produced",
                              tuple((f.no, f.text) for f in stalled[-MAX_EVIDENCE:]))
    moving = [f for f in busy if f.tokens_per_s > 0]
    earlier = [f for f in server[:-LATEST] if f.running > 0 and f.tokens_per_s > 0]
    if len(moving) >= MIN_METRIC_LINES and len(earlier) >= MIN_METRIC_LINES:
        now = statistics.median(f.tokens_per_s / f.running for f in moving)
        before = statistics.median(f.tokens_per_s / f.running for f in earlier)
        if now < RELATIVE_DROP * before:
            return MetricsVerdict(PERFORMANCE, 0.8, f"decode fell from {before:.1f} to {now:.1f} tokens/s per running "
                                  "request in the same log", tuple((f.no, f.text) for f in moving[-MAX_EVIDENCE:]))
    if moving:
        per_request = statistics.median(f.tokens_per_s / f.running for f in moving)
        if per_request < SLOW_TOKENS_PER_REQUEST:
            slow = tuple((f.no, f.text) for f in moving if f.tokens_per_s / f.running < SLOW_TOKENS_PER_REQUEST)
            return MetricsVerdict(PERFORMANCE, 0.85 if len(moving) >= MIN_METRIC_LINES else 0.6,
                                  f"decode runs at {per_request:.1f} tokens/s per running request", slow[-MAX_EVIDENCE:])
    if len(server) >= MIN_METRIC_LINES and nonempty <= EXCERPT_LINES and len(server) >= EXCERPT_SHARE * nonempty:
        evidence = tuple((f.no, f.text) for f in server[:MAX_EVIDENCE])
        return MetricsVerdict(PERFORMANCE, 0.55, "the paste is throughput lines and nothing else", evidence)
    return None


def _bench_verdict(bench: dict[str, float], lines: list[tuple[int, str]]) -> MetricsVerdict:
    slow = []
    # Few requests a second are slow only when each request also decodes slowly: one client at a time
    # asking for a thousand tokens finishes a request every ten seconds on a healthy server. Without a
    # printed concurrency (a request rate of inf sends them all at once) nothing says how many shared it.
    concurrency = bench.get("concurrency", 0.0)
    decodes_well = concurrency > 0 and bench.get("output_tokens_per_s", 0.0) / concurrency >= SLOW_TOKENS_PER_REQUEST
    if 0 < bench.get("requests_per_s", 1.0) < SLOW_REQUESTS_PER_S and not decodes_well:
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
