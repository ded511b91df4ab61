"""Drop Slack's redeliveries before any listener sees them, and still answer 200.

An Events API delivery carries an `event_id` that stays the same on every retry
(`X-Slack-Retry-Num`, or `retry_attempt` in Socket Mode), so claiming it in the persistent ledger
is enough: the first delivery runs, any later one (also after a restart) is acknowledged and
dropped. A retry whose first delivery never reached us still runs: its id was never claimed. The
events that become jobs are claimed by the job queue instead (same key, same request, before the
ack), so a process that dies between receiving one and recording it loses nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from slack_bolt.middleware import Middleware
from slack_bolt.request import BoltRequest
from slack_bolt.response import BoltResponse

from ..store import EventLedger

log = logging.getLogger(__name__)

QUEUED_EVENTS = frozenset({"message", "app_mention", "file_shared"})  # deduped by the job queue's key


class DedupeEvents(Middleware):
    """Global middleware: one run per `event_id`, whatever the number of deliveries."""

    def __init__(self, ledger: EventLedger) -> None:
        self._ledger = ledger

    def process(self, *, req: BoltRequest, resp: BoltResponse,
                next: Callable[[], BoltResponse]) -> BoltResponse | None:
        body = req.body if isinstance(req.body, dict) else {}
        event_id = body.get("event_id") if body.get("type") == "event_callback" else None
        kind = (body.get("event") or {}).get("type")
        if event_id and kind in QUEUED_EVENTS:
            # Their listener records a job keyed by the event id before Slack's 200, and the queue
            # adds nothing for a key it holds: that is the claim. A process that died before
            # recording it leaves nothing claimed, so Slack's retry still runs.
            return next()
        if event_id and not self._ledger.claim(f"event:{event_id}"):
            retry = _first(req.headers.get("x-slack-retry-num"))
            log.info("dropping duplicate delivery of %s (retry %s)", event_id, retry or "-")
            return BoltResponse(status=200, body="", headers={"x-slack-no-retry": "1"})
        return next()


def _first(value: object) -> str | None:
    if isinstance(value, (list, tuple)):
        return str(value[0]) if value else None
    return str(value) if value is not None else None
