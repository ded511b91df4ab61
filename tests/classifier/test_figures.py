"""A log with no fault line is judged by its own figures: slow is `performance`, an ordinary report is `unknown`."""

import pytest

from servetriage.classifier import Engine
from servetriage.corpus import load_corpus

VLLM = ("INFO 07-01 12:00:{s:02d} metrics.py:351] Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: "
        "{tps} tokens/s, Running: {running} reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 1.2%, "
        "CPU KV cache usage: 0.0%.\n")
SGLANG = ("[2025-03-01 09:00:{s:02d} TP0] Decode batch. #running-req: 4, #token: 20480, token usage: 0.10, "
          "gen throughput (token/s): {tps}, #queue-req: 0\n")
BENCH = """============ Serving Benchmark Result ============
Successful requests:                     500
Benchmark duration (s):                  {duration}
Request throughput (req/s):              {rps}
Output token throughput (tok/s):         4100.52
Mean TTFT (ms):                          {ttft}
Median TTFT (ms):                        180.11
==================================================
"""


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    from servetriage import Settings
    return Engine(Settings(data_dir=tmp_path_factory.mktemp("d"), embeddings=False), corpus=load_corpus())


def test_a_crawling_decode_is_performance_with_the_figures_as_evidence(engine):
    log = "".join(VLLM.format(s=s, tps=1.6, running=2) for s in (5, 10, 15))
    d = engine.diagnose_text(log)
    assert d.category == "performance" and d.confidence >= 0.8
    assert d.initiating.line == 1 and all("generation throughput" in e.text for e in d.evidence)
    assert d.passes.figures == {"performance": 0.85}


def test_a_paste_of_nothing_but_throughput_lines_is_a_performance_question(engine):
    log = "".join(SGLANG.format(s=s, tps=170.0 - s) for s in range(1, 6))
    assert engine.diagnose_text(log).category == "performance"
    one_line_in_a_startup = "INFO starting\nINFO loading weights\nINFO ready\n" + SGLANG.format(s=1, tps=170.0)
    assert engine.diagnose_text(one_line_in_a_startup).category == "unknown"


def test_benchmark_tables_are_read_by_their_numbers(engine):
    healthy = engine.diagnose_text(BENCH.format(duration=40.2, rps=12.44, ttft=210.5))
    assert healthy.category == "unknown" and healthy.passes.figures == {"unknown": 0.8}
    assert healthy.evidence and "Request throughput" in " ".join(e.text for e in healthy.evidence)
    slow = engine.diagnose_text(BENCH.format(duration=9000.1, rps=0.05, ttft=95000.0))
    assert slow.category == "performance"


def test_few_requests_a_second_from_one_client_decoding_well_are_a_report(engine):
    one_client = "Max request concurrency:                 1\n" + BENCH.format(duration=43.4, rps=0.12, ttft=242.8)
    assert engine.diagnose_text(one_client).category == "unknown"  # 4,100 tokens/s for the one request in flight
    crawling = one_client.replace("4100.52", "3.10")
    assert engine.diagnose_text(crawling).category == "performance"
    unknown_concurrency = BENCH.format(duration=9000.1, rps=0.05, ttft=210.5)  # all sent at once, as far as we know
    assert engine.diagnose_text(unknown_concurrency).category == "performance"


def test_figures_are_not_consulted_when_something_failed(engine):
    log = "".join(VLLM.format(s=s, tps=1.6, running=2) for s in (5, 10)) + \
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    d = engine.diagnose_text(log)
    assert d.category == "gpu-oom" and d.passes.figures is None


def test_a_throughput_complaint_with_a_mostly_rejected_draft_is_speculative_decoding(engine):
    spec = ("[2025-03-01 09:00:{s:02d} TP0] Decode batch. #running-req: 1, #token: 900, token usage: 0.01, "
            "accept len: {accept}, cuda graph: True, gen throughput (token/s): 120.00, #queue-req: 0\n")
    rejected = engine.diagnose_text("".join(spec.format(s=s, accept=1.3) for s in range(1, 6)))
    assert rejected.category == "speculative-decoding" and "accept len" in rejected.evidence[0].text
    accepted = engine.diagnose_text("".join(spec.format(s=s, accept=3.4) for s in range(1, 6)))
    assert accepted.category == "performance"  # the draft pays; the throughput is the question
    bench = "Average Latency: 90.1 s\nAverage Output throughput: 42.0 token/s\nAverage Accept length: 1.04\n"
    assert engine.diagnose_text(bench).category == "speculative-decoding"


def test_a_crawl_with_the_kv_cache_full_is_the_pool_running_out(engine):
    filling = "".join(VLLM.format(s=s, tps=1.6, running=2).replace("GPU KV cache usage: 1.2%", f"GPU KV cache usage: {u}%")
                      for s, u in ((5, 90.5), (10, 96.0), (15, 99.4)))
    d = engine.diagnose_text(filling)
    assert d.category == "kv-cache-exhausted" and d.passes.figures == {"kv-cache-exhausted": 0.85}
    roomy = "".join(VLLM.format(s=s, tps=1.6, running=2) for s in (5, 10, 15))
    assert engine.diagnose_text(roomy).category == "performance"

