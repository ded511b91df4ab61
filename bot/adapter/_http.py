"""HTTP mode: Bolt behind Starlette under uvicorn, with the probes an orchestrator expects.

`/slack/events` takes events, slash commands and interactivity alike (Bolt tells them apart and
verifies Slack's v0 signature and 5-minute window, answering 401 otherwise). Bolt's dispatch is
synchronous, so it runs in Starlette's thread pool instead of blocking the event loop.

`/manual/` serves the incident manual that replies link (`Settings.manual_base_url`): rendered from
the corpus into memory when the adapter is built, and answered only from there, so a path that
names no page of it (`..`, a directory, anything else) is a 404 and no file is ever read.
"""

from __future__ import annotations

import functools
import logging
import socket
import threading
from pathlib import Path

import uvicorn
from slack_bolt.adapter.starlette.handler import to_bolt_request, to_starlette_response
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from servetriage._errors import ConfigError
from servetriage.corpus import INDEX_PAGE, Manual, load_corpus, render_manual

from .._metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from .._metrics import Metrics
from ..app import BotApp, Readiness

log = logging.getLogger(__name__)

EVENTS_PATH = "/slack/events"
MANUAL_PATH = "/manual"
MAX_BODY_BYTES = 1 << 20  # Slack's payloads are a few KB; anything larger is not Slack
# The manual is plain HTML with an inline stylesheet: nothing else may load or run in its pages.
_MANUAL_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-cache",
}


def health_routes(readiness: Readiness) -> list[Route]:
    """`/healthz`: the process answers. `/readyz`: the diagnoser is warm (503 with the reason until then)."""

    async def healthz(_: Request) -> Response:
        return PlainTextResponse("ok")

    async def readyz(_: Request) -> Response:
        if readiness.ready:
            return JSONResponse({"ready": True, "warm_seconds": readiness.warm_seconds})
        return JSONResponse({"ready": False, "error": readiness.error}, status_code=503)

    return [Route("/healthz", healthz, methods=["GET"]), Route("/readyz", readyz, methods=["GET"])]


def metrics_routes(metrics: Metrics) -> list[Route]:
    """`/metrics`: Prometheus's text format (see `bot._metrics` for the names)."""

    async def scrape(_: Request) -> Response:
        body = await run_in_threadpool(metrics.exposition)
        return Response(body, media_type=METRICS_CONTENT_TYPE)

    return [Route("/metrics", scrape, methods=["GET"])]


def manual_routes(manual: Manual) -> list[Route]:
    """GET `/manual/` (the index) and `/manual/<page>.html`, from the pages in memory; 404 otherwise."""

    def page(name: str) -> Response:
        body = manual.page(name)
        if body is None:
            return PlainTextResponse("not found", status_code=404)
        return Response(body, media_type="text/html; charset=utf-8", headers=_MANUAL_HEADERS)

    async def index(_: Request) -> Response:
        return page(INDEX_PAGE)

    async def one(request: Request) -> Response:
        return page(str(request.path_params["page"]))

    return [Route(f"{MANUAL_PATH}/", index, methods=["GET"]), Route(f"{MANUAL_PATH}/{{page}}", one, methods=["GET"])]


@functools.lru_cache(maxsize=4)
def built_manual(extra_corpus_dirs: tuple[Path, ...] = ()) -> Manual:
    """The manual of the corpus the engine reads (the packaged one plus SERVETRIAGE_CORPUS_DIRS),
    rendered once per process."""
    return render_manual(load_corpus(extra_corpus_dirs))


class HttpAdapter:
    """The ASGI application for one `BotApp`: Slack's events, the probes and the manual."""

    def __init__(self, bot: BotApp, path: str = EVENTS_PATH, manual: Manual | None = None) -> None:
        if not bot.settings.slack_signing_secret:
            raise ConfigError("HTTP mode needs SLACK_SIGNING_SECRET (or set SLACK_APP_TOKEN for Socket Mode)")
        self.bot = bot
        self.path = path
        # Built at start-up, so a corpus that cannot be rendered stops the bot before it answers anyone.
        self.manual = manual if manual is not None else built_manual(tuple(bot.settings.extra_corpus_dirs))

    async def events(self, request: Request) -> Response:
        body = await request.body()
        if len(body) > MAX_BODY_BYTES:
            return PlainTextResponse("payload too large", status_code=413)
        bolt_resp = await run_in_threadpool(self.bot.app.dispatch, to_bolt_request(request, body))
        return to_starlette_response(bolt_resp)

    def asgi(self) -> Starlette:
        return Starlette(routes=[Route(self.path, self.events, methods=["POST"]), *health_routes(self.bot.readiness),
                                 *metrics_routes(self.bot.metrics), *manual_routes(self.manual)])


class HttpServer:
    """uvicorn on a socket bound at construction, so port 0 works and `.port` is known before serving."""

    def __init__(self, asgi: Starlette, host: str, port: int) -> None:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.sock.bind((host, port))
        except OSError as exc:
            self.sock.close()
            raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
        self.sock.listen(128)
        self.host, self.port = host, self.sock.getsockname()[1]
        config = uvicorn.Config(asgi, lifespan="off", access_log=False, log_level="warning", timeout_keep_alive=30)
        self.server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def run(self) -> None:
        """Serve in this thread until SIGINT/SIGTERM (uvicorn handles the signals in the main thread)."""
        log.info("listening on %s%s (the manual at %s%s/)", self.url, EVENTS_PATH, self.url, MANUAL_PATH)
        self.server.run(sockets=[self.sock])

    def start(self) -> HttpServer:
        """Serve on a background thread (tests, Socket Mode's probes); returns once accepting."""
        self._thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]},
                                        name="servetriage-http", daemon=True)
        self._thread.start()
        while not self.server.started and self._thread.is_alive():
            self._thread.join(0.01)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        if self._thread is not None:
            self._thread.join(5)
        self.sock.close()
