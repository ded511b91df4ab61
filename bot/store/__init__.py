"""What the bot keeps between requests: the job queue, handled Slack deliveries and recorded replies."""

from ._jobs import Claimed, Enqueued, JobQueue
from ._ledger import EventLedger
from ._recorder import InMemoryRecorder, RecordedReply

__all__ = ["Claimed", "Enqueued", "EventLedger", "InMemoryRecorder", "JobQueue", "RecordedReply"]
