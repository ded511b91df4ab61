"""Harness for the bot tests: the bot under test is the real one, built by `build_app`, served by
uvicorn on loopback, talking to a recording stand-in for Slack's Web API (slack-bolt's own test
pattern) and diagnosing with the real rules-only engine. Requests are signed (v0) as Slack signs them."""

from __future__ import annotations

import dataclasses
import json
import time
import urllib.error
import urllib.request
from typing import Any

from servetriage.bot import BotApp, HttpServer
from servetriage.bot.standin import SlackStandIn, event_envelope, signed_headers

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"

OOM_LOG = """INFO 05-12 10:00:01 llm_engine.py:200] Initializing an LLM engine (v0.6.3) with config: model='meta-llama/Llama-3.1-70B'
INFO 05-12 10:00:41 worker.py:232] Memory profiling results: total_gpu_memory=79.14GiB
Traceback (most recent call last):
  File "/usr/lib/python3/site-packages/vllm/worker/model_runner.py", line 1204, in execute_model
    hidden_states = model_executable(input_ids=input_ids, positions=positions)
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.14 GiB of which 1.06 GiB is free.
"""  # noqa: E501 (log lines as the engine prints them)
OOM_CATEGORY = "gpu-oom"


@dataclasses.dataclass
class Response:
    status: int
    body: str
    seconds: float

    def json(self) -> Any:
        return json.loads(self.body)


class RunningBot:
    """The app served over real HTTP, and a client that sends what Slack sends."""

    def __init__(self, bot: BotApp, server: HttpServer, secret: str) -> None:
        self.bot, self.server, self.secret = bot, server, secret
        self.url = server.url + "/slack/events"
        self._closed = False

    def post(self, body: str, *, sign: bool = True, timestamp: int | None = None, secret: str | None = None,
             headers: dict[str, str] | None = None, path: str = "/slack/events") -> Response:
        h = signed_headers(secret or self.secret, body, timestamp) if sign else {
            "Content-Type": "application/json" if body.startswith("{") else "application/x-www-form-urlencoded"}
        h.update(headers or {})
        req = urllib.request.Request(self.server.url + path, data=body.encode(), headers=h, method="POST")
        start = time.perf_counter()
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                return Response(resp.status, resp.read().decode(), time.perf_counter() - start)
        except urllib.error.HTTPError as exc:
            return Response(exc.code, exc.read().decode(), time.perf_counter() - start)

    def event(self, event: dict[str, Any], *, event_id: str | None = None, retry: int | None = None) -> Response:
        headers = {"X-Slack-Retry-Num": str(retry), "X-Slack-Retry-Reason": "http_timeout"} if retry else None
        return self.post(json.dumps(event_envelope(event, event_id=event_id)), headers=headers)

    def get(self, path: str) -> Response:
        start = time.perf_counter()
        try:
            with urllib.request.urlopen(self.server.url + path, timeout=10) as resp:
                return Response(resp.status, resp.read().decode(), time.perf_counter() - start)
        except urllib.error.HTTPError as exc:
            return Response(exc.code, exc.read().decode(), time.perf_counter() - start)

    def drain(self) -> None:
        """Wait for every acknowledged request's work (listeners, then the triage pool) to finish."""
        if not self._closed:
            self._closed = True
            self.bot.close()

    def close(self) -> None:
        self.server.stop()
        self.drain()




def replies(slack: SlackStandIn) -> list:
    return slack.calls_to("chat.postMessage")
