"""The API on loopback: HTTP requests → API Gateway REST proxy events → the real ``api`` handler.

What API Gateway and its Cognito authorizer do in AWS, this does offline:

* ``Authorization: Bearer local:<user>`` is a local identity: the event carries
  ``requestContext.authorizer.claims.sub = <user>``, so owner checks can be tested with
  as many users as you like; ``local:<user>;groups=<g1>,<g2>`` adds the Cognito groups claim
  (``cognito:groups``), e.g. the admin group that may rotate the webhook secret. Anything else (no header, another scheme) answers 401
  ``{"message": "Unauthorized"}`` before the handler runs, as the authorizer would.
* Only loopback ``Host`` names are answered (DNS rebinding) and no CORS header is sent
  (``batchlane_dev.local.loopback``).
* Every other path serves the built web console (``console/dist``, built by ``make console``) on
  this same origin, so the console calls ``/api`` with no CORS; ``/_s3/...`` forwards a presigned
  S3 request (upload POST, ranged GET) to the emulated S3 unchanged, so the browser stays
  same-origin there too (docs/console.md "Uploads and ranged reads offline") — only one S3 would take: signed by a
  key of this stack, not expired, and a POST within its policy (``batchlane_dev.local.presigned``); else 403.
* The handler runs in this process through the same :class:`HandlerRegistry` the state
  machines use; a handler crash answers 502 like an API Gateway Lambda proxy.
* Each request is admitted through the registry's :class:`~batchlane_dev.local.lambda_runtime.ConcurrencyLimit` like any Invoke (the
  API shares the account with the workflows unless it has a reservation). Past it Lambda rejects the
  invocation and API Gateway answers 500 ``{"message": "Internal server error"}`` at once, the
  function not run and nothing retried (AWS Lambda Developer Guide, "Handling Lambda errors with an
  API Gateway API"); the CLI sends it again, backing off (``jobs_commands.retry_wait``). In this
  process there is one execution environment, which admitted requests wait for in arrival order;
  with ``api`` in ``process_functions`` each request has a worker of its own, as on Lambda, so no
  request waits behind another (tests/e2e/test_tenant_isolation.py runs it so).
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import mimetypes
import threading
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any

from werkzeug.serving import WSGIRequestHandler, make_server
from werkzeug.wrappers import Request, Response

from batchlane_dev.local import presigned
from batchlane_dev.local.lambda_runtime import HandlerRegistry, Throttled
from batchlane_dev.local.loopback import LoopbackOnly

log = logging.getLogger("batchlane_dev.local.api")
LOCAL_TOKEN_PREFIX = "local:"


def local_token(user: str) -> str:
    """The bearer token the offline API accepts for ``user``."""
    return f"{LOCAL_TOKEN_PREFIX}{user}"


class _Quiet(WSGIRequestHandler):
    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        pass


def identity(authorization: str | None) -> str | None:
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not token.startswith(LOCAL_TOKEN_PREFIX):
        return None
    return token[len(LOCAL_TOKEN_PREFIX) :].split(";", 1)[0].strip() or None


def groups(authorization: str | None) -> str | None:
    """The ``cognito:groups`` claim of a local token (``;groups=a,b``), as API Gateway passes it: text."""
    _, _, extra = (authorization or "").partition(";")
    key, _, value = extra.partition("=")
    return value.strip() or None if key.strip() == "groups" else None


def proxy_event(request: Request, user: str) -> dict[str, Any]:
    """The REST API (v1) Lambda proxy event API Gateway would send for ``request``."""
    raw = request.get_data()
    try:
        body, encoded = raw.decode(), False
    except UnicodeDecodeError:
        body, encoded = base64.b64encode(raw).decode(), True
    headers = {k: v for k, v in request.headers.items()}
    query = {k: request.args.getlist(k) for k in request.args}
    claims = {"sub": user, "cognito:username": user, "token_use": "id"}
    member_of = groups(request.headers.get("Authorization"))
    if member_of:
        claims["cognito:groups"] = member_of
    return {
        "resource": request.path,
        "path": request.path,
        "httpMethod": request.method,
        "headers": headers,
        "multiValueHeaders": {k: [v] for k, v in headers.items()},
        "queryStringParameters": {k: v[-1] for k, v in query.items()} or None,
        "multiValueQueryStringParameters": query or None,
        "pathParameters": None,
        "stageVariables": None,
        "body": body or None,
        "isBase64Encoded": encoded,
        "requestContext": {
            "resourcePath": request.path,
            "httpMethod": request.method,
            "path": request.path,
            "stage": "local",
            "requestId": uuid.uuid4().hex,
            "requestTimeEpoch": int(time.time() * 1000),
            "identity": {"sourceIp": request.remote_addr or "127.0.0.1"},
            "authorizer": {"claims": claims},
        },
    }


CONSOLE_DIR = Path(__file__).resolve().parents[3] / "console" / "dist"
S3_PROXY_PATH = "/_s3"
# The console's content security policy: nothing from outside (the model's Markdown is untrusted).
CONSOLE_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; font-src 'self' data:; "
    "connect-src 'self'; worker-src 'self' blob:; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {"Content-Security-Policy": CONSOLE_CSP, "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}
_FORWARDED = ("Content-Type", "Content-Length", "Content-Range", "Accept-Ranges", "ETag", "Last-Modified", "Content-Disposition", "Location")


def _gateway_error(status: int) -> Response:
    """API Gateway's own answer when the Lambda integration gives no response ("Handling Lambda errors with
    an API Gateway API", AWS Lambda Developer Guide): 500 when Lambda rejects the invocation (a throttle:
    the function never ran), 502 when the function ran and failed; the body is the same generic message.
    API Gateway retries neither: the client does (``batchlane_dev.cli.jobs_commands.retry_wait``). The body is the
    stack's DEFAULT_5XX gateway response (infra/api.py), in the API's one error shape."""
    return Response(json.dumps({"error": {"code": "GATEWAY_ERROR", "message": "Internal server error"}}), status=status, content_type="application/json")


class ArrivalOrderLock:
    """A lock taken in the order it was asked for (a ticket lock). ``threading.Lock`` lets any waiter win:
    under one owner's flood its back-to-back requests kept taking the one execution environment and a
    second owner's poll waited past its client's 30 s (tests/e2e/test_tenant_isolation.py); requests
    queued for one environment are served in arrival order."""

    def __init__(self) -> None:
        self._turns = threading.Condition()
        self._next = 0  # the ticket the next caller takes
        self._serving = 0  # the ticket whose holder has the lock

    @property
    def waiting(self) -> int:
        """Callers holding a ticket and not yet done: the holder and the queue behind it."""
        with self._turns:
            return self._next - self._serving

    def __enter__(self) -> None:
        with self._turns:
            ticket, self._next = self._next, self._next + 1
            self._turns.wait_for(lambda: self._serving == ticket)

    def __exit__(self, *exc: object) -> None:
        with self._turns:
            self._serving += 1
            self._turns.notify_all()


class LocalApiServer:
    def __init__(
        self,
        registry: HandlerRegistry,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        function: str = "api",
        s3_url: str | None = None,
        secret_for: presigned.SecretFor | None = None,
        check_contract: bool = False,
    ) -> None:
        self._registry = registry
        # Every /api answer checked against docs/api/openapi.yaml (batchlane_dev.contract) when asked: the tests' stacks
        # do, and OfflineStack.stop fails on what was found (issue 41.3: every API response validated in tests).
        self.check_contract = check_contract
        self.contract_violations: list[str] = []
        self._s3_url = s3_url
        self._secret_for: presigned.SecretFor = secret_for or (lambda key_id: None)  # no key known: every S3 request refused
        self._function = function
        self._server = make_server(host, port, LoopbackOnly(self._wsgi), threaded=True, request_handler=_Quiet)
        self._thread: threading.Thread | None = None
        self.url = f"http://{host}:{self._server.server_port}"
        # Powertools' resolver keeps the request in class attributes (BaseRouter.current_event) and in
        # app.context: one execution environment serves one event at a time, as on Lambda. In this
        # process that is one request at a time (two at once once answered a route with the other's
        # path arguments), in arrival order; in worker processes (process_functions) each worker is an environment.
        self._one_at_a_time = ArrivalOrderLock()

    @property
    def in_workers(self) -> bool:
        """Whether each request runs in an execution environment of its own (a worker process), as on AWS.
        Read per request: the stack gives the registry its workers after this server is made."""
        workers = self._registry.workers
        return workers is not None and self._function in workers.functions

    def _environment(self) -> ArrivalOrderLock | contextlib.nullcontext[None]:
        """The execution environment a request waits for: none in workers; the one of this process otherwise."""
        return contextlib.nullcontext() if self.in_workers else self._one_at_a_time

    def start(self) -> str:
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="local-api", daemon=True)
        self._thread.start()
        return self.url

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    @property
    def console_url(self) -> str:
        return self.url + "/"

    def _wsgi(self, environ: dict[str, Any], start_response: Any) -> Any:
        request = Request(environ)
        if request.path.startswith(S3_PROXY_PATH + "/") and self._s3_url:
            return self._s3(request)(environ, start_response)
        if not request.path.startswith("/api/"):
            return self._console(request)(environ, start_response)
        response = self._api(request)
        if self.check_contract:
            self._check(request, response)
        return response(environ, start_response)

    def _check(self, request: Request, response: Response) -> None:
        from batchlane_dev.contract import response_errors

        found = response_errors(request.method, request.path, response.status_code, response.get_data())
        if found:
            log.warning("api answer off its schema: %s", found)
            self.contract_violations.extend(found)

    def _api(self, request: Request) -> Response:
        """The answer API Gateway (its authorizer, the Lambda integration) would give."""
        user = identity(request.headers.get("Authorization"))
        if user is None:
            return Response(json.dumps({"error": {"code": "UNAUTHORIZED", "message": "Unauthorized"}}), status=401, content_type="application/json")
        try:
            # Lambda admits the invocation first (the account's concurrency or the API's reservation): past it,
            # rejected at once; only then does it wait for an execution environment (here: this process's one).
            with self._registry.admitted(self._function), self._environment():
                outcome = self._registry.invoke(self._function, proxy_event(request, user))
        except Throttled as exc:
            log.info("api invocation throttled: %s", exc)
            return _gateway_error(500)
        if outcome.failed or not isinstance(outcome.result, dict):
            log.warning("api handler failed: %s: %s", outcome.error_type, outcome.error_message)
            return _gateway_error(502)
        result = outcome.result
        body = result.get("body") or ""
        data = base64.b64decode(body) if result.get("isBase64Encoded") else body.encode()
        response = Response(data, status=int(result.get("statusCode", 200)))
        for key, values in (result.get("multiValueHeaders") or {}).items():
            for value in values:
                response.headers.add(key, value)
        for key, value in (result.get("headers") or {}).items():
            response.headers[key] = value
        return response

    def _console(self, request: Request) -> Response:
        """The built console (index.html for the app's own paths), with its security headers."""
        if request.path == "/console-config.json":
            config = {"mode": "local", "s3Proxy": {"origin": self._s3_url, "path": S3_PROXY_PATH} if self._s3_url else None}
            return Response(json.dumps(config), content_type="application/json", headers=SECURITY_HEADERS)
        relative = request.path.lstrip("/") or "index.html"
        target = (CONSOLE_DIR / relative).resolve()
        if not target.is_relative_to(CONSOLE_DIR.resolve()) or not target.is_file():
            target = CONSOLE_DIR / "index.html"
        if not target.is_file():
            return Response("The console is not built: run `make console`.", status=404, content_type="text/plain", headers=SECURITY_HEADERS)
        kind = mimetypes.guess_type(target.name)[0] or "application/octet-stream"
        if target.suffix == ".mjs":
            kind = "text/javascript"
        return Response(target.read_bytes(), content_type=kind, headers=SECURITY_HEADERS)

    def _s3(self, request: Request) -> Response:
        """Forward a presigned S3 request to the emulator as is (its signature covers the emulator's host), once it is
        one S3 would take (``batchlane_dev.local.presigned``): else 403 AccessDenied, as S3 answers, naming why."""
        if request.method not in ("GET", "POST", "HEAD") or not self._s3_url:
            return Response(status=405)
        raw_path, raw_query = presigned.parts(str(request.environ.get("RAW_URI") or request.full_path))
        raw_path = raw_path[len(S3_PROXY_PATH) :]
        data = request.get_data(cache=True) if request.method == "POST" else None  # kept whole: the form is read from it
        if request.method == "POST":
            upload = request.files.get("file")
            size = len(upload.read()) if upload is not None else -1
            refused = presigned.check_post(raw_path.strip("/").split("/", 1)[0], request.form.to_dict(), size, self._secret_for)
        else:
            refused = presigned.check_query(request.method, self._s3_url, raw_path, raw_query, self._secret_for)
        if refused is not None:
            log.warning("s3 proxy refused a %s: %s", request.method, refused)
            body = f"<Error><Code>AccessDenied</Code><Message>{refused}</Message></Error>"
            return Response(body, status=403, content_type="application/xml")
        url = self._s3_url + raw_path + (f"?{raw_query}" if raw_query else "")
        headers = {k: v for k, v in request.headers.items() if k in ("Range", "Content-Type")}
        forward = urllib.request.Request(url, data=data, method=request.method, headers=headers)
        try:
            with urllib.request.urlopen(forward, timeout=60) as answer:
                status, data, got = answer.status, answer.read(), answer.headers
        except urllib.error.HTTPError as exc:
            status, data, got = exc.code, exc.read(), exc.headers
        return Response(data, status=status, headers={k: got[k] for k in _FORWARDED if got.get(k) and k != "Content-Length"})
