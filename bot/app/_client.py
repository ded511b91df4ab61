"""The Web API client: Slack's own `WebClient`, pointed at `SLACK_API_URL`, retrying what is worth it.

Bolt copies this client's base URL and retry handlers into the per-request client every listener
gets, so configuring them here configures every call the bot makes.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable

from slack_sdk import WebClient
from slack_sdk.http_retry.builtin_handlers import ConnectionErrorRetryHandler, RateLimitErrorRetryHandler
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState

from servetriage._settings import Settings

TIMEOUT_S = 15
MAX_RATELIMIT_RETRIES = 3
MAX_RETRY_AFTER_S = 30.0


class BoundedRateLimitRetryHandler(RateLimitErrorRetryHandler):
    """Waits out `ratelimited` (HTTP 429 + Retry-After), but never longer than `max_wait_s` at once.

    slack-sdk's handler sleeps for whatever Retry-After says; a worker asleep for minutes would hold
    a pool slot that other channels need, so a longer wait gives up and the error is reported.
    """

    def __init__(self, max_retry_count: int = MAX_RATELIMIT_RETRIES, max_wait_s: float = MAX_RETRY_AFTER_S,
                 sleep: Callable[[float], None] = time.sleep,
                 on_wait: Callable[[float], None] | None = None) -> None:
        super().__init__(max_retry_count=max_retry_count)
        self.max_wait_s = max_wait_s
        self._sleep = sleep
        self._on_wait = on_wait or (lambda seconds: None)  # each Retry-After waited (the bot's metrics)

    def _can_retry(self, *, state: RetryState, request: HttpRequest, response: HttpResponse | None = None,
                   error: Exception | None = None) -> bool:
        return response is not None and response.status_code == 429 and retry_after(response) <= self.max_wait_s

    def prepare_for_next_attempt(self, *, state: RetryState, request: HttpRequest,
                                 response: HttpResponse | None = None, error: Exception | None = None) -> None:
        wait = retry_after(response) if response is not None else 1.0
        logging.getLogger(__name__).info("Slack rate-limited %s; retrying in %.1f s", request.url, wait)
        state.next_attempt_requested = True
        self._on_wait(wait)
        self._sleep(wait + random.random() * 0.25)
        state.increment_current_attempt()


def retry_after(response: HttpResponse) -> float:
    for key, values in response.headers.items():
        if key.lower() == "retry-after" and values:
            try:
                return max(0.0, float(values[0]))
            except ValueError:
                break
    return 1.0


def web_client(settings: Settings, with_token: bool = True,
               on_rate_limit: Callable[[float], None] | None = None) -> WebClient:
    """A client on `SLACK_API_URL` (the trailing slash kept). Bolt's own gets no token: the
    `authorize` supplies it per request, and Bolt warns when both are given."""
    base = settings.slack_api_url if settings.slack_api_url.endswith("/") else settings.slack_api_url + "/"
    return WebClient(
        token=settings.slack_bot_token if with_token else None, base_url=base, timeout=TIMEOUT_S,
        retry_handlers=[ConnectionErrorRetryHandler(max_retry_count=2),
                        BoundedRateLimitRetryHandler(on_wait=on_rate_limit)],
    )
