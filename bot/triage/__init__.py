"""Answering: the job records listeners submit, the workers that take them from the queue, file
reading, replies and limits."""

from ._files import FileReader, is_text_like
from ._job import Job, SlackFile, Target, delivery_key
from ._pipeline import Triage, excerpt
from ._workers import JobWorkers
from ._problem import Problem
from ._ratelimit import ChannelPacer, Defer
from ._respond import Responder

__all__ = ["ChannelPacer", "Defer", "FileReader", "Job", "JobWorkers", "Problem", "Responder", "SlackFile", "Target",
           "Triage", "delivery_key", "excerpt", "is_text_like"]
