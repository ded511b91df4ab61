"""`for_bot(settings)`: everything `servetriage serve` needs from the feedback loop, built in order.

The store comes first, then the model handle reading the store's training set and incidents, then
the retrainer, then the service whose changes wake the retrainer: each part is handed what it uses
when it is made, and nothing is wired in afterwards.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ._handle import ModelHandle
from ._replies import Replies
from ._retrain import DEBOUNCE_S, Retrainer, RetrainResult
from ._service import StoreFeedback
from ._store import FeedbackStore

if TYPE_CHECKING:
    from servetriage._settings import Settings
    from servetriage.corpus import Corpus

log = logging.getLogger(__name__)

RETRAIN_OUTCOME = {"active": "promoted", "rejected": "rejected", "skipped": "skipped"}


@dataclasses.dataclass
class BotParts:
    """Pass `diagnoser`, `recorder` and `feedback` to `bot.build_app`; `start()` once serving; `close()` at exit."""

    store: FeedbackStore
    handle: ModelHandle
    retrainer: Retrainer
    feedback: StoreFeedback

    @property
    def diagnoser(self) -> ModelHandle:
        return self.handle

    @property
    def recorder(self) -> Replies:
        return self.store.replies

    def start(self) -> BotParts:
        if self.handle.learning:
            self.retrainer.start()
        return self

    def close(self) -> None:
        self.retrainer.stop()
        self.store.close()


def for_bot(settings: Settings, *, corpus: Corpus | None = None, debounce_s: float = DEBOUNCE_S,
            on_retrain: Callable[[str], None] | None = None, **store_kw: Any) -> BotParts:
    """`on_retrain(result)` hears each retrain's outcome: promoted, rejected or skipped (the bot's metrics)."""
    if corpus is None:
        from servetriage.corpus import load_corpus  # noqa: PLC0415
        corpus = load_corpus(settings.extra_corpus_dirs)
    store = FeedbackStore.open(settings, categories=corpus.categories, incidents=[i.id for i in corpus.incidents],
                               **store_kw)
    handle = ModelHandle(settings, corpus, training=store.training, incidents=store.incidents)
    def heard(result: RetrainResult) -> None:
        if on_retrain is not None:
            on_retrain(RETRAIN_OUTCOME.get(result.state, result.state))

    retrainer = Retrainer(settings, store, handle, debounce_s=debounce_s, on_result=heard)
    feedback = StoreFeedback(store, corpus, on_change=retrainer.notify)
    return BotParts(store, handle, retrainer, feedback)
