"""HTTP mode: Slack's signature and replay window are enforced (by Bolt), the probes answer."""

from __future__ import annotations

import json
import threading
import time

from servetriage.bot.standin import event_envelope, message_event

from slack_harness import OOM_LOG


def test_url_verification_answers_the_challenge(bot):
    resp = bot.post(json.dumps({"type": "url_verification", "challenge": "c-123", "token": "legacy"}))
    assert resp.status == 200 and "c-123" in resp.body


def test_unsigned_stale_and_wrongly_signed_requests_are_refused(bot, slack):
    body = json.dumps(event_envelope(message_event("```\n" + OOM_LOG + "```")))
    assert bot.post(body, sign=False).status == 401
    assert bot.post(body, timestamp=int(time.time()) - 6 * 60).status == 401
    assert bot.post(body, secret="not-the-secret").status == 401
    tampered = bot.post(body, headers={"X-Slack-Signature": "v0=" + "0" * 64})
    assert tampered.status == 401
    bot.drain()
    assert slack.calls_to("chat.postMessage") == []


def test_signed_request_inside_the_window_is_accepted(bot):
    body = json.dumps(event_envelope(message_event("hello there")))
    assert bot.post(body, timestamp=int(time.time()) - 4 * 60).status == 200


def test_healthz_at_once_and_readyz_only_once_warm(start_bot, settings, engine):
    gate = threading.Event()

    class GatedDiagnoser:
        """The real engine, whose warm-up waits for the test (a slow model load)."""

        def diagnose(self, log):
            return engine.diagnose(log)

        def warm(self):
            assert gate.wait(10)
            return engine.warm()

    running = start_bot(settings, diagnoser=GatedDiagnoser(), warm=False)
    running.bot.warm_in_background()
    assert running.get("/healthz").status == 200
    assert running.get("/readyz").status == 503
    gate.set()
    assert running.bot.readiness.wait(10)
    ready = running.get("/readyz")
    assert ready.status == 200 and ready.json()["ready"] is True


def test_construction_calls_slack_not_at_all(settings, engine, slack):
    from servetriage.bot import build_app

    bot = build_app(settings, engine)
    try:
        assert slack.calls == []
    finally:
        bot.close()


def test_oversized_body_is_refused(bot):
    assert bot.post("{" + " " * (2 << 20) + "}").status == 413
