"""OfflineStack: PostgreSQL + moto (S3, Step Functions, EventBridge, SQS, IAM) + the Bedrock
emulator + our handlers, wired exactly as ``topology.py`` says the deployment is.

The state machines are the files in ``statemachines/``, substituted the way CDK does
(``${<function>_arn}`` → the function's ARN, numeric settings shrunk so retries don't sleep
for real), executed by moto's ASL interpreter, which calls our handlers through the
Lambda patch. EventBridge rules use moto's own pattern matching; schedules run on a
thread at ``schedule_speedup`` × the deployed rate.

Every start begins from EMPTY tables: moto's S3 / Step Functions / EventBridge and the
Bedrock emulator keep nothing across a restart, so rows of an earlier run (kept by a
PostgreSQL data directory in the work dir, or a DATABASE_URL) would point at chunk PDFs,
executions and Bedrock jobs that no longer exist. ``forgotten_rows`` says what was dropped.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import os
import secrets
import socket
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlparse, urlunparse

import boto3

from batchlane.config import reload_settings
from batchlane.db.connection import Database, connect_params_from_url
from batchlane.runtime import admin_database, reset_services
from batchlane_dev.local import iam, inprocess, patches, postgres, presigned, watchdog
from batchlane_dev.local.bedrock import BatchQuotas, BedrockEmulator, parse_faults
from batchlane_dev.local.bedrock.model import NO_TEXT_ANSWER_TOKENS
from batchlane_dev.local.cpu_shares import OwnerCpuShares
from batchlane_dev.local.lambda_runtime import ConcurrencyLimit, HandlerRegistry, WorkerPool
from batchlane_dev.local.logs import LOG_FILE_ENV, VERBOSE_ENV, handler_log_path, restore_handler_logs, route_handler_logs
from batchlane_dev.local.loopback import loopback_moto_server
from deployment.topology import FUNCTIONS, RULES, SCHEDULES, STATE_MACHINES, load_definition

log = logging.getLogger("batchlane_dev.local")
BEDROCK_RULE = "bedrock_batch_state_change"

ACCOUNT_ID = "123456789012"
REGION = "us-east-1"
BUCKET = "batchlane-offline"
# The user's bucket a folder job reads and writes offline (folderSources in cdk.json on AWS).
FOLDER_BUCKET = "batchlane-offline-folders"
# Each offline user is granted their own home folder in it (an ``{owner}`` grant, docs/operations.md "Folder jobs").
FOLDER_SOURCES = f"{FOLDER_BUCKET}/users/{{owner}}/"


def owner_home(owner: str) -> str:
    """The key prefix ``owner`` is granted in the offline folder bucket: ``users/<owner>/``."""
    return f"users/{owner}/"


SERVICE_ROLE_ARN = f"arn:aws:iam::{ACCOUNT_ID}:role/batchlane-bedrock-batch"
FOLDER_ACCESS_ROLE_ARN = f"arn:aws:iam::{ACCOUNT_ID}:role/batchlane-folder-access"  # infra/folder_access.py
OFFLINE_SETTINGS = {
    "retry_interval_seconds": "1",
    # A throttle's ladder: 1 s doubling to 16 s, full jitter, 40 retries (~5 min on average, at most ~10 min).
    # It must outlast a flood here as AWS's (~18 min on average) outlasts one there: to 4 s (~1.3 min on
    # average) it ran out under load on this 2-core machine (tests/e2e/test_tenant_isolation.py, jobs
    # CONVERSION_FAILED and SPLIT_FAILED with their tasks throttled 40 times).
    "throttle_interval_seconds": "1",
    "throttle_max_delay_seconds": "16",
    "chunk_retry_interval_seconds": "1",
    "chunk_admission_interval_seconds": "1",
    "chunk_admission_max_delay_seconds": "1",
    "submit_retry_interval_seconds": "1",
    "collect_retry_interval_seconds": "1",
    # The webhook retry ladder, shrunk: 1 s (full jitter: 0–1 s) between attempts, 4 attempts in all.
    "delivery_interval_seconds": "1",
    "delivery_backoff_rate": "1",
    "delivery_max_attempts": "3",
    "delivery_max_delay_seconds": "1",
    "poll_interval_seconds": "1",  # the folder loop's turn
}
WEBHOOK_SECRET_NAME = "batchlane-webhook-signing"
MOTO_KEY_BUFFER_ENV = "MOTO_S3_DEFAULT_KEY_BUFFER_SIZE"
MOTO_KEY_BUFFER_BYTES = 256 * 1024 * 1024  # above the default BATCH_CONVERSION_MAX_FILE_MB, 200 MB a shard
_STATIC_ENV = {
    "AWS_ACCESS_KEY_ID": "offline",
    "AWS_SECRET_ACCESS_KEY": "offline",  # replaced by each stack's own random one (OfflineStack._aws_secret)
    "AWS_REGION": REGION,
    "AWS_DEFAULT_REGION": REGION,
    "POWERTOOLS_TRACE_DISABLED": "true",
    "POWERTOOLS_METRICS_DISABLED": "true",
    "POWERTOOLS_LOG_LEVEL": "WARNING",
}


@dataclass
class StackOptions:
    workdir: Path
    faults: str = ""
    database_url: str | None = None
    batch_lane: bool = True
    schedule_speedup: float = 30.0  # the 1-minute packer runs every 2 s offline
    extra_env: dict[str, str] = field(default_factory=dict)
    enforce_grants: bool = True  # handlers' AWS calls checked against their topology grants (local/iam.py)
    # Functions whose invocations run in worker processes (lambda_runtime.WorkerPool), as
    # Lambda runs each in an environment of its own; the benchmarks use PROCESS_FUNCTIONS.
    # Empty: every handler runs in this process (fast to start; tests can patch handlers).
    process_functions: frozenset[str] = frozenset()
    max_workers: int = 96
    warm_workers: int = 0  # workers through their init phase before the first job (provisioned concurrency)
    worker_setup: tuple[Callable[[], None], ...] = ()  # picklable hooks run once in each new worker
    verbose: bool = False  # handler logs to stderr as well as to the log file (local/logs.py)
    log_file: Path | None = None  # where handler logs go; default <workdir>/logs/handlers.log
    # Lambda's concurrency (account and reserved); past it an Invoke answers TooManyRequestsException.
    lambda_concurrency: ConcurrencyLimit = field(default_factory=ConcurrencyLimit)
    # State-machine settings over OFFLINE_SETTINGS (e.g. a short throttle ladder for a test that runs one out).
    settings: dict[str, str] = field(default_factory=dict)
    # This process's AWS calls to moto and the Bedrock emulator skip the loopback HTTP round trip (botocore's
    # whole request path but the socket; local/inprocess.py). Other processes always go over HTTP.
    in_process_aws: bool = True
    # Step Functions' waits between retries run this many times faster (local/patches.py 9): for a test that runs a
    # ladder out for its count. 1: as the state machine says.
    retry_time_scale: float = 1.0
    # Worker invocations run in a CPU group of their owner (local/cpu_shares.py, cgroup v1, root): one owner's
    # flood cannot take another owner's CPU, as on Lambda. Needs process_functions; off where cgroups are not writable.
    owner_cpu_shares: bool = False
    # Every API answer checked against docs/api/openapi.yaml; stop() then fails on any that broke it (the tests' stacks).
    check_contract: bool = False


# Where the CPU work of a job is (splits, pages, the assembly pass). In this process a handler's CPU work
# shares one GIL with moto, the Step Functions interpreter and the Bedrock emulator: under A's flood A's
# assembles in threads here held back every other job's state transitions (docs/benchmarks.md "tenant_isolation").
# A dry run's estimate reads hostile PDFs as a split does (issue 40).
PROCESS_FUNCTIONS = frozenset({"job_create", "job_split", "chunk_processor", "batch_prepare", "assemble", "estimate"})


def start_from_empty_tables(db: Any) -> dict[str, int]:
    """Truncate every table but the migration log; return the row counts that were there.

    The emulated services start empty on every start, so the database must too: keeping
    it would leave jobs that fail on missing chunk PDFs or wait on unknown Bedrock jobs.
    """
    tables = [
        r["tablename"] for r in db.run("SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'schema_migrations' ORDER BY tablename")
    ]
    counts = {table: int(db.one(f'SELECT count(*) AS n FROM "{table}"')["n"]) for table in tables}
    if any(counts.values()):
        # A handler of a stack stopped just before may still be writing (its thread outlived the stop's join):
        # the TRUNCATE can be chosen as a deadlock's victim (40P01); it is then simply run again.
        for attempt in range(5):
            try:
                db.run("TRUNCATE " + ", ".join(f'"{table}"' for table in tables) + " RESTART IDENTITY CASCADE")
                break
            except Exception as exc:
                if "40P01" not in str(exc) or attempt == 4:
                    raise
                time.sleep(0.2 * (attempt + 1))
    return {table: n for table, n in counts.items() if n}


def app_role_url(admin_url: str) -> str:
    """Migrate as the owner, (re)create ``batchlane_app`` with a fresh password; return its URL."""
    from batchlane.db.migrate import APP_ROLE, migrate

    password = secrets.token_urlsafe(24)
    db = Database(connect_params_from_url(admin_url))
    try:
        migrate(db, app_password=password)
    finally:
        db.close()
    parsed = urlparse(admin_url)
    where = parsed.netloc.rpartition("@")[2]
    return urlunparse(parsed._replace(netloc=f"{APP_ROLE}:{quote(password, safe='')}@{where}"))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class OfflineStack:
    def __init__(self, options: StackOptions) -> None:
        self.options = options
        self.faults = parse_faults(options.faults)
        self.registry = HandlerRegistry(ACCOUNT_ID, REGION)
        self.registry.concurrency = options.lambda_concurrency  # tests may change it while the stack runs
        self.env: dict[str, str] = {}
        self.state_machine_arns: dict[str, str] = {}
        self._pg: Any = None
        self._saved_log_handlers: list[logging.Handler] | None = None
        self.log_path = options.log_file or handler_log_path(options.workdir)
        self._watchdog: Any = None  # stops the embedded server if this process dies without stop() (local/watchdog.py)
        self._moto: Any = None  # loopback.loopback_moto_server: moto's ThreadedMotoServer behind LoopbackOnly
        self._moto_url: str | None = None
        self.bedrock: BedrockEmulator | None = None
        self.api: Any = None  # LocalApiServer: the api handler on loopback (BATCHLANE_API_URL)
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._saved_env: dict[str, str | None] = {}
        self.forgotten_rows: dict[str, int] = {}  # table → rows of an earlier run dropped at start
        self.grants: iam.GrantEnforcer | None = None  # the offline IAM: .denials, .set_needs(...)
        # The stack's own secret key (moto checks none): what the API presigns with, so the console's S3 proxy can tell
        # a URL the API signed from one anybody on the machine made up (a known key once let them; issue 40.5).
        self._aws_secret = secrets.token_urlsafe(24)

    # -- lifecycle ---------------------------------------------------------------------
    def start(self) -> OfflineStack:
        self.options.workdir.mkdir(parents=True, exist_ok=True)
        # The owner (migrations, emptying tables) and the application role every handler signs in as,
        # as on AWS (docs/deploy.md "Database authentication"): a missing grant fails offline too.
        admin_url = self.options.database_url or self._start_postgres()
        database_url = app_role_url(admin_url)
        moto_port = _free_port()
        self._set_env({**_STATIC_ENV, "AWS_SECRET_ACCESS_KEY": self._aws_secret, "MOTO_PORT": str(moto_port)})
        # moto keeps an object over 5 MB in a temporary file on this machine's disk (a 261 MB lane input: ~1 s of
        # writes and reads on moto's request threads, beside the handlers); S3 stores it on machines of its own.
        # Objects up to the largest batch input file stay in memory here (docs/offline.md, the table at the top).
        self._set_env({MOTO_KEY_BUFFER_ENV: os.environ.get(MOTO_KEY_BUFFER_ENV) or str(MOTO_KEY_BUFFER_BYTES)})
        # Powertools reads its level when the logger is made: a CLI that imported the package
        # before the stack started would keep INFO and print every handler's log to the terminal.
        from batchlane.observability import logger as handler_logger

        handler_logger.setLevel(os.environ["POWERTOOLS_LOG_LEVEL"])
        # Handler logs to a file (stdout is the command's own output); workers follow through the environment.
        self._saved_log_handlers = route_handler_logs(self.log_path, verbose=self.options.verbose)
        self._set_env({LOG_FILE_ENV: str(self.log_path), VERBOSE_ENV: "1" if self.options.verbose else "0"})
        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        iam.install(None)  # threads started from here on carry their creator's identity (local/iam.py)
        iam.become(iam.OPERATOR)  # the caller (the test harness, the CLI) acts with the account's own credentials
        self._moto = loopback_moto_server("127.0.0.1", moto_port)  # loopback Host names only, no CORS
        with iam.acting_as(iam.AWS_SERVICE):  # its threads are AWS's: Step Functions, EventBridge
            self._moto.start()
        moto_url = self._moto_url = f"http://127.0.0.1:{moto_port}"
        if self.options.in_process_aws:  # also as localhost: moto's Step Functions builds its clients on that name
            for url in self._moto_urls():
                inprocess.serve(url, self._moto.app, handler_class=self._moto.request_handler, identity=iam.AWS_SERVICE)
        self._configure_moto(moto_url)
        self.bedrock = BedrockEmulator(
            s3_client_factory=lambda: iam.bind(boto3.client("s3", endpoint_url=moto_url, region_name=REGION), iam.BEDROCK_SERVICE_ROLE),
            publish_event=lambda entry: self._client("events", moto_url).put_events(Entries=[entry]),
            faults=self.faults,
            quotas=self._quotas(),
            account_id=ACCOUNT_ID,
            region=REGION,
        )
        with iam.acting_as(iam.BEDROCK_SERVICE):
            bedrock_url = self.bedrock.start()
        if self.options.in_process_aws:
            inprocess.serve(
                bedrock_url, self.bedrock.wsgi_app, handler_class=self.bedrock.request_handler, identity=iam.BEDROCK_SERVICE, with_read_timeout=True
            )
        self.state_machine_arns = {spec.name: f"arn:aws:states:{REGION}:{ACCOUNT_ID}:stateMachine:batchlane-{spec.name}" for spec in STATE_MACHINES}
        env = {
            "AWS_ENDPOINT_URL": moto_url,
            "AWS_ENDPOINT_URL_BEDROCK": bedrock_url,
            "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": bedrock_url,
            "AWS_ENDPOINT_URL_SERVICE_QUOTAS": bedrock_url,  # moto has no Bedrock quotas: the emulator serves them
            "DATABASE_URL": database_url,
            "DATABASE_ADMIN_URL": admin_url,  # functions/migrate only
            "BATCHLANE_BUCKET": BUCKET,
            "BATCHLANE_TIME_SCALE": str(self.faults.time_scale),
            "CONVERSION_STATE_MACHINE_ARN": self.state_machine_arns["conversion"],
            "BATCH_LANE_STATE_MACHINE_ARN": self.state_machine_arns["batch_lane"],
            "INTAKE_STATE_MACHINE_ARN": self.state_machine_arns["intake"],
            "BATCH_CONVERSION_ENABLED": "true" if self.options.batch_lane else "false",
            "BATCH_CONVERSION_S3_BUCKET": BUCKET,
            "BATCH_CONVERSION_ROLE_ARN": SERVICE_ROLE_ARN,
            "WEBHOOK_DELIVERY_STATE_MACHINE_ARN": self.state_machine_arns["webhook_delivery"],
            "WEBHOOK_SECRET_ARN": self._create_webhook_secret(moto_url),
            "WEBHOOK_KEY_ARN": self._create_webhook_key(moto_url),
            # A receiver on 127.0.0.1 over plain http (AWS: https to a public host only).
            "BATCHLANE_WEBHOOK_ALLOW_PRIVATE": "true",
            "FOLDER_JOB_STATE_MACHINE_ARN": self.state_machine_arns["folder_job"],
            "ESTIMATE_STATE_MACHINE_ARN": self.state_machine_arns["estimate"],
            "FOLDER_ACCESS_ROLE_ARN": FOLDER_ACCESS_ROLE_ARN,
            "BATCHLANE_FOLDER_SOURCES": FOLDER_SOURCES,
            # What the model writes for a page without a text layer is the model's (an operator calibrates the setting to
            # theirs; Claude transcribes a scan, ~1,200 tokens): the emulated model writes one figure line (12-33 tokens),
            # so the estimate here uses the least the setting takes (docs/offline.md "What the estimates assume offline").
            "BATCHLANE_OUTPUT_TOKENS_PER_PAGE": str(NO_TEXT_ANSWER_TOKENS),
            **self.options.extra_env,
        }
        self._set_env(env)
        self.env = {**_STATIC_ENV, "AWS_SECRET_ACCESS_KEY": self._aws_secret, "MOTO_PORT": str(moto_port), LOG_FILE_ENV: str(self.log_path), VERBOSE_ENV: os.environ[VERBOSE_ENV], **env}
        if self.options.enforce_grants:
            self.grants = iam.GrantEnforcer(self._grant_targets())
        iam.install(self.grants)  # before reset_services: the handlers' clients are made hooked
        reset_services()
        self.forgotten_rows = start_from_empty_tables(admin_database())
        if self.forgotten_rows:
            log.warning("offline stack starts from empty tables; an earlier run's rows were dropped", extra={"rows": self.forgotten_rows})
        patches.install(self.registry, self._start_execution_from_event, retry_time_scale=self.options.retry_time_scale)
        self._deploy(moto_url)
        from batchlane_dev.local.api_server import LocalApiServer

        # The proxy to the emulated S3 takes only what this stack's keys signed (local/presigned.py).
        self.api = LocalApiServer(
            self.registry,
            s3_url=moto_url,
            secret_for=presigned.moto_secret_for({_STATIC_ENV["AWS_ACCESS_KEY_ID"]: self._aws_secret}),
            check_contract=self.options.check_contract,
        )
        with iam.acting_as(iam.AWS_SERVICE):  # API Gateway's side; each request's handler acts as "api"
            self._set_env({"BATCHLANE_API_URL": self.api.start()})
        self.env["BATCHLANE_API_URL"] = self.api.url
        self.env["BATCHLANE_CONSOLE_URL"] = self.api.console_url
        if self.options.process_functions:
            # The whole environment as the stack set it: workers reach moto, the emulator and
            # the database over loopback, exactly as the handlers here do.
            self.registry.workers = WorkerPool(
                self.options.process_functions, {**os.environ, **self.env}, max_workers=self.options.max_workers, setup=self._worker_setup()
            )
            self.registry.workers.warm(ACCOUNT_ID, REGION, self.options.warm_workers)
            if self.options.owner_cpu_shares:
                self.registry.cpu_shares = OwnerCpuShares.create()
        self._start_schedules()
        log.info("offline stack up", extra={"moto": moto_url, "bedrock": bedrock_url})
        return self

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=5)
        self._stop_executions()
        if self.registry.workers is not None:
            self.registry.workers.shutdown()  # before the database: workers hold connections
        if self.registry.cpu_shares is not None:
            self.registry.cpu_shares.close()
            self.registry.cpu_shares = None
        if self.api:
            self.api.stop()
        if self.bedrock:
            inprocess.withdraw(self.bedrock.url)
            self.bedrock.stop()
        reset_services()
        if iam.active() is self.grants:
            iam.install(None)
        if self._moto:
            for url in self._moto_urls():
                inprocess.withdraw(url)
            self._moto.stop()
        if self._pg is not None:
            postgres.stop(self._pg, self.options.workdir / "pgdata")
            watchdog.release(self._watchdog, self.options.workdir)
            self._pg = self._watchdog = None
        if self._saved_log_handlers is not None:
            restore_handler_logs(self._saved_log_handlers)
            self._saved_log_handlers = None
        for key, value in self._saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        if self.api and self.api.contract_violations:
            found, self.api.contract_violations = sorted(set(self.api.contract_violations)), []
            raise AssertionError("API answers off docs/api/openapi.yaml:\n" + "\n".join(found[:40]))

    def __enter__(self) -> OfflineStack:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- pieces ------------------------------------------------------------------------
    def _stop_executions(self) -> None:
        """Stop the executions still running. moto runs each in a thread of this process that outlives
        the server's reset: a stack started next in the process would answer their Lambda calls against
        its own database ("no job ..." from Settle, a stack's work running into the next one's figure)."""
        if not self._moto_url:
            return
        sfn = self._client("stepfunctions", self._moto_url)
        stopped = 0
        try:
            with iam.acting_as(iam.AWS_SERVICE):
                for machine in sfn.list_state_machines()["stateMachines"]:
                    pages = sfn.get_paginator("list_executions").paginate(stateMachineArn=machine["stateMachineArn"], statusFilter="RUNNING")
                    for execution in (item for page in pages for item in page["executions"]):
                        sfn.stop_execution(executionArn=execution["executionArn"], cause="offline stack stopped")
                        stopped += 1
        except Exception as exc:  # stopping must go on: the server goes away next anyway
            log.warning("running executions not all stopped", extra={"error": str(exc), "stopped": stopped})
        if stopped:
            log.info("offline stack stopped its running executions", extra={"stopped": stopped})

    def _moto_urls(self) -> tuple[str, ...]:
        return (self._moto_url, self._moto_url.replace("127.0.0.1", "localhost")) if self._moto_url else ()

    def _quotas(self) -> BatchQuotas:
        """The emulated account's quotas follow the lane's configuration (AWS's defaults otherwise).

        ``BATCHLANE_EMULATED_QUOTAS`` (JSON of BatchQuotas fields) sets the account's quotas
        apart from the lane's settings, e.g. to see `batchlane doctor` warn about a setting
        the account does not allow.
        """
        env = {**os.environ, **self.options.extra_env}
        defaults = BatchQuotas()
        quotas = BatchQuotas(
            min_records=min(defaults.min_records, int(env.get("BATCH_CONVERSION_MIN_RECORDS", defaults.min_records))),
            max_records=int(env.get("BATCH_CONVERSION_MAX_RECORDS", defaults.max_records)),
            max_concurrent_jobs=int(env.get("BATCH_CONVERSION_MAX_CONCURRENT_JOBS", defaults.max_concurrent_jobs)),
        )
        return dataclasses.replace(quotas, **json.loads(env.get("BATCHLANE_EMULATED_QUOTAS") or "{}"))

    @property
    def outputs(self) -> dict[str, str]:
        """The CloudFormation outputs a deployed stack would have (infra/stack.py), for `batchlane doctor`."""
        from batchlane.config import reload_settings

        settings = reload_settings()
        lane = {
            "BATCHLANE_MODEL_ID": settings.batchlane_model_id,
            "BATCHLANE_MODEL_IDS": ",".join(settings.allowed_model_ids),
            "BATCH_CONVERSION_ENABLED": "true" if settings.batch_conversion_enabled else "false",
            "BATCH_CONVERSION_MIN_PAGES": str(settings.batch_conversion_min_pages),
            "BATCH_CONVERSION_MIN_RECORDS": str(settings.batch_conversion_min_records),
            "BATCH_CONVERSION_MAX_RECORDS": str(settings.batch_conversion_max_records),
            "BATCH_CONVERSION_MAX_CONCURRENT_JOBS": str(settings.batch_conversion_max_concurrent_jobs),
            "BATCH_CONVERSION_MAX_FILE_MB": str(settings.batch_conversion_max_file_mb),
            "BATCH_CONVERSION_MAX_JOB_MB": str(settings.batch_conversion_max_job_mb),
            "BATCH_CONVERSION_TIMEOUT_HOURS": str(settings.batch_conversion_timeout_hours),
            "BATCHLANE_CHUNK_SLOTS": str(settings.batchlane_chunk_slots),
            "BATCHLANE_RESERVED_CONCURRENCY": json.dumps(self.registry.concurrency.reserved, separators=(",", ":")),
        }
        # What GetAccountSettings would answer for the modelled account (moto has no such call); AWS's default 1,000.
        account = self.registry.concurrency.account or 1000
        limits = {"ConcurrentExecutions": account, "UnreservedConcurrentExecutions": account - sum(self.registry.concurrency.reserved.values())}
        return {
            "BucketName": BUCKET,
            "ServiceRoleArn": SERVICE_ROLE_ARN,
            "Region": REGION,
            "BatchEventRuleName": f"batchlane-{BEDROCK_RULE}",
            "MigrateFunctionName": self.registry.function_name("migrate"),
            "ApiUrl": self.env.get("BATCHLANE_API_URL", ""),
            "LaneSettings": json.dumps(lane, sort_keys=True),
            "LambdaAccountLimit": json.dumps(limits, sort_keys=True),
        }

    def _worker_setup(self) -> tuple[Callable[[], None], ...]:
        """The options' hooks, and the same grant checks in every worker as in this process."""
        if self.grants is None:
            return self.options.worker_setup
        return (*self.options.worker_setup, functools.partial(iam.install_in_worker, self._grant_targets()))

    def _grant_targets(self) -> iam.Targets:
        """What each resource kind of deployment.grants is in this stack (the deployed names, emulated)."""
        return iam.Targets(
            account_id=ACCOUNT_ID,
            region=REGION,
            bucket=BUCKET,
            conversion_state_machine_arn=self.state_machine_arns["conversion"],
            batch_lane_state_machine_arn=self.state_machine_arns["batch_lane"],
            intake_state_machine_arn=self.state_machine_arns["intake"],
            webhook_delivery_state_machine_arn=self.state_machine_arns["webhook_delivery"],
            webhook_secret_arn=self.env.get("WEBHOOK_SECRET_ARN", ""),
            webhook_key_arn=self.env.get("WEBHOOK_KEY_ARN", ""),
            folder_job_state_machine_arn=self.state_machine_arns["folder_job"],
            estimate_state_machine_arn=self.state_machine_arns["estimate"],
            folder_access_role_arn=FOLDER_ACCESS_ROLE_ARN,
            folder_sources=tuple(reload_settings().folder_sources),
            bedrock_service_role_arn=SERVICE_ROLE_ARN,
            model_ids=reload_settings().allowed_model_ids,  # as infra grants every configured model (context modelIds)
            database_secret_arn=os.environ.get("DATABASE_SECRET_ARN"),  # when a test serves credentials from a secret
        )

    def _set_env(self, values: dict[str, str]) -> None:
        for key, value in values.items():
            self._saved_env.setdefault(key, os.environ.get(key))
            os.environ[key] = value

    def _start_postgres(self) -> str:
        watchdog.reap_leftovers()  # servers of demos killed earlier (issue 24.10)
        self.options.workdir.mkdir(parents=True, exist_ok=True)
        self._watchdog = watchdog.guard(self.options.workdir)
        self._pg, url = postgres.start(self.options.workdir / "pgdata")
        return url

    def _client(self, service: str, url: str) -> Any:
        return boto3.client(service, endpoint_url=url, region_name=REGION)

    def _configure_moto(self, moto_url: str) -> None:
        # moto's backends are process-wide: a stack started after another in the same
        # process (tests) must not see the previous one's buckets, machines or rules.
        urllib.request.urlopen(urllib.request.Request(f"{moto_url}/moto-api/reset", method="POST"), timeout=10).read()
        request = urllib.request.Request(
            f"{moto_url}/moto-api/config",
            data=json.dumps({"stepfunctions": {"execute_state_machine": True}, "lambda": {"use_docker": False}}).encode(),
            method="POST",
        )
        urllib.request.urlopen(request, timeout=10).read()

    def _create_webhook_key(self, moto_url: str) -> str:
        """The KMS key infra/webhooks.py creates to seal each owner's signing secret (moto's KMS binds the encryption context)."""
        key = self._client("kms", moto_url).create_key(Description="batchlane: seals each owner's webhook signing secret")["KeyMetadata"]
        return str(key["Arn"])

    def _create_webhook_secret(self, moto_url: str) -> str:
        """The signing secret infra/webhooks.py creates (a random value in Secrets Manager)."""
        import secrets

        sm = self._client("secretsmanager", moto_url)
        return str(sm.create_secret(Name=WEBHOOK_SECRET_NAME, SecretString=secrets.token_urlsafe(32))["ARN"])

    def definition(self, name: str) -> str:
        """The state machine file with CDK's substitutions applied (offline values for intervals)."""
        spec = next(s for s in STATE_MACHINES if s.name == name)
        text = load_definition(spec)
        offline = {**OFFLINE_SETTINGS, **self.options.settings}
        values = {**spec.settings, **{k: v for k, v in offline.items() if k in spec.settings}}
        values.update({f"{fn}_arn": self.registry.arn(fn) for fn in spec.functions})
        for key, value in values.items():
            text = text.replace("${" + key + "}", value)
        return text

    def _deploy(self, moto_url: str) -> None:
        s3 = self._client("s3", moto_url)
        s3.create_bucket(Bucket=BUCKET)
        s3.create_bucket(Bucket=FOLDER_BUCKET)  # no lifecycle: a user's bucket keeps what folder jobs write
        iam = self._client("iam", moto_url)
        trust = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"Service": "states.amazonaws.com"}, "Action": "sts:AssumeRole"}]}
        role_arn = iam.create_role(RoleName="batchlane-offline-states", AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
        sfn = self._client("stepfunctions", moto_url)
        for spec in STATE_MACHINES:
            if not spec.path.exists():
                log.warning("state machine file missing: %s", spec.path)
                continue
            sfn.create_state_machine(name=f"batchlane-{spec.name}", definition=self.definition(spec.name), roleArn=role_arn)
        events = self._client("events", moto_url)
        for rule in RULES:
            events.put_rule(Name=f"batchlane-{rule.name}", EventPattern=json.dumps({"source": [rule.source], "detail-type": [rule.detail_type]}))
            events.put_targets(Rule=f"batchlane-{rule.name}", Targets=[{"Id": rule.target, "Arn": self.registry.arn(rule.target)}])
        _deploy_bucket_controls(s3)
        _deploy_service_role(iam)
        _deploy_folder_access_role(iam)
        missing = [spec.name for spec in FUNCTIONS if not self.registry.has_handler(spec.name)]
        if missing:
            log.warning("functions without a handler yet: %s", missing)

    def _start_execution_from_event(self, arn: str, event: dict[str, Any]) -> None:
        self._client("stepfunctions", self.env["AWS_ENDPOINT_URL"]).start_execution(stateMachineArn=arn, input=json.dumps(event))

    def _start_schedules(self) -> None:
        for schedule in SCHEDULES:
            thread = threading.Thread(
                target=self._run_schedule,
                args=(schedule.target, schedule.every_minutes * 60 / self.options.schedule_speedup),
                daemon=True,
                name=f"schedule-{schedule.name}",
            )
            thread.start()
            self._threads.append(thread)

    def _run_schedule(self, target: str, every_s: float) -> None:
        while not self._stop.wait(every_s):
            if not self.registry.has_handler(target):
                continue
            event = {"source": "aws.events", "detail-type": "Scheduled Event", "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "detail": {}}
            outcome = self.registry.invoke(target, event)
            if outcome.failed:
                log.warning("scheduled %s failed: %s: %s", target, outcome.error_type, outcome.error_message)


def _deploy_bucket_controls(s3: Any) -> None:
    """What infra/storage.py sets on the bucket: SSE and the 14-day expiry.

    Not the TLS-only policy: the offline endpoints are plain HTTP on loopback, so a faithful
    Deny on aws:SecureTransport=false would refuse every request (and moto 5.2.5 denies on
    any unmet Condition anyway); `batchlane doctor` says so for the offline stack.
    """
    s3.put_bucket_encryption(Bucket=BUCKET, ServerSideEncryptionConfiguration={"Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]})
    rule = {"ID": "expire-working-data", "Status": "Enabled", "Filter": {"Prefix": ""}, "Expiration": {"Days": 14}}
    s3.put_bucket_lifecycle_configuration(Bucket=BUCKET, LifecycleConfiguration={"Rules": [rule]})


def _deploy_folder_access_role(iam: Any) -> None:
    """The folder-access role as infra/folder_access.py defines it: only the folder functions may assume it, with tags.

    moto's STS answers AssumeRole without reading these documents; batchlane_dev.local.iam evaluates the same
    grants (deployment.grants.folder_access_grants) against every call made with the credentials."""
    callers = [f"arn:aws:iam::{ACCOUNT_ID}:role/batchlane-{spec.name}" for spec in FUNCTIONS if "folder_access" in spec.needs]
    trust = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"AWS": callers}, "Action": ["sts:AssumeRole", "sts:TagSession"]}]}
    name = FOLDER_ACCESS_ROLE_ARN.rsplit("/", 1)[-1]
    iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(trust))


def _deploy_service_role(iam: Any) -> None:
    """The Bedrock service role as infra/iam.py defines it (trust scoped to this account's jobs)."""
    trust = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "bedrock.amazonaws.com"},
                "Action": "sts:AssumeRole",
                "Condition": {
                    "StringEquals": {"aws:SourceAccount": ACCOUNT_ID},
                    "ArnLike": {"aws:SourceArn": f"arn:aws:bedrock:{REGION}:{ACCOUNT_ID}:model-invocation-job/*"},
                },
            }
        ],
    }
    policy = {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Action": ["s3:GetObject", "s3:PutObject", "s3:AbortMultipartUpload"], "Resource": f"arn:aws:s3:::{BUCKET}/batch/*"},
            {"Effect": "Allow", "Action": "s3:ListBucket", "Resource": f"arn:aws:s3:::{BUCKET}", "Condition": {"StringLike": {"s3:prefix": ["batch/*"]}}},
            {
                "Effect": "Allow",
                "Action": "bedrock:InvokeModel",
                "Resource": [f"arn:aws:bedrock:{REGION}:{ACCOUNT_ID}:inference-profile/*", "arn:aws:bedrock:*::foundation-model/*"],
            },
        ],
    }
    name = SERVICE_ROLE_ARN.rsplit("/", 1)[-1]
    iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(trust))
    iam.put_role_policy(RoleName=name, PolicyName="batch-access", PolicyDocument=json.dumps(policy))
