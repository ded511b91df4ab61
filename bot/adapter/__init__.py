"""Serving the App: HTTP (Starlette + uvicorn, signature-checked) or Socket Mode, plus health probes."""

from ._http import EVENTS_PATH, HttpAdapter, HttpServer, health_routes
from ._socket_mode import SocketModeAdapter

__all__ = ["EVENTS_PATH", "HttpAdapter", "HttpServer", "SocketModeAdapter", "health_routes"]
