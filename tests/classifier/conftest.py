"""The learned passes on the real corpus, trained once per session into a temporary data directory."""

import pytest

from servetriage import Settings
from servetriage.classifier import Engine
from servetriage.corpus import load_corpus


@pytest.fixture(scope="session")
def trained(tmp_path_factory):
    settings = Settings(data_dir=tmp_path_factory.mktemp("learned"), embeddings=True)
    corpus = load_corpus()
    engine = Engine(settings, corpus=corpus).warm()
    return settings, corpus, engine


@pytest.fixture(scope="session")
def rules_engine(tmp_path_factory):
    """The real corpus without the learned passes: rules, code paths, figures and the log's shape."""
    return Engine(Settings(data_dir=tmp_path_factory.mktemp("rules"), embeddings=False), corpus=load_corpus())
