"""AWS calls from the stack's own process to its own servers, without the loopback HTTP round trip.

The offline stack's handlers run in the process that serves moto and the Bedrock emulator (unless
``StackOptions.process_functions`` puts them in workers). Each of their AWS calls used to leave
botocore as an HTTP request on 127.0.0.1, be parsed again by werkzeug's server on a thread of its
own and come back the same way: profiled over the folder loop and the end-to-end suite, urllib3,
werkzeug's server and the thread per connection were about a third of the process's CPU, on the
same GIL as the handlers (docs/benchmarks.md "Folder growth", docs/testing.md).

Here botocore does everything it does on AWS (parameter validation, serialisation, the signature,
retries, response parsing, modelled errors) and only the transport differs, which is what moto's
own ``mock_aws`` does (its ``BotocoreStubber`` on ``before-send``). The request reaches the same
WSGI application the server runs, through the server's own environ builder (werkzeug's, plus
moto's preserved header names), so a request is read exactly as it would be off the socket.
Everything the handlers' calls go through that is *not* transport stays: the offline IAM
(``local/iam.py``, a check before botocore sends), loopback-only hosts, the emulator's faults.

A slow answer still times out: for a route served ``with_read_timeout`` (the Bedrock emulator, whose
latency faults outlast a short read timeout on purpose: tests/e2e/test_read_timeout.py) the request
runs on a thread of this module's pool and the caller waits for it as long as its client's read
timeout (the request's own override first, as botocore's urllib3 session resolves it); past it the
caller gets botocore's ``ReadTimeoutError`` and the request runs on to its end, as a server does
when its client hangs up. moto's answers have no latency to model: they run on the caller's thread.

Which calls still cross HTTP: every other process (the CLI, a daemon's clients, worker
processes of ``process_functions``, presigned URLs fetched with urllib) and every URL not
registered here. Served in-process, a request runs on the calling thread as the identity the
server's threads carry (AWS itself for moto, the Bedrock service for the emulator), so a thread
the server starts (a Step Functions execution, a batch job) acts as it would there.
"""

from __future__ import annotations

import concurrent.futures
import http.client
import io
import threading
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlsplit

import botocore.endpoint
from botocore.awsrequest import AWSPreparedRequest, AWSResponse
from botocore.exceptions import ReadTimeoutError
from urllib3 import Timeout
from urllib3._collections import HTTPHeaderDict
from urllib3.exceptions import ReadTimeoutError as URLLib3ReadTimeoutError

from batchlane_dev.local import iam
from batchlane_dev.local.loopback import WsgiApp

# Hop-by-hop headers urllib3 would settle on the wire; the body is whole here, so its length is known.
_TRANSPORT_HEADERS = frozenset({"transfer-encoding", "content-length", "host", "connection"})


class _Route:
    def __init__(self, app: WsgiApp, handler_class: type[Any], identity: str, server_address: tuple[str, int], with_read_timeout: bool) -> None:
        self.app = app
        self.with_read_timeout = with_read_timeout
        self.handler_class = handler_class
        self.identity = identity
        self.server = SimpleNamespace(ssl_context=None, multithread=True, multiprocess=False, server_address=server_address)
        self.requests = 0  # served in-process (tests read it: the short path is really taken)


_routes: dict[str, _Route] = {}
_lock = threading.Lock()
_original_send: Any = None
_slow_answers = concurrent.futures.ThreadPoolExecutor(max_workers=64, thread_name_prefix="inprocess-answer")


class _Body(io.BytesIO):
    """The response body as urllib3's response offers it to botocore: ``read(amt)`` and ``stream()``."""

    def stream(self, amt: int = 2**16, decode_content: bool | None = None) -> Iterator[bytes]:
        while chunk := self.read(amt):
            yield chunk


def serve(url: str, app: WsgiApp, *, handler_class: type[Any], identity: str, with_read_timeout: bool = False) -> None:
    """Requests this process sends to ``url`` (scheme://host:port) are answered by ``app`` in-process.

    ``handler_class`` is the server's request handler (its ``make_environ`` builds the WSGI environ);
    ``identity`` is who the server's threads act as (local/iam.py); ``with_read_timeout``: a caller stops
    waiting at its client's read timeout (above)."""
    parts = urlsplit(url)
    with _lock:
        _install()
        _routes[parts.netloc] = _Route(app, handler_class, identity, (parts.hostname or "127.0.0.1", parts.port or 80), with_read_timeout)


def withdraw(url: str | None) -> None:
    """Back to HTTP for ``url`` (the server is stopping)."""
    if url:
        with _lock:
            _routes.pop(urlsplit(url).netloc, None)


def served(url: str) -> int:
    """How many requests to ``url`` were answered in-process."""
    route = _routes.get(urlsplit(url).netloc)
    return route.requests if route else 0


def _install() -> None:
    global _original_send
    if _original_send is None:
        _original_send = botocore.endpoint.Endpoint._send

        def _send(self: botocore.endpoint.Endpoint, request: AWSPreparedRequest) -> Any:
            route = _routes.get(urlsplit(request.url).netloc)
            if route is None:
                return _original_send(self, request)
            if not route.with_read_timeout:
                return _dispatch(route, request)
            answer = _slow_answers.submit(_dispatch, route, request)
            try:
                return answer.result(timeout=_read_timeout(self, request))
            except concurrent.futures.TimeoutError:
                timed_out = URLLib3ReadTimeoutError(None, request.url, "Read timed out. (in-process)")  # type: ignore[arg-type]  # no pool here
                raise ReadTimeoutError(endpoint_url=request.url, error=timed_out) from None

        botocore.endpoint.Endpoint._send = _send  # type: ignore[method-assign]


def _read_timeout(endpoint: botocore.endpoint.Endpoint, request: AWSPreparedRequest) -> float | None:
    """The read timeout botocore's urllib3 session would apply: the request's override, else the client's."""
    override = (getattr(request, "context", None) or {}).get("read_timeout")
    if override is not None:
        return float(override)
    configured = endpoint.http_session._timeout
    if isinstance(configured, Timeout):
        value = configured.read_timeout
    elif isinstance(configured, tuple | list):
        value = configured[1]
    else:
        value = configured
    return float(value) if isinstance(value, int | float) else None


def _body_bytes(body: Any) -> bytes:
    if body is None:
        return b""
    if isinstance(body, bytes | bytearray | memoryview):
        return bytes(body)
    if isinstance(body, str):
        return body.encode()
    if hasattr(body, "read"):  # a file-like body (put_object with a file, aws-chunked wrappers)
        data = body.read()
        return data.encode() if isinstance(data, str) else bytes(data)
    return b"".join(part.encode() if isinstance(part, str) else bytes(part) for part in body)


def _environ(route: _Route, request: AWSPreparedRequest, data: bytes) -> dict[str, Any]:
    parts = urlsplit(request.url)
    headers = http.client.HTTPMessage()
    headers["Host"] = parts.netloc
    for name, value in request.headers.items():
        if name.lower() not in _TRANSPORT_HEADERS:
            headers[name] = value.decode("latin1") if isinstance(value, bytes) else str(value)
    headers["Content-Length"] = str(len(data))
    handler: Any = object.__new__(route.handler_class)  # the server's handler, without a socket
    handler.path = parts.path + (f"?{parts.query}" if parts.query else "")
    handler.command = request.method
    handler.headers = headers
    handler.rfile = io.BytesIO(data)
    handler.server = route.server
    handler.connection = None
    handler.client_address = ("127.0.0.1", 0)
    handler.request_version = "HTTP/1.1"
    environ: dict[str, Any] = handler.make_environ()
    return environ


def _dispatch(route: _Route, request: AWSPreparedRequest) -> AWSResponse:
    data = _body_bytes(request.body)
    environ = _environ(route, request, data)
    answer: dict[str, Any] = {}

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
        answer["status"], answer["headers"] = int(status.split(" ", 1)[0]), headers
        return lambda chunk: answer.setdefault("written", []).append(chunk)

    with iam.acting_as(route.identity):
        chunks = route.app(environ, start_response)
        try:
            body = b"".join([*answer.get("written", []), *chunks])
        finally:
            if hasattr(chunks, "close"):
                chunks.close()
    route.requests += 1
    if request.method == "HEAD":
        body = b""
    return AWSResponse(request.url, answer["status"], HTTPHeaderDict(answer["headers"]), _Body(body))
