"""No acknowledged paste is lost: the bot is killed (SIGKILL) right after Slack got its 200 for five
pastes, before it could answer them; started again, it answers every one of them, and none twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from slack_harness import OOM_LOG

from servetriage.bot.standin import SlackStandIn, event_envelope, message_event, signed_headers

pytestmark = pytest.mark.slow  # starts the bot twice as a process

SECRET = "pastesecret0123456789abcdef00000"
PASTES = 5


def _start(data: Path, slack: SlackStandIn) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, str(Path(__file__).with_name("paste_server.py")), str(data),
                             slack.api_url, SECRET, slack.token], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    assert url.startswith("http://127.0.0.1:"), "the bot process did not start"
    return proc, url


def _post(url: str, event: dict) -> int:
    body = json.dumps(event_envelope(event))
    req = urllib.request.Request(url, data=body.encode(), headers=signed_headers(SECRET, body), method="POST")
    with urllib.request.urlopen(req, timeout=10) as resp:
        return int(resp.status)


def test_a_sigkill_after_the_ack_loses_no_paste_and_answers_none_twice(tmp_path: Path):
    data = tmp_path / "data"
    threads = [f"1712000{n:03d}.000100" for n in range(PASTES)]
    with SlackStandIn() as slack:
        proc, url = _start(data, slack)
        try:
            for ts in threads:
                assert _post(url, message_event("```\n" + OOM_LOG + "```", channel="C1", user="UA", ts=ts)) == 200
        finally:
            proc.send_signal(signal.SIGKILL)  # an OOM kill, a node drain: the process gets no say
            proc.wait(10)
        answered_before = len(slack.calls_to("chat.postMessage"))
        assert answered_before < PASTES  # the kill came before the answers (one takes a second here)

        proc, _ = _start(data, slack)
        try:
            slack.wait_for("chat.postMessage", PASTES, timeout=60)
            time.sleep(1.5)  # a duplicate, if there were one, would be posted by now
        finally:
            proc.terminate()
            proc.wait(20)
    per_thread = [c.args.get("thread_ts") for c in slack.calls_to("chat.postMessage")]
    assert sorted(per_thread) == sorted(threads)  # each paste answered, exactly once
