"""A reason not to diagnose, carrying the reply that explains it."""

from __future__ import annotations

from ..render import Reply


class Problem(Exception):
    """Raised where a file or thread cannot be read; the pipeline says `reply` in the thread.

    `quiet` marks problems not worth a reply unless the user asked (an image shared in passing).
    """

    def __init__(self, reply: Reply, quiet: bool = False) -> None:
        super().__init__(reply.text)
        self.reply = reply
        self.quiet = quiet
