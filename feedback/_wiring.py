"""`for_bot(settings)`: everything `servetriage serve` needs from the feedback loop, in one object."""

from __future__ import annotations

import dataclasses
import logging
from typing import TYPE_CHECKING, Any, Callable

from ._handle import ModelHandle
from ._retrain import Retrainer
from ._store import FeedbackStore

if TYPE_CHECKING:
    from servetriage._settings import Settings

log = logging.getLogger(__name__)


@dataclasses.dataclass
class BotParts:
    """Pass `diagnoser`, `recorder` and `extensions` to `bot.build_app`; `start()` once serving; `close()` at exit."""

    store: FeedbackStore
    handle: ModelHandle
    retrainer: Retrainer
    extensions: tuple[Callable[[Any], None], ...]

    @property
    def diagnoser(self) -> ModelHandle:
        return self.handle

    @property
    def recorder(self) -> FeedbackStore:
        return self.store

    def start(self) -> "BotParts":
        if self.handle.learning:
            self.retrainer.start()
        return self

    def close(self) -> None:
        self.retrainer.stop()
        self.store.close()


def for_bot(settings: "Settings", *, corpus=None, debounce_s: float = 5.0, **store_kw: Any) -> BotParts:
    from ._slack import feedback_extension  # noqa: PLC0415

    handle = ModelHandle(settings, corpus)
    store = FeedbackStore.open(settings, categories=handle.corpus.categories,
                               incidents=[i.id for i in handle.corpus.incidents],
                               model_version=lambda: handle.version, **store_kw)
    handle.store = store
    retrainer = Retrainer(settings, store, handle, debounce_s=debounce_s)
    extension = feedback_extension(store, handle=handle, retrainer=retrainer, settings=settings)
    return BotParts(store, handle, retrainer, (extension,))
