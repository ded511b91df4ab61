"""The Bolt App: construction (no Slack call), authorization, the Web API client, readiness."""

from ._authorize import BotTokenAuthorize
from ._build import BotApp, Extension, build_app
from ._client import BoundedRateLimitRetryHandler, web_client
from ._readiness import Readiness

__all__ = ["BotApp", "BotTokenAuthorize", "BoundedRateLimitRetryHandler", "Extension", "Readiness", "build_app",
           "web_client"]
