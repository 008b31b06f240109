"""The two places moto needs help to run our deployment (docs/offline.md, the table at the top).

1. Lambda: without Docker moto only echoes payloads. ``LambdaSimpleBackend.invoke`` is
   routed to :class:`HandlerRegistry`, so Step Functions' ``lambda:invoke`` tasks run our
   real handlers; a raised exception becomes a function error whose ``errorType`` is the
   exception class name, exactly as Lambda reports it (Retry/Catch match on it). Past the
   registry's :class:`ConcurrencyLimit` the Invoke answers 429 TooManyRequestsException, as
   Lambda does when a function's concurrency is full (issue 21).
2. EventBridge: moto matches rules itself (real pattern matching) but raises
   NotImplementedError for Lambda and Step Functions targets. Those targets are
   delivered here, asynchronously, as EventBridge does; other targets keep moto's path.

And three places where moto's cost grows with what it holds, or is paid again on every
call, where AWS's does not (issue 27: a folder of 10^4 files offline was quadratic):

3. S3 ListObjects by prefix walks every key of the bucket through its versioned store (a
   Python call per key): a folder job lists each file's image prefix, so N files cost
   O(N^2). Here the names are filtered first and moto lists only the matching keys, with its
   own code (same result, same order, same pagination).
4. Step Functions' Lambda tasks build a new boto3 client (and TCP connection, and a moto
   server thread) for every task; here one client per Region and service is reused.
5. Every request to the moto server lists moto's package directory to find its backend;
   here the list is read once.
6. werkzeug reads a request body 64 KB at a time into a growing buffer, then copies it: a lane's
   JSONL shards (10 MB each, 261 MB for a real book) held moto's request threads for ~4,000 Python
   calls and two extra copies per book on the GIL the handlers need. Here a body of known length is
   read into one buffer of its size (same bytes, same errors on a short body).
7. Step Functions lexes and parses a state machine's whole definition (antlr, in Python: 25-240 ms of
   CPU) at create and again at every StartExecution; a folder of 10^3 files parsed the conversion's
   definition 10^3 times. Here the parse tree is kept per definition text and only moto's preprocessing
   (a few ms, a fresh program per execution, as before) runs again; a definition that fails to parse is
   never kept, so its error is raised every time as moto raises it.
8. Every InputPath, OutputPath, ResultPath and ``.$`` parameter is a JSONPath that moto parses again at
   every state of every execution, and jsonpath_ng builds its parser (ply's tables) at every parse: ~8 %
   of the stack's CPU over a folder of 100 files. Here each path's parsed expression is kept per path
   text (jsonpath_ng's expressions hold no state between ``find`` calls; same answers, same errors).
9. A test that runs a retry ladder out for its count (tests/e2e/test_lambda_throttle.py) may run its waits
   ``StackOptions.retry_time_scale`` times faster: the Retrier's sleep is divided by it (1: as written, the
   default). The tries, their order and their outcome are moto's; only the seconds between them shrink.
10. Two PUTs of one key at once (two executions of one lane writing the same summary): S3 answers both, the
   last one wins. moto stores the second key and closes the first one's buffer while the first request still
   computes its ETag from it: "I/O operation on closed file", a 500 that S3 never gives. Here a key's ETag is
   computed when the key is made, from its own buffer (the same MD5 moto computes for the PUT's answer).
"""

from __future__ import annotations

import copy
import functools
import json
import logging
import threading
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import moto.backends
from botocore.client import BaseClient
from moto.awslambda.exceptions import LambdaClientError
from moto.awslambda_simple.models import LambdaSimpleBackend
from moto.events.models import Rule
from moto.s3.models import FakeKey, FakeTableStorageBucket, S3Backend
from moto.s3.utils import _VersionedKeyStore
from moto.stepfunctions.parser.asl.component.common.path import result_path
from moto.stepfunctions.parser.asl.component.common.retry import retrier_decl
from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser
from moto.stepfunctions.parser.asl.parse.preprocessor import Preprocessor
from moto.stepfunctions.parser.asl.utils import boto_client as sfn_boto_client
from moto.stepfunctions.parser.asl.utils import json_path
from moto.utilities.arns import parse_arn
from werkzeug.wsgi import LimitedStream

from batchlane_dev.local.lambda_runtime import HandlerRegistry, Throttled

log = logging.getLogger("batchlane_dev.local.patches")

_state: dict[str, Any] = {"registry": None, "start_execution": None, "retry_time_scale": 1.0}
_installed = False
_original_send_to_targets = Rule.send_to_targets
_original_list_objects = S3Backend.list_objects
_original_boto_client_for = sfn_boto_client.boto_client_for
_original_list_of_moto_modules = moto.backends.list_of_moto_modules
_original_readall = LimitedStream.readall
_original_parse = AmazonStateLanguageParser.parse


def _invoke(self: LambdaSimpleBackend, function_name: str, qualifier: str | None, body: Any, headers: Any, response_headers: Any) -> bytes:
    registry: HandlerRegistry | None = _state["registry"]
    if registry is None:
        raise RuntimeError("offline Lambda runtime not attached")
    event = json.loads(body) if body else {}
    if headers.get("X-Amz-Invocation-Type") == "Event":
        threading.Thread(target=_invoke_async, args=(registry, function_name, event), daemon=True, name=f"async-{function_name}").start()
        return b""
    try:
        with registry.admitted(function_name):
            outcome = registry.invoke(function_name, event)
    except Throttled as exc:  # Step Functions names it Lambda.TooManyRequestsException
        raise _TooManyRequests(str(exc)) from exc
    if outcome.failed:
        response_headers["x-amz-function-error"] = "Unhandled"
        return json.dumps({"errorType": outcome.error_type, "errorMessage": outcome.error_message}).encode()
    return json.dumps(outcome.result).encode()


class _TooManyRequests(LambdaClientError):
    code = 429

    def __init__(self, message: str) -> None:
        super().__init__("TooManyRequestsException", message)


def _invoke_async(registry: HandlerRegistry, function_name: str, event: Any) -> None:
    """An asynchronous invoke is queued by Lambda and retried while throttled (for up to 6 hours)."""
    while True:
        try:
            with registry.admitted(function_name):
                registry.invoke(function_name, event)
            return
        except Throttled:
            time.sleep(0.05)


def _deliver(registry: HandlerRegistry, start_execution: Callable[[str, dict[str, Any]], None], arn: str, event: dict[str, Any]) -> None:
    service = parse_arn(arn).service
    for attempt in range(3):  # EventBridge retries failed deliveries (up to 185 times; 3 is enough offline)
        try:
            if service == "lambda":
                outcome = registry.invoke(arn, event)
                if outcome.failed:
                    raise RuntimeError(f"{outcome.error_type}: {outcome.error_message}")
            else:
                start_execution(arn, event)
            return
        except Exception as exc:
            log.warning("event delivery to %s failed (attempt %d): %s", arn, attempt + 1, exc)
    log.error("event delivery to %s gave up", arn)


def _send_to_targets(self: Rule, original_event: dict[str, Any], transform_input: bool = True) -> None:
    if not self.event_pattern.matches_event(original_event):  # type: ignore[arg-type]
        return
    ours = [t for t in self.targets if parse_arn(t["Arn"]).service in ("lambda", "states")]
    others = [t for t in self.targets if t not in ours]
    registry = _state["registry"]
    for target in ours:
        event = json.loads(target["Input"]) if target.get("Input") else copy.deepcopy(original_event)
        threading.Thread(target=_deliver, args=(registry, _state["start_execution"], target["Arn"], event), daemon=True, name="eventbridge-target").start()
    if others:
        rest = copy.copy(self)
        rest.targets = others
        _original_send_to_targets(rest, original_event, transform_input)  # type: ignore[arg-type]


def _list_objects(self: S3Backend, bucket: Any, prefix: str | None, delimiter: str | None, marker: str | None, max_keys: int | None) -> Any:
    """moto's listing over the keys whose names start with ``prefix`` only (3. above)."""
    if not prefix or isinstance(bucket, FakeTableStorageBucket):
        return _original_list_objects(self, bucket, prefix, delimiter, marker, max_keys)
    store = bucket.keys
    matching = _VersionedKeyStore()
    for name in list(dict.keys(store)):  # one C-level copy: a put on another thread cannot break the walk
        if name.startswith(prefix):
            versions = dict.get(store, name)
            if versions is not None:
                dict.__setitem__(matching, name, versions)
    view = copy.copy(bucket)  # moto's list_objects reads only the bucket's keys (and its type)
    view.keys = matching
    return _original_list_objects(self, view, prefix, delimiter, marker, max_keys)


_clients: dict[tuple[str, str, str | None], BaseClient] = {}
_clients_lock = threading.Lock()


def _boto_client_for(region: str, service: str, state_credentials: Any = None) -> BaseClient:
    """One client per Region, service and endpoint for moto's Step Functions tasks (4. above); its credentials
    are moto's fixed ones whatever ``state_credentials`` says, as in moto's own function."""
    import moto.settings

    key = (region, service, str(moto.settings.moto_server_port()))
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            client = _clients[key] = _original_boto_client_for(region, service, state_credentials)
        return client


_module_names: list[str] = []


def _list_of_moto_modules() -> list[str]:
    """moto's backends, listed once (5. above)."""
    if not _module_names:
        _module_names.extend(_original_list_of_moto_modules())
    return _module_names


def _readall(self: LimitedStream) -> bytes:
    """A body of known length (Content-Length) read into one buffer of its size (6. above); a body whose limit is
    only a maximum, werkzeug's way. A short body raises ClientDisconnected as werkzeug's does (readinto)."""
    if self._limit_is_max or self.is_exhausted:
        return _original_readall(self)
    buffer = bytearray(self.limit - self._pos)
    view = memoryview(buffer)
    filled = 0
    while filled < len(buffer):
        got = self.readinto(view[filled:])  # type: ignore[arg-type]  # werkzeug annotates bytearray; it fills any writable buffer
        if not got:
            break
        filled += got
    return bytes(view[:filled])


_parse_trees: dict[str, Any] = {}
_parse_trees_lock = threading.Lock()


def _parse_definition(definition: str) -> tuple[Any, Any]:
    """moto's ``AmazonStateLanguageParser.parse`` with the antlr parse tree kept per definition (7. above)."""
    with _parse_trees_lock:
        tree = _parse_trees.get(definition)
    if tree is None:
        _, tree = _original_parse(definition)  # raises ASLParserException as moto does; nothing kept then
        with _parse_trees_lock:
            _parse_trees[definition] = tree
    return Preprocessor().visit(tree), tree


# 8. above: each JSONPath's parsed expression kept per path text (lru_cache keeps no failure: a bad path raises every time).
_original_jsonpath_ext_parse = json_path.parse  # jsonpath_ng.ext's parser (filters, arithmetic): paths and ``.$`` fields
_original_jsonpath_parse = result_path.parse  # jsonpath_ng's plain one: ResultPath
_cached_jsonpath_ext_parse = functools.lru_cache(maxsize=4096)(_original_jsonpath_ext_parse)
_cached_jsonpath_parse = functools.lru_cache(maxsize=4096)(_original_jsonpath_parse)


_original_fake_key_init = FakeKey.__init__


def _fake_key_init(self: FakeKey, *args: Any, **kwargs: Any) -> None:
    """10. above: the ETag taken while the key's buffer is its own (a later PUT of the key disposes it)."""
    _original_fake_key_init(self, *args, **kwargs)
    _ = self.etag  # cached in _etag; a key made with its ETag (copies, multipart) reads nothing


def _install_speedups() -> None:
    import sys

    FakeKey.__init__ = _fake_key_init  # type: ignore[method-assign]

    AmazonStateLanguageParser.parse = staticmethod(_parse_definition)  # type: ignore[method-assign, assignment]
    LimitedStream.readall = _readall  # type: ignore[method-assign]
    S3Backend.list_objects = _list_objects  # type: ignore[method-assign]
    moto.backends.list_of_moto_modules = _list_of_moto_modules
    json_path.parse = _cached_jsonpath_ext_parse
    retrier_decl.time = SimpleNamespace(sleep=_retry_sleep)  # type: ignore[assignment]  # the module's only use of time
    result_path.parse = _cached_jsonpath_parse
    sfn_boto_client.boto_client_for = _boto_client_for  # modules imported later take this one
    for module in list(sys.modules.values()):  # the modules that imported moto's function by name
        if module is not None and getattr(module, "boto_client_for", None) is _original_boto_client_for:
            module.boto_client_for = _boto_client_for  # type: ignore[attr-defined]


def _retry_sleep(seconds: float) -> None:
    """The Retrier's wait between tries, ``retry_time_scale`` times shorter (9. above)."""
    time.sleep(seconds / _state["retry_time_scale"])


def install(registry: HandlerRegistry, start_execution: Callable[[str, dict[str, Any]], None], *, retry_time_scale: float = 1.0) -> None:
    """Attach the registry (idempotent; the latest stack's registry and retry time scale win)."""
    global _installed
    _state["registry"] = registry
    _state["start_execution"] = start_execution
    _state["retry_time_scale"] = retry_time_scale
    if not _installed:
        LambdaSimpleBackend.invoke = _invoke  # type: ignore[method-assign]
        Rule.send_to_targets = _send_to_targets  # type: ignore[method-assign, assignment]
        _install_speedups()
        _installed = True
