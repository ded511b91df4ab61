"""The exception hierarchy: one base class, so callers can catch everything servetriage raises.

Every message is one line, written for the person who ran the command; the CLI prints it as is.
"""

from __future__ import annotations


class ServetriageError(Exception):
    """Base of every error this package raises on purpose."""


class InputError(ServetriageError):
    """A log could not be read: missing, unreadable, or of a type we do not open."""


class InputTooLarge(InputError):
    """A log (or what it decompresses to) is over the configured limit."""


class CorpusError(ServetriageError):
    """The incident corpus or the category spec is malformed."""


class ModelError(ServetriageError):
    """A trained artefact is missing, stale or does not match the corpus and embedder."""


class ConfigError(ServetriageError):
    """A setting has a value we cannot use."""


class NotFound(ServetriageError):
    """A record named by id (a diagnosis, a vote, a model version) does not exist."""
