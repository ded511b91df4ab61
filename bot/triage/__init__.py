"""Answering: the job records listeners submit, the bounded pool, file reading, replies and limits."""

from ._files import FileReader, is_text_like
from ._job import Job, SlackFile, Target
from ._pipeline import Triage, excerpt
from ._pool import WorkPool
from ._problem import Problem
from ._ratelimit import ChannelRateLimiter
from ._respond import Responder

__all__ = ["ChannelRateLimiter", "FileReader", "Job", "Problem", "Responder", "SlackFile", "Target", "Triage",
           "WorkPool", "excerpt", "is_text_like"]
