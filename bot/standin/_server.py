"""A local stand-in for Slack's Web API that records every call, as slack-bolt's own tests use.

It answers the methods the bot calls (`auth.test`, `chat.postMessage`, `chat.update`,
`chat.postEphemeral`, `files.info`, `conversations.replies`, `views.open`,
`apps.connections.open`: with `app_token`, it answers `socket_url`, a `SocketModeStandIn`'s URL),
serves private file downloads (bot token required, as Slack does) and accepts `response_url`
posts. Failures are queued per method with `fail_next` (a 429 with Retry-After, `not_in_channel`,
a 500…). Point `SLACK_API_URL` at `api_url` to use it.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import threading
import time
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from collections.abc import Callable

DEFAULT_TOKEN = "xoxb-stand-in"
DEFAULT_APP_TOKEN = "xapp-1-A0001-stand-in"
CHUNK = 1 << 20


@dataclasses.dataclass
class Call:
    """One request the stand-in received: `method` is the API method, `download` or `response_url`."""

    method: str
    path: str
    headers: dict[str, str]
    args: dict[str, Any]
    at: float  # time.perf_counter() on arrival

    @property
    def text(self) -> str:
        """Everything a reader would see: the fallback text and every text in the blocks."""
        parts = [str(self.args.get("text") or "")]
        blocks = self.args.get("blocks")
        if isinstance(blocks, str):
            try:
                blocks = json.loads(blocks)
            except ValueError:
                blocks = None
        parts += _texts(blocks or [])
        return "\n".join(parts)

    @property
    def blocks(self) -> list[dict[str, Any]]:
        blocks = self.args.get("blocks") or []
        return json.loads(blocks) if isinstance(blocks, str) else list(blocks)


@dataclasses.dataclass
class _Failure:
    status: int
    body: dict[str, Any]
    headers: dict[str, str]


class SlackStandIn:
    """Thread-safe; `start()` binds 127.0.0.1 on a free port. Use as a context manager."""

    def __init__(self, token: str = DEFAULT_TOKEN, bot_user_id: str = "UBOT", bot_id: str = "BBOT",
                 team_id: str = "T0001", host: str = "127.0.0.1", port: int = 0,
                 app_token: str = DEFAULT_APP_TOKEN) -> None:
        self.token, self.bot_user_id, self.bot_id, self.team_id = token, bot_user_id, bot_id, team_id
        self.app_token = app_token
        self.calls: list[Call] = []
        self.files: dict[str, dict[str, Any]] = {}
        self.contents: dict[str, bytes] = {}
        self.threads: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self.left_channels: set[str] = set()   # channels the bot is no longer in (no permalinks there)
        self.socket_url: str | None = None     # what apps.connections.open answers (default: nothing listens there)
        self._failures: dict[str, list[_Failure]] = {}
        self._lock = threading.Condition()
        self._ts = itertools.count(1)
        self._server = ThreadingHTTPServer((host, port), _handler_for(self))
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}" if isinstance(host, str) else f"http://{host.decode()}:{port}"

    @property
    def api_url(self) -> str:
        return self.base_url + "/api/"

    def start(self) -> SlackStandIn:
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="slack-stand-in", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> SlackStandIn:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    # -- fixtures ------------------------------------------------------------------------------
    def add_file(self, name: str, content: bytes, *, mimetype: str = "text/plain", filetype: str = "text",
                 channel: str | None = None, ts: str | None = None, file_id: str | None = None,
                 size: int | None = None) -> dict[str, Any]:
        """Register a file and return its Slack file object (as a `message` event would carry it)."""
        fid = file_id or "F" + uuid.uuid4().hex[:10].upper()
        obj: dict[str, Any] = {
            "id": fid, "name": name, "title": name, "mimetype": mimetype, "filetype": filetype,
            "size": len(content) if size is None else size, "mode": "hosted",
            "url_private": f"{self.base_url}/files-pri/{self.team_id}-{fid}/{urllib.parse.quote(name)}",
            "url_private_download": f"{self.base_url}/files-pri/{self.team_id}-{fid}/download/{urllib.parse.quote(name)}",
            "shares": {"public": {channel: [{"ts": ts, "channel_name": "incidents"}]}} if channel and ts else {},
        }
        with self._lock:
            self.files[fid] = obj
            self.contents[fid] = content
        return dict(obj)

    def add_thread(self, channel: str, messages: list[dict[str, Any]]) -> None:
        """Messages of one thread, parent first; `conversations.replies` answers with them."""
        with self._lock:
            self.threads[(channel, str(messages[0]["ts"]))] = messages

    def response_url(self, key: str | None = None) -> str:
        return f"{self.base_url}/response/{key or uuid.uuid4().hex}"

    def fail_next(self, method: str, *, error: str = "ratelimited", status: int | None = None,
                  headers: dict[str, str] | None = None, times: int = 1) -> None:
        """Make the next `times` calls of `method` fail; `ratelimited` defaults to HTTP 429, Retry-After 1."""
        if status is None:
            status = 429 if error == "ratelimited" else 200
        if headers is None and error == "ratelimited":
            headers = {"Retry-After": "1"}
        with self._lock:
            self._failures.setdefault(method, []).extend(
                _Failure(status, {"ok": False, "error": error}, headers or {}) for _ in range(times))

    # -- inspection ------------------------------------------------------------------------------
    def calls_to(self, method: str) -> list[Call]:
        with self._lock:
            return [c for c in self.calls if c.method == method]

    def wait_for(self, method: str, count: int = 1, timeout: float = 15.0,
                 where: Callable[[Call], bool] | None = None) -> list[Call]:
        """Block until `count` matching calls arrived; raises TimeoutError with what did arrive."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while True:
                found = [c for c in self.calls if c.method == method and (where is None or where(c))]
                if len(found) >= count:
                    return found
                left = deadline - time.monotonic()
                if left <= 0:
                    seen = ", ".join(c.method for c in self.calls) or "nothing"
                    raise TimeoutError(f"waited for {count} {method} call(s); got {len(found)} (all calls: {seen})")
                self._lock.wait(left)

    def reset(self) -> None:
        with self._lock:
            self.calls.clear()
            self._failures.clear()

    # -- internals -------------------------------------------------------------------------------
    def _record(self, call: Call) -> None:
        with self._lock:
            self.calls.append(call)
            self._lock.notify_all()

    def _failure(self, method: str) -> _Failure | None:
        with self._lock:
            queue = self._failures.get(method)
            return queue.pop(0) if queue else None

    def _next_ts(self) -> str:
        n = next(self._ts)
        return f"{1_700_000_000 + n}.{n:06d}"

    def answer(self, method: str, args: dict[str, Any], token: str | None) -> dict[str, Any]:
        if method == "apps.connections.open":  # the one method that takes the app-level token
            if token != self.app_token:
                return {"ok": False, "error": "not_allowed_token_type" if token == self.token else "invalid_auth"}
            return {"ok": True, "url": self.socket_url or f"ws://{self.base_url[7:]}/socket"}
        if token != self.token:
            return {"ok": False, "error": "invalid_auth"}
        if method == "auth.test":
            return {"ok": True, "url": "https://stand-in.slack.com/", "team": "Stand-in", "user": "servetriage",
                    "team_id": self.team_id, "user_id": self.bot_user_id, "bot_id": self.bot_id}
        if method in ("chat.postMessage", "chat.update"):
            ts = args.get("ts") if method == "chat.update" else self._next_ts()
            return {"ok": True, "channel": args.get("channel"), "ts": ts,
                    "message": {"text": args.get("text"), "ts": ts, "bot_id": self.bot_id}}
        if method == "chat.getPermalink":
            channel, ts = str(args.get("channel")), str(args.get("message_ts"))
            if channel in self.left_channels:
                return {"ok": False, "error": "channel_not_found"}
            return {"ok": True, "channel": channel,
                    "permalink": f"https://stand-in.slack.com/archives/{channel}/p{ts.replace('.', '')}"}
        if method == "chat.postEphemeral":
            return {"ok": True, "message_ts": self._next_ts()}
        if method == "views.open":
            return {"ok": True, "view": {"id": "V" + uuid.uuid4().hex[:8].upper(), **_json_arg(args.get("view"))}}
        if method == "files.info":
            with self._lock:
                obj = self.files.get(str(args.get("file")))
            return {"ok": True, "file": obj} if obj else {"ok": False, "error": "file_not_found"}
        if method == "conversations.replies":
            with self._lock:
                msgs = self.threads.get((str(args.get("channel")), str(args.get("ts"))))
            return {"ok": True, "messages": msgs, "has_more": False} if msgs else {"ok": False, "error": "thread_not_found"}
        return {"ok": False, "error": "unknown_method"}


def _handler_for(stand_in: SlackStandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            path = urllib.parse.urlsplit(self.path).path
            args = _parse(raw, self.headers.get("Content-Type", ""), urllib.parse.urlsplit(self.path).query)
            headers = {k.lower(): v for k, v in self.headers.items()}
            if path.startswith("/response/"):
                stand_in._record(Call("response_url", path, headers, args, time.perf_counter()))
                self._send(200, b"ok", "text/plain")
                return
            if not path.startswith("/api/"):
                self._send(404, b"not found", "text/plain")
                return
            method = path[len("/api/"):]
            stand_in._record(Call(method, path, headers, args, time.perf_counter()))
            failure = stand_in._failure(method)
            if failure is not None:
                self._send(failure.status, json.dumps(failure.body).encode(), "application/json", failure.headers)
                return
            auth = headers.get("authorization", "")
            token = auth[7:] if auth.lower().startswith("bearer ") else args.get("token")
            self._send(200, json.dumps(stand_in.answer(method, args, token)).encode(), "application/json")

        def do_GET(self) -> None:
            path = urllib.parse.urlsplit(self.path).path
            headers = {k.lower(): v for k, v in self.headers.items()}
            stand_in._record(Call("download", path, headers, {}, time.perf_counter()))
            failure = stand_in._failure("download")
            if failure is not None:
                self._send(failure.status, b"failed", "text/plain", failure.headers)
                return
            parts = path.split("/")
            fid = parts[2].split("-", 1)[-1] if len(parts) > 2 and parts[1] == "files-pri" else ""
            with stand_in._lock:
                content = stand_in.contents.get(fid)
            if headers.get("authorization") != f"Bearer {stand_in.token}":
                self._send(200, b"<!DOCTYPE html><html>Sign in to Slack</html>", "text/html; charset=utf-8")
                return
            if content is None:
                self._send(404, b"not found", "text/plain")
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(content)))
            self.end_headers()
            view = memoryview(content)
            try:
                for i in range(0, len(content), CHUNK):
                    self.wfile.write(view[i:i + CHUNK])
            except (BrokenPipeError, ConnectionResetError):
                pass  # the reader stopped at its size limit

        def _send(self, status: int, body: bytes, ctype: str, headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)

    return Handler


def _parse(raw: bytes, ctype: str, query: str) -> dict[str, Any]:
    args: dict[str, Any] = dict(urllib.parse.parse_qsl(query))
    if not raw:
        return args
    if "json" in ctype:
        try:
            body = json.loads(raw)
        except ValueError:
            body = {}
        args.update(body if isinstance(body, dict) else {})
    else:
        args.update(urllib.parse.parse_qsl(raw.decode("utf-8", "replace"), keep_blank_values=True))
    return args


def _json_arg(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        try:
            parsed: dict[str, Any] = json.loads(value)
            return parsed
        except ValueError:
            return {}
    return dict(value or {})


def _texts(node: Any) -> list[str]:
    out: list[str] = []
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "text" and isinstance(v, str):
                out.append(v)
            else:
                out.extend(_texts(v))
    elif isinstance(node, list):
        for v in node:
            out.extend(_texts(v))
    return out
