"""Nothing lost: the bot process is killed (SIGKILL) in the middle of a burst of 👍 clicks, and every
click it acknowledged with HTTP 200 is a vote in the database afterwards."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from fbhelpers import diagnosis

from servetriage.bot.standin import SlackStandIn, interactive_body, signed_headers
from servetriage.feedback import FeedbackStore

SECRET = "durabilitysecret0123456789abcdef"
USERS = [f"U{i:04d}" for i in range(600)]
KILL_AFTER = 60


def click(url: str, user: str, diagnosis_id: str) -> int:
    payload = {"type": "block_actions", "user": {"id": user}, "team": {"id": "T0001"}, "api_app_id": "A0001",
               "token": "legacy", "trigger_id": f"trig.{uuid.uuid4().hex[:8]}", "channel": {"id": "C1"},
               "container": {"type": "message", "message_ts": "1700.1", "channel_id": "C1"},
               "actions": [{"type": "button", "action_id": "feedback_up", "block_id": "servetriage_feedback",
                            "value": diagnosis_id, "action_ts": f"{time.time():.6f}"}]}
    body = interactive_body(payload)
    req = urllib.request.Request(url, data=body.encode(), headers=signed_headers(SECRET, body), method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            resp.read()
            return resp.status
    except (urllib.error.URLError, ConnectionError, OSError):
        return 0


def test_sigkill_during_a_burst_loses_no_acknowledged_vote(tmp_path: Path):
    data = tmp_path / "data"
    with FeedbackStore(data / "servetriage.sqlite") as store:
        did = store.replies.record(diagnosis(), "torch.OutOfMemoryError: CUDA out of memory", team="T1", channel="C1",
                           thread_ts="1699.0", user="UASK", source="message")
        store.replies.attach_reply(did, "1700.1")
    with SlackStandIn() as slack:
        proc = subprocess.Popen([sys.executable, str(Path(__file__).with_name("vote_server.py")), str(data),
                                 slack.api_url, SECRET, slack.token], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        try:
            url = proc.stdout.readline().strip()
            assert url.startswith("http://127.0.0.1:"), "the bot process did not start"
            acked: list[str] = []
            lock = threading.Lock()
            killed = threading.Event()

            def one(user: str) -> None:
                if killed.is_set():
                    return
                if click(url, user, did) == 200:
                    with lock:
                        acked.append(user)
                        if len(acked) >= KILL_AFTER and not killed.is_set():
                            killed.set()
                            proc.send_signal(signal.SIGKILL)  # mid-burst: other clicks are in flight

            with ThreadPoolExecutor(max_workers=16) as pool:
                list(pool.map(one, USERS))
            proc.wait(10)
            assert proc.returncode == -signal.SIGKILL
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
    assert len(acked) >= KILL_AFTER
    conn = sqlite3.connect(str(data / "servetriage.sqlite"))
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    stored = {u for (u,) in conn.execute("SELECT user FROM votes WHERE diagnosis_id = ?", [did])}
    conn.close()
    missing = set(acked) - stored
    assert not missing, f"{len(missing)} acknowledged vote(s) lost"
    assert len(stored) < len(USERS)  # the kill really cut the burst short
