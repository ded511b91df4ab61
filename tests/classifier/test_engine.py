import json

from servetriage.classifier import Diagnosis, Engine

OOM_THEN_DEAD = """\
INFO 03-04 10:11:12 [api_server.py:10] vLLM API server version 0.8.5
(VllmWorker rank=1 pid=3) ERROR 03-04 10:11:13 [x.py:1] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1 GiB hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345
ERROR 03-04 10:11:14 [async_llm.py:1] vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue.
"""  # noqa: E501 - log lines as the engine prints them


def test_fault_then_symptom(settings, mini_corpus):
    d = Engine(settings, corpus=mini_corpus).diagnose_text(OOM_THEN_DEAD, "paste")
    assert d.category == "gpu-oom" and d.incident.id == "t-oom"
    assert d.initiating.line == 2 and d.initiating.rank == "rank 1" and d.initiating.timestamp == "03-04 10:11:13"
    assert [(s.category, s.line) for s in d.symptoms] == [("worker-dead", 3)]
    assert d.engine == "vllm" and d.versions["vllm"] == "0.8.5"
    assert 0.5 < d.confidence <= 1.0
    assert d.top[0].category == "gpu-oom"


def test_secrets_never_reach_the_diagnosis(settings, mini_corpus):
    d = Engine(settings, corpus=mini_corpus).diagnose_text(OOM_THEN_DEAD)
    dumped = d.to_json()
    assert "hf_AbCdEf" not in dumped and "[REDACTED]" in dumped


def test_empty_and_irrelevant_input_are_unknown(settings, mini_corpus):
    engine = Engine(settings, corpus=mini_corpus)
    assert engine.diagnose_text("").category == "unknown"
    d = engine.diagnose_text("GET /index.html 200\nall good\n")
    assert d.category == "unknown" and d.incident is None and d.confidence < engine.threshold


def test_manual_link_is_the_incidents_own_anchor(settings, mini_corpus):
    engine = Engine(settings, corpus=mini_corpus)
    ima = engine.diagnose_text("RuntimeError: CUDA error: an illegal memory access was encountered")
    assert ima.incident.section == "4.2"
    assert ima.incident.link == settings.manual_base_url + "illegal-memory-access.html#incident-t-ima"
    oom = engine.diagnose_text("torch.OutOfMemoryError: CUDA out of memory")  # no section, seed-only source
    assert oom.incident.link == settings.manual_base_url + "gpu-oom.html#incident-t-oom"
    assert settings.manual_base_url == "http://127.0.0.1:3000/manual/"  # the bot's own /manual/ by default


def test_json_round_trip(settings, mini_corpus):
    d = Engine(settings, corpus=mini_corpus).diagnose_text(OOM_THEN_DEAD, "x.log")
    again = Diagnosis.from_dict(json.loads(d.to_json()))
    assert again.category == d.category and again.initiating == d.initiating and again.symptoms == d.symptoms
