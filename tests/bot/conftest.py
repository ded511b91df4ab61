"""Fixtures: the stand-in Slack, the rules-only engine (once per session), and the served bot."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from collections.abc import Iterator

import pytest
from slack_harness import SECRET, RunningBot

from servetriage import Settings
from servetriage.bot import HttpAdapter, HttpServer, build_app
from servetriage.bot.standin import SlackStandIn
from servetriage.classifier import Engine


@pytest.fixture(scope="session")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Engine:
    return Engine(Settings(embeddings=False, data_dir=tmp_path_factory.mktemp("engine"))).warm()


@pytest.fixture
def slack() -> Iterator[SlackStandIn]:
    with SlackStandIn() as stand_in:
        yield stand_in


@pytest.fixture
def settings(tmp_path: Path, slack: SlackStandIn) -> Settings:
    return Settings(embeddings=False, data_dir=tmp_path / "data", slack_bot_token=slack.token,
                    slack_signing_secret=SECRET, slack_api_url=slack.api_url, workers=2,
                    channel_rate_per_minute=0)  # no pacing, but in the tests of it


@pytest.fixture
def start_bot(engine: Engine):
    """`start_bot(settings, diagnoser=None, **build_kw)` serves a fresh app; all are closed at teardown."""
    running: list[RunningBot] = []

    def start(settings: Settings, diagnoser: Any = None, warm: bool = True, **kw: Any) -> RunningBot:
        bot = build_app(settings, diagnoser or engine, **kw)
        if warm:
            bot.warm_in_background()
            bot.readiness.wait(10)  # auth.test first, then the (already warm) engine
        server = HttpServer(HttpAdapter(bot).asgi(), "127.0.0.1", 0).start()
        rb = RunningBot(bot, server, settings.slack_signing_secret or "")
        running.append(rb)
        return rb

    yield start
    for rb in running:
        rb.close()


@pytest.fixture
def bot(start_bot, settings: Settings) -> RunningBot:
    return start_bot(settings)
