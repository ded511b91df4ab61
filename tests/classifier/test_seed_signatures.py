"""Done-when of the foundation: each seed page's signature, pasted alone, names its category and incident;
an OOM followed by a dead-worker timeout names the OOM and lists the timeout as a symptom."""

import pytest

from servetriage.classifier import Engine
from servetriage.corpus import load_corpus

CORPUS = load_corpus()
PAGE_SIGNATURES = [(inc, sig.pattern) for inc in CORPUS.incidents if inc.origin == "seed_pages.yaml"
                   for sig in inc.signatures if not sig.regex]


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    from servetriage import Settings
    return Engine(Settings(data_dir=tmp_path_factory.mktemp("d"), embeddings=False), corpus=CORPUS)


def test_the_seed_pages_give_signatures():
    assert len(PAGE_SIGNATURES) >= 7


@pytest.mark.parametrize("incident,signature", PAGE_SIGNATURES, ids=[s[:40] for _, s in PAGE_SIGNATURES])
def test_seed_page_signature_alone(engine, incident, signature):
    d = engine.diagnose_text(signature)
    assert d.category == incident.category
    sharing = {i.id for i in CORPUS.incidents if any(s.pattern == signature for s in i.signatures)}
    assert d.incident.id in sharing


def test_oom_then_worker_timeout(engine):
    log = (
        "[2025-07-01 11:02:03 TP0] Prefill batch. #new-seq: 4, #new-token: 32768, #cached-token: 0, token usage: 0.41\n"
        "[2025-07-01 11:02:04 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2310, in run_scheduler_process\n'
        "    scheduler.event_loop_overlap()\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.50 GiB. GPU 0 has a total capacity of 79.10 GiB\n"
        "[2025-07-01 11:02:34] TimeoutError: API server failed to receive response from worker\n"
    )
    d = engine.diagnose_text(log)
    assert d.category == "gpu-oom"
    assert d.initiating.line == 5
    assert "worker-dead" in [s.category for s in d.symptoms]
    assert any(s.line == 6 for s in d.symptoms)
