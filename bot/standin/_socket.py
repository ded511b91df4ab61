"""A local stand-in for Slack's Socket Mode WebSocket, for driving a real Socket Mode client.

It speaks the protocol as Slack does: `hello` on each new connection, envelopes (`events_api`,
`interactive`, `slash_commands`) that the client acknowledges with `{"envelope_id": …}`, and
`disconnect` messages after which the client is expected to open a new connection. `drop()` ends
the TCP connection without a close frame (a reset, or a bare FIN), as a network failure would.
Envelopes go to the newest open connection; acknowledgements are collected from all of them.

Point `SlackStandIn.socket_url` at `url`, so `apps.connections.open` hands it out.
"""

from __future__ import annotations

import asyncio
import json
import socket
import struct
import threading
import time
import uuid
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed

T = TypeVar("T")
ENVELOPE_TYPES = ("events_api", "interactive", "slash_commands")
# Interactions whose ack may carry a response (errors, options); Slack flags them `accepts_response_payload`.
_RESPONDING = ("view_submission", "block_suggestion")


class SocketModeStandIn:
    """Thread-safe; `start()` binds host (127.0.0.1) on a free port. Use as a context manager."""

    def __init__(self, app_id: str = "A0001", host: str = "127.0.0.1", port: int = 0,
                 ping_interval: float | None = 20.0) -> None:
        self.app_id, self.host, self.port, self.ping_interval = app_id, host, port, ping_interval
        self.acks: list[dict[str, Any]] = []       # {"envelope_id": …, "payload"?: …} as the client sent them
        self.received: list[dict[str, Any]] = []   # anything else the client sent
        self.sent: list[dict[str, Any]] = []       # every message sent, hello included
        self.connections = 0                       # connections accepted so far
        self._open: list[ServerConnection] = []    # oldest first
        self._cond = threading.Condition()
        self._loop = asyncio.new_event_loop()
        self._server: Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    @property
    def url(self) -> str:
        """What `apps.connections.open` answers: ws://host:port/link/?ticket=…&app_id=…, like Slack's wss URL."""
        return f"ws://{self.host}:{self.port}/link/?ticket={uuid.uuid4()}&app_id={self.app_id}"

    def start(self) -> SocketModeStandIn:
        self._thread = threading.Thread(target=self._loop.run_forever, name="socket-mode-stand-in", daemon=True)
        self._thread.start()
        self._server = self._call(self._serve())
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def stop(self) -> None:
        """Close every connection (code 1001, going away) and the listening socket; stop the loop."""
        if self._server is not None:
            self._call(self._close(self._server), timeout=15)
            self._server = None
        if self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)
            self._thread = None
            self._loop.close()

    def __enter__(self) -> SocketModeStandIn:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    # -- what Slack sends --------------------------------------------------------------------
    def send_envelope(self, type: str, payload: dict[str, Any], retry_attempt: int = 0, retry_reason: str = "",
                      envelope_id: str | None = None) -> str:
        """Deliver `payload` (the body Slack would POST, as JSON; for `interactive`, the parsed `payload`
        field) to the newest connection; returns its envelope id, new unless given."""
        if type not in ENVELOPE_TYPES:
            raise ValueError(f"unknown envelope type {type!r} (one of {', '.join(ENVELOPE_TYPES)})")
        envelope_id = envelope_id or str(uuid.uuid4())
        responds = type == "slash_commands" or (type == "interactive" and payload.get("type") in _RESPONDING)
        self._send({"envelope_id": envelope_id, "type": type, "payload": payload, "accepts_response_payload": responds,
                    "retry_attempt": retry_attempt, "retry_reason": retry_reason or ("timeout" if retry_attempt else "")})
        return envelope_id

    def disconnect(self, reason: str = "refresh_requested") -> None:
        """Ask the newest connection's client to reconnect (`warning`, `refresh_requested`, `link_disabled`)."""
        self._send({"type": "disconnect", "reason": reason, "debug_info": {"host": "stand-in"}})

    def drop(self, reset: bool = True) -> None:
        """End the newest connection without a close frame, as a network failure would: a TCP reset
        (RST, a load balancer giving up on it), or with `reset=False` a plain FIN (a process that died)."""
        ws = self._newest()

        def abort() -> None:
            sock = ws.transport.get_extra_info("socket")
            if reset and sock is not None:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            ws.transport.abort()

        self._call(self._run(abort))

    # -- inspection ----------------------------------------------------------------------------
    @property
    def open_connections(self) -> int:
        with self._cond:
            return len(self._open)

    def wait_for_connections(self, count: int, timeout: float = 15.0) -> None:
        """Block until `count` connections were accepted in all (reconnects count); raises TimeoutError."""
        self._wait(lambda: self.connections >= count, timeout,
                   lambda: f"waited for {count} connection(s); got {self.connections}")

    def wait_for_ack(self, envelope_id: str, timeout: float = 15.0) -> dict[str, Any]:
        """The client's acknowledgement of `envelope_id`, once it came; raises TimeoutError."""
        def found() -> dict[str, Any] | None:
            return next((a for a in self.acks if a.get("envelope_id") == envelope_id), None)

        self._wait(lambda: found() is not None, timeout,
                   lambda: f"no ack for {envelope_id} (acked: {[a.get('envelope_id') for a in self.acks]})")
        with self._cond:
            ack = found()
        assert ack is not None
        return ack

    # -- internals -------------------------------------------------------------------------------
    async def _handle(self, ws: ServerConnection) -> None:
        with self._cond:
            self._open.append(ws)
            self.connections += 1
            hello = {"type": "hello", "num_connections": len(self._open),
                     "debug_info": {"host": "stand-in", "approximate_connection_time": 18060},
                     "connection_info": {"app_id": self.app_id}}
            self.sent.append(hello)
            self._cond.notify_all()
        try:
            await ws.send(json.dumps(hello))
            async for raw in ws:
                message = json.loads(raw)
                with self._cond:
                    is_ack = isinstance(message, dict) and "envelope_id" in message
                    (self.acks if is_ack else self.received).append(message)
                    self._cond.notify_all()
        except (ConnectionClosed, ValueError):
            pass  # the client went away, or sent something that is not JSON: Slack drops it too
        finally:
            with self._cond:
                self._open.remove(ws)
                self._cond.notify_all()

    def _newest(self) -> ServerConnection:
        with self._cond:
            if not self._open:
                raise ConnectionError("no client is connected to the Socket Mode stand-in")
            return self._open[-1]

    def _send(self, message: dict[str, Any]) -> None:
        ws = self._newest()
        with self._cond:
            self.sent.append(message)
        self._call(ws.send(json.dumps(message)))

    @staticmethod
    async def _run(fn: Callable[[], T]) -> T:
        return fn()

    async def _serve(self) -> Server:
        # slack-sdk's built-in client offers no extensions and never answers a close frame (hence the
        # short close_timeout); Slack's servers ping now and then, as this one does.
        return await serve(self._handle, self.host, self.port, compression=None, ping_interval=self.ping_interval,
                           close_timeout=1)

    @staticmethod
    async def _close(server: Server) -> None:
        server.close()
        await server.wait_closed()

    def _call(self, coro: Coroutine[Any, Any, T], timeout: float = 5.0) -> T:
        """Run `coro` on the stand-in's loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def _wait(self, done: Callable[[], bool], timeout: float, why: Callable[[], str]) -> None:
        deadline = time.monotonic() + timeout
        with self._cond:
            while not done():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(why())
                self._cond.wait(left)
