"""What the bot keeps between requests: handled Slack deliveries (SQLite) and recorded replies."""

from ._ledger import EventLedger
from ._recorder import InMemoryRecorder, RecordedReply

__all__ = ["EventLedger", "InMemoryRecorder", "RecordedReply"]
