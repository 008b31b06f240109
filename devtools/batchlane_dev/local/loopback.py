"""Every offline server answers loopback names only, and grants no cross-origin access.

The offline stack listens on 127.0.0.1, but a web page the developer opens can still reach
it by DNS rebinding (a name the attacker controls re-resolved to 127.0.0.1): the browser
then sends ``Host: attacker.example``. Checking ``Host`` refuses those requests; stripping
``Access-Control-*`` headers (moto's server adds ``Access-Control-Allow-Origin`` for any
``Origin``) keeps other origins from reading the answers.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def host_name(host_header: str | None) -> str:
    """The name part of a Host header (``[::1]:8080`` → ``::1``, ``localhost:80`` → ``localhost``)."""
    host = (host_header or "").strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else ""
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def is_loopback_host(host_header: str | None) -> bool:
    """True for 127.0.0.1, localhost, ::1 and *.localhost (RFC 6761: always loopback), with any port."""
    name = host_name(host_header)
    return name in LOOPBACK_NAMES or name.endswith(".localhost")


class LoopbackOnly:
    """WSGI middleware: 421 for a non-loopback ``Host``; no ``Access-Control-*`` header ever leaves."""

    def __init__(self, app: WsgiApp) -> None:
        self.app = app

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if not is_loopback_host(environ.get("HTTP_HOST")):
            body = json.dumps({"error": {"code": "HOST_NOT_ALLOWED", "message": "The offline stack answers loopback host names only."}}).encode()
            start_response("421 Misdirected Request", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
            return [body]

        def no_cors(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            kept = [(k, v) for k, v in headers if not k.lower().startswith("access-control-")]
            return start_response(status, kept, exc_info) if exc_info is not None else start_response(status, kept)

        if environ.get("REQUEST_METHOD") == "OPTIONS" and environ.get("HTTP_ORIGIN"):  # a CORS preflight: refused
            start_response("403 Forbidden", [("Content-Length", "0")])
            return [b""]
        return self.app(environ, no_cors)


def loopback_moto_server(ip_address: str, port: int) -> Any:
    """moto's ThreadedMotoServer (5.2.5) behind :class:`LoopbackOnly`, with its global CORS off."""
    from moto.moto_server import werkzeug_app
    from moto.server import ThreadedMotoServer
    from werkzeug.serving import make_server

    werkzeug_app.DISABLE_GLOBAL_CORS = True  # read when each service's backend app is created

    class LoopbackMotoServer(ThreadedMotoServer):
        app: WsgiApp  # what the server answers with, once started (local/inprocess.py serves it without the socket too)
        request_handler = werkzeug_app.MotoRequestHandler

        def _server_entry(self) -> None:  # ThreadedMotoServer._server_entry, the app wrapped
            self.app = LoopbackOnly(werkzeug_app.DomainDispatcherApplication(werkzeug_app.create_backend_app))
            self._server = make_server(self._ip_address, self._port, self.app, True, request_handler=werkzeug_app.MotoRequestHandler)
            self._server_ready_event.set()
            self._server.serve_forever(poll_interval=0.05)  # stop() waits for the next poll: 0.5 s a stack by default

    return LoopbackMotoServer(ip_address=ip_address, port=port, verbose=False)
