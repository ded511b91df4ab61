"""Errors the feedback package raises: one line each, printed as is by the CLI."""

from __future__ import annotations

from servetriage._errors import NotFound as _NotFound
from servetriage._errors import ServetriageError


class FeedbackError(ServetriageError):
    """Bad input to a feedback operation (unknown vote, diagnosis, version, …); nothing was changed."""


class NotFound(FeedbackError, _NotFound):
    """The vote, diagnosis, user or model version named does not exist."""


class SchemaError(FeedbackError):
    """The database was written by a newer servetriage, or a migration failed (and was rolled back)."""
