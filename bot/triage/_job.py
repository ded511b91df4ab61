"""What a listener hands to the triage pool: where to answer, and what to read.

Listeners only parse Slack's payload into these frozen records and return, so every request is
acknowledged at once; all Web API calls and the diagnosis happen later, on the pool.
"""

from __future__ import annotations

import dataclasses
from pathlib import PurePosixPath
from typing import Any
from collections.abc import Mapping

SOURCES = ("message", "file", "mention", "command", "modal", "shortcut")


@dataclasses.dataclass(frozen=True)
class Target:
    """Where the answer goes. `thread_ts` None means a new top-level message (command, modal).

    `response_url` is Slack's per-interaction webhook: the first choice for a slash command (it
    works in channels the bot is not in), the fallback for shortcuts and modals.
    """

    channel: str
    thread_ts: str | None
    user: str | None = None
    team: str | None = None
    response_url: str | None = None
    prefer_response_url: bool = False
    dm_fallback: bool = False


@dataclasses.dataclass(frozen=True)
class SlackFile:
    """The parts of a Slack file object the bot uses; `partial` asks for `files.info` first."""

    id: str
    name: str
    mimetype: str = ""
    filetype: str = ""
    size: int | None = None
    url: str | None = None
    partial: bool = False

    @classmethod
    def from_payload(cls, f: Mapping[str, Any]) -> SlackFile:
        url = f.get("url_private_download") or f.get("url_private")
        size = f.get("size")
        return cls(
            id=str(f.get("id", "")), name=str(f.get("name") or f.get("title") or f.get("id") or "file"),
            mimetype=str(f.get("mimetype") or ""), filetype=str(f.get("filetype") or ""),
            size=int(size) if isinstance(size, (int, float)) else None, url=url,
            partial=not url or f.get("file_access") == "check_file_info" or f.get("mode") == "hidden_by_limit",
        )

    @property
    def suffix(self) -> str:
        return PurePosixPath(self.name.lower()).suffix


@dataclasses.dataclass(frozen=True)
class Job:
    """One request to diagnose. `explicit` jobs (asked for) always get an answer, even "no log here";
    implicit ones (a pasted log noticed in a channel) stay silent when there is nothing to say.

    `message_ts` set means the inputs come from that message, and each input is claimed in the
    ledger under it, so two events about one message (message + app_mention, message +
    file_shared) answer once. `from_thread_parent` asks the worker to read the thread's first
    message (conversations.replies) instead of `text`/`files`.
    """

    source: str
    target: Target
    text: str | None = None
    files: tuple[SlackFile, ...] = ()
    explicit: bool = False
    message_ts: str | None = None
    from_thread_parent: bool = False
    shared_file: str | None = None       # a `file_shared` event: find where the file was shared first
    # Set when a worker claims the job from the queue (not stored with it):
    key: str = ""                         # its key in the job queue (what Slack delivered)
    answered: frozenset[str] = frozenset()  # its inputs already answered by an earlier attempt
    created: float = 0.0                  # when the delivery was recorded (epoch seconds)

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise ValueError(f"unknown job source {self.source!r}")

    def to_payload(self) -> dict[str, Any]:
        """What the queue stores: everything but the claim's own fields."""
        out = dataclasses.asdict(self)
        del out["key"], out["answered"], out["created"]
        return out

    @classmethod
    def from_payload(cls, data: Mapping[str, Any], *, key: str = "", answered: frozenset[str] = frozenset(),
                     created: float = 0.0) -> Job:
        fields = {k: v for k, v in data.items() if k not in ("target", "files", "key", "answered", "created")}
        return cls(**fields, target=Target(**data["target"]), files=tuple(SlackFile(**f) for f in data.get("files", ())),
                   key=key, answered=answered, created=created)


def delivery_key(body: Mapping[str, Any], fallback: str) -> str:
    """The queue key of an Events API delivery: its `event_id`, the same on every retry."""
    event_id = body.get("event_id")
    return f"event:{event_id}" if event_id else fallback
