"""Authorization without a Slack call at construction, nor on the request path.

Bolt's default single-token setup calls `auth.test` inside `App()` and fails there when Slack is
unreachable; with an `authorize` function it calls nothing, but then it has to learn the bot's
user and bot ids (the self-event filter needs them) somewhere. Here one `auth.test` runs on a
background thread (at warm-up, or on the first request), and requests are answered from the
token alone until it has succeeded, so no request ever waits on Slack before its ack.
"""

from __future__ import annotations

import logging
import threading
import time

from slack_bolt.authorization import AuthorizeResult
from slack_bolt.authorization.authorize import Authorize
from slack_bolt.context import BoltContext
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError

log = logging.getLogger(__name__)

RETRY_AFTER_FAILURE_S = 30.0


class BotTokenAuthorize(Authorize):
    """A single-workspace `Authorize` for one bot token; the `auth.test` answer is an explicit cache."""

    def __init__(self, token: str, client: WebClient) -> None:
        self._token = token
        self._client = client
        self._cached: AuthorizeResult | None = None
        self._lock = threading.Lock()
        self._priming = False
        self._last_failure = float("-inf")

    def __call__(self, *, context: BoltContext, enterprise_id: str | None, team_id: str | None,
                 user_id: str | None, actor_enterprise_id: str | None = None,
                 actor_team_id: str | None = None, actor_user_id: str | None = None) -> AuthorizeResult | None:
        if self._cached is not None:
            return self._cached
        self.prime_in_background()
        return AuthorizeResult(enterprise_id=enterprise_id, team_id=team_id, bot_token=self._token)

    def prime(self) -> AuthorizeResult | None:
        """Call `auth.test` now (blocking) unless already known; None when Slack could not say."""
        with self._lock:
            if self._cached is None:
                try:
                    resp = self._client.auth_test(token=self._token)
                    self._cached = AuthorizeResult.from_auth_test_response(auth_test_response=resp,
                                                                           bot_token=self._token)
                    log.info("authorized as %s (bot %s) in %s", self._cached.bot_user_id, self._cached.bot_id,
                             self._cached.team_id)
                except (SlackApiError, SlackClientError, OSError) as exc:
                    self._last_failure = time.monotonic()
                    log.warning("auth.test failed (%s); answering with the bot token alone for now", _brief(exc))
            return self._cached

    def prime_in_background(self) -> None:
        """Start one `auth.test` unless one is running or the last failed under 30 s ago."""
        with self._lock:
            if self._cached is not None or self._priming or \
                    time.monotonic() - self._last_failure < RETRY_AFTER_FAILURE_S:
                return
            self._priming = True
        threading.Thread(target=self._prime_once, name="servetriage-auth", daemon=True).start()

    def _prime_once(self) -> None:
        try:
            self.prime()
        finally:
            with self._lock:
                self._priming = False

    @property
    def bot_user_id(self) -> str | None:
        return self._cached.bot_user_id if self._cached else None


def _brief(exc: BaseException) -> str:
    if isinstance(exc, SlackApiError):
        return str(exc.response.get("error", exc))
    return type(exc).__name__ + (f": {exc}" if str(exc) else "")
