"""Posting answers, and surviving the Web API: every failure is logged and, where possible, said.

`ratelimited` is retried inside the WebClient (bounded Retry-After waits). What is left here is
choosing the way to reach the user when the first one fails: the thread, then the interaction's
`response_url`, then a direct message; and a text-only retry when Slack rejects the blocks.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.webhook import WebhookClient

from ..render import MAX_BLOCKS, Reply, notices
from ._job import Target

log = logging.getLogger(__name__)

NOT_A_MEMBER = frozenset({"not_in_channel", "channel_not_found", "is_archived", "restricted_action",
                          "cannot_reply_to_message"})
BAD_PAYLOAD = frozenset({"invalid_blocks", "invalid_blocks_format", "msg_too_long", "too_many_blocks",
                         "invalid_attachments"})
WEBHOOK_TIMEOUT_S = 10


LINK_TTL_S = 600.0     # a permalink Slack gave, reused this long (leaving a channel shows within it)
NO_LINK_TTL_S = 60.0   # a refusal (a channel the bot left), asked again after this long
LINKS_KEPT = 2048


class Responder:
    """Sends replies for the triage pool. Methods return the message ts when Slack gave one."""

    def __init__(self, client: WebClient, on_error: Callable[[str, str], None] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._client = client
        self._on_error = on_error or (lambda method, error: None)  # (Web API method, Slack's error)
        self._links: OrderedDict[tuple[str, str], tuple[float, str | None]] = OrderedDict()
        self._links_lock = threading.Lock()
        self._clock = clock

    def deliver(self, target: Target, reply: Reply) -> str | None:
        """The answer itself: in the thread (or via response_url for a slash command), with fallbacks."""
        if target.prefer_response_url and target.response_url and self._webhook(target.response_url, reply, "in_channel"):
            return None
        ts, error = self._post(target.channel, target.thread_ts, reply)
        if error is None:
            return ts
        if error in BAD_PAYLOAD:  # Slack refused the blocks: the plain text still says it all
            ts, error = self._post(target.channel, target.thread_ts, Reply(text=reply.text))
            if error is None:
                return ts
        if target.response_url and not target.prefer_response_url and \
                self._webhook(target.response_url, _with_note(reply, error), "ephemeral"):
            return None
        if target.dm_fallback and target.user:
            return self._post(target.user, None, reply)[0]
        return None

    def notify(self, target: Target, reply: Reply, *, private: bool = False) -> str | None:
        """A notice (file too large, busy): in the thread, or only to the asking user when `private`."""
        if private and target.user:
            if target.response_url and self._webhook(target.response_url, reply, "ephemeral"):
                return None
            try:
                self._client.chat_postEphemeral(channel=target.channel, user=target.user,
                                                thread_ts=target.thread_ts, **reply.as_kwargs())
            except (SlackApiError, SlackClientError, OSError) as exc:
                log.warning("chat.postEphemeral in %s failed: %s", target.channel, _error(exc))
                self._on_error("chat.postEphemeral", _error(exc))
            return None
        return self.deliver(target, reply)

    def update(self, channel: str, ts: str, reply: Reply) -> bool:
        try:
            self._client.chat_update(channel=channel, ts=ts, **reply.as_kwargs())
            return True
        except (SlackApiError, SlackClientError, OSError) as exc:
            log.warning("chat.update of %s in %s failed: %s", ts, channel, _error(exc))
            self._on_error("chat.update", _error(exc))
            return False

    def permalink(self, channel: str, ts: str) -> str | None:
        """A link to a message; None when Slack will not give one (the bot is no longer in the channel).
        Answers are kept `LINK_TTL_S` (a refusal `NO_LINK_TTL_S`): every answer links a few earlier ones,
        and asking Slack again each time would spend its rate limit on the same links."""
        key, now = (channel, ts), self._clock()
        with self._links_lock:
            kept = self._links.get(key)
            if kept is not None and kept[0] > now:
                return kept[1]
        try:
            got = self._client.chat_getPermalink(channel=channel, message_ts=ts).get("permalink")
            link = str(got) if got else None
        except (SlackApiError, SlackClientError, OSError) as exc:
            log.info("chat.getPermalink %s in %s: %s", ts, channel, _error(exc))
            self._on_error("chat.getPermalink", _error(exc))
            link = None
        with self._links_lock:
            self._links[key] = (now + (LINK_TTL_S if link else NO_LINK_TTL_S), link)
            self._links.move_to_end(key)
            while len(self._links) > LINKS_KEPT:
                self._links.popitem(last=False)
        return link

    # -- transports --------------------------------------------------------------------------
    def _post(self, channel: str, thread_ts: str | None, reply: Reply) -> tuple[str | None, str | None]:
        kwargs: dict[str, Any] = {"channel": channel, "unfurl_links": False, "unfurl_media": False, **reply.as_kwargs()}
        if thread_ts:
            kwargs["thread_ts"] = thread_ts
        try:
            resp = self._client.chat_postMessage(**kwargs)
            return str(resp.get("ts") or ""), None
        except (SlackApiError, SlackClientError, OSError) as exc:
            error = _error(exc)
            log.warning("chat.postMessage to %s failed: %s", channel, error)
            self._on_error("chat.postMessage", error)
            return None, error

    def _webhook(self, url: str, reply: Reply, response_type: str) -> bool:
        try:
            resp = WebhookClient(url, timeout=WEBHOOK_TIMEOUT_S).send(
                text=reply.text, blocks=list(reply.blocks) or None, response_type=response_type,
                replace_original=False)
        except (SlackClientError, OSError) as exc:
            log.warning("response_url post failed: %s", _error(exc))
            self._on_error("response_url", _error(exc))
            return False
        if resp.status_code != 200:
            log.warning("response_url answered HTTP %s: %s", resp.status_code, resp.body[:200])
            return False
        return True


def _with_note(reply: Reply, error: str | None) -> Reply:
    if error not in NOT_A_MEMBER:
        return reply
    note = notices.not_in_channel().blocks
    return Reply(text=reply.text, blocks=(tuple(reply.blocks) + tuple(note))[-MAX_BLOCKS:] if reply.blocks else note)


def _error(exc: BaseException) -> str:
    if isinstance(exc, SlackApiError):
        return str(exc.response.get("error") or f"HTTP {exc.response.status_code}")
    return type(exc).__name__ + (f" ({str(exc)[:120]})" if str(exc) else "")
