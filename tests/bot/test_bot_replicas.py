"""Two replicas of the bot on one PostgreSQL: two real `servetriage serve` processes in HTTP mode, as
behind a load balancer, sharing `SERVETRIAGE_DATABASE_URL`. Slack's retries of one event reach both
and get one reply; votes cast through either replica land in one tally."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest

from servetriage.bot.standin import (SlackStandIn, event_envelope, interactive_body, message_event, posted_button,
                                     signed_headers)
from servetriage.feedback import FeedbackStore
from servetriage.storage import connect

pytestmark = pytest.mark.slow  # starts two server processes

SECRET = "replicasecret0123456789abcdef000"
CHANNEL = "C0REP"
LOG = ("[2025-06-01 10:12:03] INFO engine.py:120 starting\n"
       "Traceback (most recent call last):\n"
       '  File "/usr/lib/python3/dist-packages/vllm/worker/model_runner.py", line 1540, in execute_model\n'
       "    hidden = model(input_ids)\n"
       "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
       "79.15 GiB of which 1.02 GiB is free.\n")
START_S = 90.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Replica:
    def __init__(self, data_dir: Path, database_url: str, slack: SlackStandIn) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "SERVETRIAGE_DATA_DIR": str(data_dir), "SERVETRIAGE_DATABASE_URL": database_url,
               "SERVETRIAGE_EMBEDDINGS": "off", "SLACK_BOT_TOKEN": slack.token, "SLACK_SIGNING_SECRET": SECRET,
               "SLACK_API_URL": slack.api_url, "SERVETRIAGE_WORKERS": "2", "PYTHONUNBUFFERED": "1"}
        env.pop("SLACK_APP_TOKEN", None)
        self.proc = subprocess.Popen([sys.executable, "-m", "servetriage.cli", "serve", "--port", str(self.port)],
                                     env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def ready(self, deadline: float) -> None:
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"replica on {self.port} exited: {self.proc.stderr.read()[-2000:]}")
            try:
                with urllib.request.urlopen(self.url + "/readyz", timeout=2) as resp:
                    if resp.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            time.sleep(0.2)
        raise AssertionError(f"replica on {self.port} was not ready in {START_S} s")

    def post(self, body: str, headers: dict[str, str] | None = None) -> int:
        req = urllib.request.Request(self.url + "/slack/events", data=body.encode(),
                                     headers={**signed_headers(SECRET, body), **(headers or {})}, method="POST")
        with urllib.request.urlopen(req, timeout=10) as resp:
            resp.read()
            return int(resp.status)

    def click(self, user: str, button: dict[str, Any], message: dict[str, Any]) -> int:
        payload = {"type": "block_actions", "user": {"id": user}, "team": {"id": "T0001"}, "api_app_id": "A0001",
                   "token": "legacy", "trigger_id": f"trig.{uuid.uuid4().hex[:8]}", "channel": {"id": CHANNEL},
                   "container": {"type": "message", "message_ts": message["ts"], "channel_id": CHANNEL},
                   "message": message, "actions": [{"type": "button", "action_ts": f"{time.time():.6f}", **button}]}
        return self.post(interactive_body(payload))

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def test_two_replicas_share_the_dedupe_ledger_and_the_votes(tmp_path: Path, postgres):
    url = postgres.new_database()
    with SlackStandIn() as slack:
        replicas = [Replica(tmp_path / "data", url, slack) for _ in range(2)]
        try:
            deadline = time.monotonic() + START_S
            for r in replicas:
                r.ready(deadline)
            envelope = json.dumps(event_envelope(message_event(LOG, channel=CHANNEL, user="UASK", ts="1712000000.000100"),
                                                 event_id="EvREPLICA1"))
            # Slack's first delivery reaches one replica, its retries (no 200 seen in time) the other
            assert replicas[0].post(envelope) == 200
            assert replicas[1].post(envelope, {"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"}) == 200
            assert replicas[1].post(envelope, {"X-Slack-Retry-Num": "2", "X-Slack-Retry-Reason": "http_timeout"}) == 200
            [posted] = slack.wait_for("chat.postMessage")
            time.sleep(1.5)  # a second answer, if there were one, would be posted by now
            assert len(slack.calls_to("chat.postMessage")) == 1 and "gpu-oom" in posted.text
            message = {"ts": "1712000000.900000", "text": posted.args.get("text"), "blocks": posted.blocks}

            up, down = posted_button(posted.blocks, "👍"), posted_button(posted.blocks, "👎")
            assert replicas[0].click("U1", up, message) == 200
            assert replicas[1].click("U1", up, message) == 200   # the same vote again, through the other one
            assert replicas[1].click("U2", down, message) == 200
            slack.wait_for("chat.update", where=lambda c: "👍 1 · 👎 1" in c.text)
        finally:
            for r in replicas:
                r.stop()
    with FeedbackStore(connect(url)) as store:
        votes = store.votes.all(up["value"])
        assert sorted((v["user"], v["direction"]) for v in votes) == [("U1", 1), ("U2", -1)]
        tally = store.votes.tally(up["value"])
        assert (tally.up, tally.down) == (1, 1)
        assert store.counts()["diagnoses"] == 1
