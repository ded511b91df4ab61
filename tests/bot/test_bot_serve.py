"""`servetriage serve`: refuses to start half-configured, and in HTTP mode serves until SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest
from slack_harness import OOM_CATEGORY, OOM_LOG, SECRET

from servetriage import ConfigError, Settings
from servetriage.bot import HttpAdapter, build_app, serve
from servetriage.bot.standin import event_envelope, message_event, signed_headers


def test_serve_without_tokens_names_the_variables(tmp_path):
    with pytest.raises(ConfigError, match="SLACK_BOT_TOKEN.*SLACK_APP_TOKEN.*SLACK_SIGNING_SECRET"):
        serve(Settings(data_dir=tmp_path, slack_bot_token="xoxb-1"))


def test_http_mode_needs_the_signing_secret(settings, engine):
    import dataclasses

    bot = build_app(dataclasses.replace(settings, slack_signing_secret=None), engine)
    try:
        with pytest.raises(ConfigError, match="SLACK_SIGNING_SECRET"):
            HttpAdapter(bot)
    finally:
        bot.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return 0


def test_the_serve_command_runs_the_bot_over_http_until_sigterm(tmp_path, slack):
    port = _free_port()
    env = {**os.environ, "SLACK_BOT_TOKEN": slack.token, "SLACK_SIGNING_SECRET": SECRET,
           "SLACK_API_URL": slack.api_url, "SERVETRIAGE_DATA_DIR": str(tmp_path), "SERVETRIAGE_EMBEDDINGS": "off",
           "SERVETRIAGE_PORT": str(port)}
    env.pop("SLACK_APP_TOKEN", None)
    proc = subprocess.Popen([sys.executable, "-m", "servetriage.cli", "serve", "--host", "127.0.0.1"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while _get(f"http://127.0.0.1:{port}/readyz") != 200:
            assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
            assert time.monotonic() < deadline, "the bot did not become ready"
            time.sleep(0.1)
        body = json.dumps(event_envelope(message_event("```\n" + OOM_LOG + "```", ts="1712000500.000100")))
        req = urllib.request.Request(f"http://127.0.0.1:{port}/slack/events", data=body.encode(),
                                     headers=signed_headers(SECRET, body), method="POST")
        with urllib.request.urlopen(req, timeout=5) as resp:
            assert resp.status == 200
        [reply] = slack.wait_for("chat.postMessage")
        assert OOM_CATEGORY in reply.text
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(15) == 0


def test_socket_mode_with_a_refused_app_token_is_a_one_line_config_error(tmp_path, slack):
    settings = Settings(embeddings=False, data_dir=tmp_path, slack_bot_token=slack.token,
                        slack_app_token="xapp-1-A0001-revoked", slack_api_url=slack.api_url, port=_free_port())
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(ConfigError, match="invalid_auth.*SLACK_APP_TOKEN"):
        serve(settings)
    assert signal.getsignal(signal.SIGTERM) == before
    assert [c.method for c in slack.calls_to("apps.connections.open")] == ["apps.connections.open"]
