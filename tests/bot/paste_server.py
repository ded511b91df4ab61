"""The bot as a separate process for the SIGKILL test: the real app and the real durable queue,
served over loopback HTTP, with a slow diagnoser (the rules engine, after a pause) so that a kill
lands between Slack's ack and the answer. Prints its URL, then serves until killed.

    python paste_server.py DATA_DIR SLACK_API_URL SIGNING_SECRET TOKEN
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

PAUSE_S = 1.0


class SlowEngine:
    def __init__(self, engine) -> None:
        self.engine = engine

    def diagnose(self, log):
        time.sleep(PAUSE_S)
        return self.engine.diagnose(log)

    def warm(self):
        self.engine.warm()
        return self


def main() -> None:
    data_dir, api_url, secret, token = sys.argv[1:5]
    from servetriage import Settings
    from servetriage.bot import HttpAdapter, HttpServer, build_app
    from servetriage.classifier import Engine

    settings = Settings(data_dir=Path(data_dir), embeddings=False, slack_bot_token=token, slack_signing_secret=secret,
                        slack_api_url=api_url, workers=1, channel_rate_per_minute=100)
    bot = build_app(settings, SlowEngine(Engine(settings)))
    bot.warm_in_background()
    bot.readiness.wait(60)
    server = HttpServer(HttpAdapter(bot).asgi(), "127.0.0.1", 0).start()
    print(server.url + "/slack/events", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
