"""Fixtures for the feedback tests: a small corpus, one model trained on it per session (the real
embedder, classifier, index and calibrator), and per-test copies of its data directory."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from typing import Any
from collections.abc import Iterator

import pytest
import yaml

from fbhelpers import FB_CORPUS

from servetriage import Settings
from servetriage.corpus import Corpus, load_categories, parse_incidents


@pytest.fixture(scope="session")
def fb_corpus() -> Corpus:
    cats = load_categories()
    return Corpus(cats, tuple(parse_incidents(yaml.safe_load(FB_CORPUS), cats, "fb_test.yaml")))


@dataclasses.dataclass(frozen=True)
class Trained:
    settings: Settings
    corpus: Corpus
    version: str


@pytest.fixture(scope="session")
def trained(tmp_path_factory: pytest.TempPathFactory, fb_corpus: Corpus) -> Trained:
    """One full train per session (embedder, classifier, index, calibrator) on the small corpus."""
    from servetriage.classifier import ArtefactStore, embedder_for, train

    settings = Settings(data_dir=tmp_path_factory.mktemp("fb-trained") / "data", threads=2)
    store = ArtefactStore(settings.model_dir)
    model = train(fb_corpus, embedder_for(settings), store)
    store.activate(model.meta.version)
    return Trained(settings, fb_corpus, model.meta.version)


@pytest.fixture
def fb_settings(tmp_path: Path, trained: Trained) -> Settings:
    """A fresh data directory holding a copy of the session's model (tests may retrain and promote)."""
    settings = dataclasses.replace(trained.settings, data_dir=tmp_path / "data")
    shutil.copytree(trained.settings.model_dir, settings.model_dir)
    return settings


@pytest.fixture
def plain_settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path / "data", embeddings=False)


@pytest.fixture
def store(database_url: str) -> Iterator[Any]:
    """A fresh feedback store, once on SQLite and once on PostgreSQL (the same tests on both)."""
    from servetriage.feedback import FeedbackStore
    from servetriage.storage import connect

    s = FeedbackStore(connect(database_url))
    yield s
    s.close()


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[Any]:
    """A store on SQLite only, for what only SQLite has (WAL, the file, the online backup)."""
    from servetriage.feedback import FeedbackStore

    s = FeedbackStore(tmp_path / "fb.sqlite")
    yield s
    s.close()
