"""Loading the learned passes (retrieval and classifier); filled in by the retrieval work."""

from __future__ import annotations

from servetriage._settings import Settings
from servetriage.corpus import Corpus


def load_learned_passes(settings: Settings, corpus: Corpus):
    return (), None
