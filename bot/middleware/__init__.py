"""Bolt middleware of our own: the persistent de-duplication of Slack's event deliveries."""

from ._dedupe import DedupeEvents

__all__ = ["DedupeEvents"]
