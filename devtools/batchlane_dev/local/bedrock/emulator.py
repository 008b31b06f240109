"""The offline Bedrock service: one HTTP server for ``bedrock`` and ``bedrock-runtime``, reached through boto3's real request path.

Routes and behaviour: docs/offline.md "Module notes".
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any
from urllib.parse import unquote

from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server
from werkzeug.wrappers import Request, Response

from batchlane.domain.cost import PriceTable, Usage
from batchlane.domain.records import RETRY_SUFFIX, parse_record_id, split_pooled_record_id
from batchlane_dev.local.loopback import LoopbackOnly

from .catalog import ModelCatalog
from .clock import EmulatedClock
from .control_plane import ControlPlane
from .converse import ConverseRuntime, ServedCall
from .errors import ApiError
from .events import EventDispatcher, PublishEvent
from .faults import Faults
from .job import TERMINAL, Job
from .lifecycle import JobLifecycle
from .quotas import BatchQuotas
from .service_quotas import TARGET_PREFIX as SERVICE_QUOTAS_TARGET
from .service_quotas import ServiceQuotasApi

log = logging.getLogger(__name__)

_CATALOG_PATH = re.compile(r"^/(?P<kind>foundation-models|foundation-model-availability|inference-profiles)/(?P<id>.+)$")
_JOB_PATH = re.compile(r"^/model-invocation-job/(?P<id>.+?)(?P<stop>/stop)?$")
_CONVERSE_PATH = re.compile(r"^/model/(?P<model>.+)/converse$")
_INVOKE_PATH = re.compile(r"^/model/(?P<model>.+)/invoke$")
SERVICE_TIER_HEADER = "X-Amzn-Bedrock-Service-Tier"  # InvokeModel's serviceTier, in and out (botocore 1.44)


@dataclass(frozen=True)
class ServedMark:
    """A point in the emulator's serving: runtime calls answered and batch jobs created by then."""

    calls: int
    jobs: frozenset[str]


class _QuietHandler(WSGIRequestHandler):
    """Request lines go to debug logging, not to stderr on every call."""

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        log.debug("bedrock emulator %s %s", self.requestline, code)

    def log(self, type: str, message: str, *args: Any) -> None:
        log.debug("bedrock emulator http %s: " + message, type, *args)


class BedrockEmulator:
    def __init__(
        self,
        *,
        s3_client_factory: Callable[[], Any],
        publish_event: PublishEvent | None = None,
        faults: Faults | None = None,
        quotas: BatchQuotas | None = None,
        account_id: str = "123456789012",
        region: str = "us-east-1",
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.faults = faults or Faults()
        self.quotas = quotas or BatchQuotas()
        self.clock = EmulatedClock(self.faults.time_scale)
        self.stats: Counter[str] = Counter()
        self._stats_lock = threading.Lock()
        self._shutdown = threading.Event()
        self._s3_client_factory = s3_client_factory
        self._host, self._port = host, port
        self._server: BaseWSGIServer | None = None
        self._server_thread: threading.Thread | None = None
        self._job_threads: list[threading.Thread] = []
        self.events = EventDispatcher(publish_event, self.faults)
        self.control = ControlPlane(
            account_id=account_id,
            region=region,
            faults=self.faults,
            quotas=self.quotas,
            clock=self.clock,
            notify=self.events.job_changed,
            start_job=self._start_job,
            count=self._count,
        )
        self.catalog = ModelCatalog(account_id=account_id, region=region)
        self.service_quotas = ServiceQuotasApi(self.quotas, account_id=account_id, region=region)
        self.runtime = ConverseRuntime(self.faults, self.stats, self._stats_lock, self._shutdown)
        self.url: str | None = None

    @property
    def jobs(self) -> dict[str, Job]:
        """Jobs by ARN, for tests and the offline stack's status page."""
        return self.control.jobs

    def tokens_served(self) -> dict[str, tuple[int, int]]:
        """(input, output) tokens served per lane: ``batch`` (every record a batch job answered, as its
        manifest.json.out counts them) and ``runtime`` (every Converse / InvokeModel call answered).
        What AWS bills, so a test can require the ledger to equal it."""
        jobs = list(self.jobs.values())
        with self._stats_lock:
            runtime = (self.stats["runtime_input_tokens"], self.stats["runtime_output_tokens"])
        return {"batch": (sum(j.input_tokens for j in jobs), sum(j.output_tokens for j in jobs)), "runtime": runtime}

    def mark(self) -> ServedMark:
        """Where the emulator's serving stands now: :meth:`bill` and :meth:`pages_served` count what came after it."""
        with self._stats_lock:
            return ServedMark(len(self.runtime.served), frozenset(self.jobs))

    def served_since(self, since: ServedMark | None = None, until: ServedMark | None = None) -> tuple[list[ServedCall], list[Job]]:
        """The runtime calls answered and the batch jobs created between two marks (None: from the start, up to now)."""
        with self._stats_lock:
            calls = list(self.runtime.served)[since.calls if since else 0 : until.calls if until else None]
        jobs = [j for arn, j in list(self.jobs.items()) if (since is None or arn not in since.jobs) and (until is None or arn in until.jobs)]
        return calls, jobs

    def bill(self, prices: PriceTable, *, since: ServedMark | None = None, until: ServedMark | None = None) -> dict[str, Decimal]:
        """What AWS would bill for what the emulator served (after ``since``), at ``prices`` (the deployment's price
        table): each runtime call its tokens at the tier that served it, each batch job its tokens at the batch
        price (every record it processed, used or not, as manifest.json.out counts them). A test holds the ledger to it."""
        calls, jobs = self.served_since(since, until)
        runtime = sum((prices.cost(c.model_id, Usage(c.input_tokens, c.output_tokens), tier=c.tier) for c in calls), Decimal(0))
        batch = sum((prices.cost(j.model_id, Usage(j.input_tokens, j.output_tokens), batch=True) for j in jobs), Decimal(0))
        return {"runtime": runtime, "batch": batch, "total": runtime + batch}

    def pages_served(self, *, since: ServedMark | None = None, until: ServedMark | None = None) -> dict[str, Counter[int]]:
        """How many billed answers carried each page (after ``since``): ``runtime`` calls (a multi-page call counts
        for each of its pages) and ``batch`` records answered. Page numbers are the documents' own (``page-N``)."""
        calls, jobs = self.served_since(since, until)
        runtime: Counter[int] = Counter(page for call in calls for page in call.pages)
        batch: Counter[int] = Counter(parse_record_id(split_pooled_record_id(rid.removesuffix(RETRY_SUFFIX))[1])[1] for j in jobs for rid in list(j.answered))
        return {"runtime": runtime, "batch": batch}

    def set_batch_faults(self, faults: Faults) -> None:
        """The faults batch jobs created from now on run with (record errors, their outcome); jobs in flight keep
        theirs, and the clock keeps its scale. Lets one stack show several batch paths in a row."""
        self.faults = replace(faults, time_scale=self.faults.time_scale)

    def served_by_tier(self) -> dict[str, dict[str, int]]:
        """InvokeModel calls answered per service tier (default, flex, ...): requests and tokens, and
        the flex calls shed (``flexThrottled``). What a test holds the ledger's tiers to."""
        with self._stats_lock:
            stats = dict(self.stats)
        tiers = {key[len("tier_") : -len("_requests")] for key in stats if key.startswith("tier_") and key.endswith("_requests")}
        served = {
            tier: {
                "requests": stats[f"tier_{tier}_requests"],
                "inputTokens": stats.get(f"tier_{tier}_input_tokens", 0),
                "outputTokens": stats.get(f"tier_{tier}_output_tokens", 0),
            }
            for tier in sorted(tiers)
        }
        return {**served, "flexThrottled": {"requests": stats.get("flex_throttled", 0)}}

    def _count(self, key: str) -> None:
        with self._stats_lock:
            self.stats[key] += 1

    # -- lifecycle of the emulator itself -------------------------------------------

    def set_runtime_faults(self, faults: Faults) -> None:
        """Change the faults runtime calls (Converse, InvokeModel) see from now on, e.g. a refusal
        that passes; batch jobs keep the faults they started with."""
        self.runtime.set_faults(faults)

    request_handler = _QuietHandler  # how its server reads a request (local/inprocess.py uses it too)

    @property
    def wsgi_app(self) -> Any:
        """What its server answers with: loopback hosts only, no CORS (local/loopback.py)."""
        return LoopbackOnly(self._wsgi)

    def start(self) -> str:
        if self.url:
            return self.url
        self.events.start()
        self._server = make_server(self._host, self._port, self.wsgi_app, threaded=True, request_handler=self.request_handler)
        self._server_thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="bedrock-emulator-http", daemon=True)
        self._server_thread.start()
        self.url = f"http://{self._host}:{self._server.server_port}"
        log.info("bedrock emulator listening on %s (%s)", self.url, self.faults)
        return self.url

    def stop(self) -> None:
        """Stop serving and leave every job where it is; returns within a few seconds."""
        self._shutdown.set()
        for job in list(self.jobs.values()):
            job.wake.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        for thread in self._job_threads:
            thread.join(timeout=5)
        self.events.stop()
        self.url = None

    def __enter__(self) -> BedrockEmulator:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _start_job(self, job: Job) -> None:
        lifecycle = JobLifecycle(
            job,
            s3_client_factory=self._s3_client_factory,
            faults=self.faults,
            quotas=self.quotas,
            clock=self.clock,
            shutdown=self._shutdown,
            live_jobs=self.live_job_count,
        )
        thread = threading.Thread(target=lifecycle.run, name=f"bedrock-job-{job.job_id}", daemon=True)
        self._job_threads.append(thread)
        thread.start()

    def live_job_count(self) -> int:
        """Jobs not yet terminal (a forgotten job no longer runs): a lone one may jump the clock over its idle wait."""
        return sum(1 for job in list(self.jobs.values()) if job.status not in TERMINAL and not job.forgotten)

    # -- HTTP -----------------------------------------------------------------------

    def _wsgi(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        request = Request(environ)
        try:
            status, body = 200, self._route(request)
        except ApiError as exc:
            status, body = exc.status, {"__type": exc.code, "message": exc.message}  # __type: JSON 1.1 (Service Quotas)
            headers = {"x-amzn-ErrorType": f"{exc.code}:http://internal.amazon.com/coral/com.amazon.bedrock/"}
        except Exception as exc:
            log.exception("bedrock emulator failed on %s %s", request.method, request.path)
            status, body = 500, {"message": f"Internal emulator error: {exc}"}
            headers = {"x-amzn-ErrorType": "InternalServerException"}
        else:
            headers = {SERVICE_TIER_HEADER: body.pop("_serviceTier")} if isinstance(body, dict) and "_serviceTier" in body else {}
        response = Response(json.dumps(body), status=status, mimetype="application/json", headers=headers)
        response.headers["x-amzn-RequestId"] = "emulated"
        return response(environ, start_response)

    def _route(self, request: Request) -> dict[str, Any]:
        path, method = request.path, request.method
        if (target := request.headers.get("X-Amz-Target", "")).startswith(SERVICE_QUOTAS_TARGET):
            return self.service_quotas.handle(target, _json(request))
        if method == "GET" and (match := _CATALOG_PATH.match(path)):
            return self._catalog(match["kind"], unquote(match["id"]))
        if method == "POST" and (match := _CONVERSE_PATH.match(path)):
            return self.runtime.converse(match["model"], _json(request))
        if method == "POST" and (match := _INVOKE_PATH.match(path)):
            return self.runtime.invoke(match["model"], request.get_data(), request.headers.get(SERVICE_TIER_HEADER))
        if path == "/model-invocation-job" and method == "POST":
            return self.control.create(_json(request))
        if path == "/model-invocation-jobs" and method == "GET":
            return self.control.list(request.args)
        if match := _JOB_PATH.match(path):
            if match["stop"] and method == "POST":
                return self.control.stop(match["id"])
            if not match["stop"] and method == "GET":
                return self.control.get(match["id"])
        if method == "POST" and path == "/tagResource":
            return self.control.tag(_json(request))
        if method == "POST" and path == "/untagResource":
            return self.control.untag(_json(request))
        if method == "POST" and path == "/listTagsForResource":
            return self.control.list_tags(_json(request))
        raise ApiError("UnknownOperationException", f"The emulator does not serve {method} {path}.")

    def _catalog(self, kind: str, identifier: str) -> dict[str, Any]:
        if kind == "foundation-models":
            return self.catalog.foundation_model(identifier)
        if kind == "foundation-model-availability":
            return self.catalog.availability(identifier)
        return self.catalog.inference_profile(identifier)


def _json(request: Request) -> Any:
    data = request.get_data()
    if not data:
        return {}
    try:
        return json.loads(data)
    except ValueError:
        raise ApiError("ValidationException", "The request body is not valid JSON.") from None
