"""Shared fixtures: settings on a temporary data directory, and a small corpus written as YAML."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml

from servetriage import Settings
from servetriage.corpus import Corpus, load_categories, parse_incidents

SHARED = Path(__file__).resolve().parents[2] / "shared"

MINI_CORPUS = textwrap.dedent("""
incidents:
  - id: t-oom
    category: gpu-oom
    engines: [vllm]
    title: CUDA OOM in the forward pass
    symptom: An allocation fails.
    cause: Activations do not fit.
    first_action: Lower the batch.
    fix_or_status: Configuration.
    class: Capacity
    signatures: ["torch.OutOfMemoryError: CUDA out of memory"]
    examples: ["torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"]
    sources: [seed:000]
  - id: t-dead
    category: worker-dead
    engines: [vllm]
    title: Engine core died
    symptom: The API server reports a dead engine.
    cause: An earlier fault killed the engine.
    first_action: Read the engine log above.
    fix_or_status: Symptom.
    class: Environment / runtime
    signatures: ["EngineDeadError"]
    examples: ["vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue."]
    sources: [seed:000]
  - id: t-nccl-generic
    category: distributed-comm
    engines: [any]
    title: NCCL failure
    symptom: A collective fails.
    cause: Ranks cannot talk.
    first_action: NCCL_DEBUG=INFO.
    fix_or_status: Depends.
    class: Environment / runtime
    signatures: ["NCCL error in:"]
    examples: ["RuntimeError: NCCL error in: ../nccl.cpp:1, unhandled system error"]
    sources: [seed:000]
  - id: t-ima
    category: illegal-memory-access
    engines: [any]
    title: Illegal memory access
    symptom: A kernel faults.
    cause: Out-of-bounds access.
    first_action: CUDA_LAUNCH_BLOCKING=1.
    fix_or_status: Depends.
    class: Application bug
    section: "4.2"
    signatures: ["CUDA error: an illegal memory access was encountered", {regex: 'cudaErrorIllegalAddress \\(\\d+\\)'}]
    examples: ["RuntimeError: CUDA error: an illegal memory access was encountered", "failed: cudaErrorIllegalAddress (700)"]
    sources: [https://example.org/issues/1]
""")


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path / "data", embeddings=False)


@pytest.fixture(scope="session")
def mini_corpus() -> Corpus:
    cats = load_categories()
    return Corpus(cats, tuple(parse_incidents(yaml.safe_load(MINI_CORPUS), cats, "mini.yaml")))


@pytest.fixture(scope="session")
def postgres(tmp_path_factory: pytest.TempPathFactory):
    """A real PostgreSQL server for the session (see tests/postgres.py); `.new_database()` per test."""
    from postgres import start_or_skip

    server = start_or_skip(tmp_path_factory.mktemp("pg"))
    yield server
    server.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where a store test keeps its data: a SQLite file, or a fresh database on the test server."""
    if request.param == "sqlite":
        return str(tmp_path / "fb.sqlite")
    return request.getfixturevalue("postgres").new_database()


# Fixtures that train a model (the session's first use trains it; every user depends on it).
TRAINING_FIXTURES = frozenset({"trained", "fb_settings"})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test that uses a trained model is `slow` wherever it lives (`make test-fast` skips it)."""
    for item in items:
        if TRAINING_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
