"""Reading Slack text: undo Slack's markup, and tell a pasted failure log from conversation."""

from ._log import LogSignals, looks_like_log, signals
from ._text import mentions, strip_mention, unformat

__all__ = ["LogSignals", "looks_like_log", "mentions", "signals", "strip_mention", "unformat"]
