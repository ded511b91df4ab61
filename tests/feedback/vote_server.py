"""The bot as a separate process for the SIGKILL test: the real app with the feedback service and
the real store, served over loopback HTTP. Prints its URL, then serves until killed.

    python vote_server.py DATA_DIR SLACK_API_URL SIGNING_SECRET TOKEN
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path


class NoDiagnoser:
    """The test only clicks buttons on an answer already recorded; nothing is diagnosed."""

    def diagnose(self, log):  # pragma: no cover - never called
        raise RuntimeError("not used")

    def warm(self):
        return self


def main() -> None:
    data_dir, api_url, secret, token = sys.argv[1:5]
    from servetriage import Settings
    from servetriage.bot import HttpAdapter, HttpServer, build_app
    from servetriage.corpus import load_corpus
    from servetriage.feedback import FeedbackStore, StoreFeedback

    settings = Settings(data_dir=Path(data_dir), embeddings=False, slack_bot_token=token, slack_signing_secret=secret,
                        slack_api_url=api_url, workers=2)
    store = FeedbackStore.open(settings)
    bot = build_app(settings, NoDiagnoser(), recorder=store.replies, feedback=StoreFeedback(store, load_corpus()))
    server = HttpServer(HttpAdapter(bot).asgi(), "127.0.0.1", 0).start()
    print(server.url + "/slack/events", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
