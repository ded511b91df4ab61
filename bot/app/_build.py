"""Building the Bolt `App` and everything it needs, without one call to Slack.

The returned `BotApp` owns what has a lifetime (the pools, the event ledger, the warm-up thread)
so that `close()` ends them in order: no new listener work, then the queued diagnoses, then the
ledger.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import sqlite3
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Callable, Iterable, Iterator

from slack_bolt import App
from slack_bolt.logger import get_bolt_logger, messages

from servetriage._errors import ConfigError
from servetriage._settings import Settings
from servetriage.storage import StorageError

from .._metrics import Metrics
from .._protocols import Diagnoser, FeedbackService, ReplyHistory, ReplyRecorder
from ..listener import FeedbackListener, register_fallbacks, register_listeners
from ..middleware import DedupeEvents
from ..store import EventLedger, InMemoryRecorder, JobQueue
from ..triage import ChannelPacer, FileReader, Triage
from ._authorize import BotTokenAuthorize
from ._client import web_client
from ._readiness import Readiness

log = logging.getLogger(__name__)

Extension = Callable[[App], None]


@dataclasses.dataclass
class BotApp:
    """The Bolt app plus the parts with a lifetime; adapters serve `app`, tests and `serve` call `close()`."""

    app: App
    settings: Settings
    diagnoser: Diagnoser
    recorder: ReplyRecorder
    triage: Triage
    ledger: EventLedger
    readiness: Readiness
    authorize: BotTokenAuthorize
    listener_executor: ThreadPoolExecutor
    metrics: Metrics

    def warm_in_background(self) -> None:
        """Learn the bot's identity (one auth.test), then warm the diagnoser; /readyz follows the latter."""
        self.readiness.warm_in_background(self.diagnoser, before=self.authorize.prime)

    def close(self) -> None:
        """Let ready work finish, then release the ledger; safe to call twice."""
        self.listener_executor.shutdown(wait=True)
        self.triage.close()
        with contextlib.suppress(StorageError, sqlite3.ProgrammingError):  # already closed
            self.ledger.close()


@contextlib.contextmanager
def _without_token_warnings() -> Iterator[None]:
    """Bolt reads SLACK_BOT_TOKEN from the environment itself and warns that `client`/`authorize`
    override it, which is the intent here: those two construction warnings are dropped, no others."""
    expected = {messages.warning_client_prioritized_and_token_skipped(), messages.warning_token_skipped()}

    def keep(record: logging.LogRecord) -> bool:
        return record.getMessage() not in expected

    logger = get_bolt_logger(App)
    logger.addFilter(keep)
    try:
        yield
    finally:
        logger.removeFilter(keep)


def build_app(settings: Settings, diagnoser: Diagnoser, recorder: ReplyRecorder | None = None,
              feedback: FeedbackService | None = None, extensions: Iterable[Extension] = (),
              metrics: Metrics | None = None) -> BotApp:
    """The whole bot for `settings`. With `feedback`, the 👍/👎 buttons, reactions and corrections are
    stored through it (without, they are acknowledged and logged); `extensions` register more listeners."""
    if not settings.slack_bot_token:
        raise ConfigError("SLACK_BOT_TOKEN is not set")
    recorder = recorder if recorder is not None else InMemoryRecorder()
    metrics = metrics or Metrics()
    client = web_client(settings, on_rate_limit=lambda _: metrics.paced("retry_after"))
    authorize = BotTokenAuthorize(settings.slack_bot_token, client)
    listener_executor = ThreadPoolExecutor(max_workers=max(4, 2 * settings.workers), thread_name_prefix="bolt-listener")
    with _without_token_warnings():
        app = App(
            name="servetriage",
            client=web_client(settings, with_token=False, on_rate_limit=lambda _: metrics.paced("retry_after")),
            authorize=authorize,  # type: ignore[arg-type]  # an `Authorize` is what Bolt calls; it is annotated Callable
            signing_secret=settings.slack_signing_secret or "",
            request_verification_enabled=bool(settings.slack_signing_secret),
            # Listeners run before Slack gets its 200: a paste is in the job queue before the ack, so
            # no acknowledged paste is lost. They only parse and record; the work is the workers'.
            process_before_response=True,
            listener_executor=listener_executor,
        )
    ledger = EventLedger.for_settings(settings)
    triage = Triage(
        diagnoser=diagnoser, recorder=recorder, client=client, ledger=ledger, queue=JobQueue(ledger.db.reopen()),
        workers=settings.workers, max_depth=settings.queue_depth,
        pacer=ChannelPacer(settings.channel_rate_per_minute),
        reader=FileReader(client, settings.slack_bot_token, settings.max_input_bytes),
        bot_user_id=lambda: authorize.bot_user_id,
        history=recorder if isinstance(recorder, ReplyHistory) else None, metrics=metrics,
    )
    app.use(DedupeEvents(ledger))
    register_listeners(app, triage, settings)
    if feedback is not None:
        FeedbackListener(feedback, after_ack=listener_executor.submit, on_vote=metrics.voted).register(app)
    for extend in extensions:
        extend(app)
    register_fallbacks(app)
    triage.start()  # the workers: first what a killed process of this host left unanswered
    return BotApp(app=app, settings=settings, diagnoser=diagnoser, recorder=recorder, triage=triage, ledger=ledger,
                  readiness=Readiness(), authorize=authorize, listener_executor=listener_executor, metrics=metrics)
