"""OfflineStack: PostgreSQL + moto (S3, Step Functions, EventBridge, SQS, IAM) + the Bedrock
emulator + our handlers, wired exactly as ``topology.py`` says the deployment is.

The state machines are the files in ``statemachines/``, substituted the way CDK does
(``${<function>_arn}`` → the function's ARN, numeric settings shrunk so retries don't sleep
for real), executed by moto's ASL interpreter, which calls our handlers through the
Lambda patch. EventBridge rules use moto's own pattern matching; schedules run on a
thread at ``schedule_speedup`` × the deployed rate.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
from moto.server import ThreadedMotoServer

from batchlane.config import reload_settings
from batchlane.local import iam, patches, postgres
from batchlane.local.bedrock import BatchQuotas, BedrockEmulator, parse_faults
from batchlane.local.lambda_runtime import HandlerRegistry
from batchlane.runtime import reset_services, services
from batchlane.topology import FUNCTIONS, RULES, SCHEDULES, STATE_MACHINES

log = logging.getLogger("batchlane.local")

ACCOUNT_ID = "123456789012"
REGION = "us-east-1"
BUCKET = "batchlane-offline"
SERVICE_ROLE_ARN = f"arn:aws:iam::{ACCOUNT_ID}:role/batchlane-bedrock-batch"
OFFLINE_SETTINGS = {
    "retry_interval_seconds": "1",
    "chunk_retry_interval_seconds": "1",
    "submit_retry_interval_seconds": "1",
    "collect_retry_interval_seconds": "1",
}
_STATIC_ENV = {
    "AWS_ACCESS_KEY_ID": "offline",
    "AWS_SECRET_ACCESS_KEY": "offline",
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
    schedule_speedup: float = 30.0  # the 1-minute claimer runs every 2 s offline
    extra_env: dict[str, str] = field(default_factory=dict)
    enforce_grants: bool = True  # handlers' AWS calls checked against their topology grants (local/iam.py)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class OfflineStack:
    def __init__(self, options: StackOptions) -> None:
        self.options = options
        self.faults = parse_faults(options.faults)
        self.registry = HandlerRegistry(ACCOUNT_ID, REGION)
        self.env: dict[str, str] = {}
        self.state_machine_arns: dict[str, str] = {}
        self._pg: Any = None
        self._moto: ThreadedMotoServer | None = None
        self.bedrock: BedrockEmulator | None = None
        self.api: Any = None  # LocalApiServer: the api handler on loopback (BATCHLANE_API_URL)
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._saved_env: dict[str, str | None] = {}
        self.grants: iam.GrantEnforcer | None = None  # the offline IAM: .denials, .set_needs(...)

    # -- lifecycle ---------------------------------------------------------------------
    def start(self) -> OfflineStack:
        self.options.workdir.mkdir(parents=True, exist_ok=True)
        database_url = self.options.database_url or self._start_postgres()
        moto_port = _free_port()
        self._set_env({**_STATIC_ENV, "MOTO_PORT": str(moto_port)})
        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        self._moto = ThreadedMotoServer(ip_address="127.0.0.1", port=moto_port, verbose=False)
        self._moto.start()
        moto_url = f"http://127.0.0.1:{moto_port}"
        self._configure_moto(moto_url)
        self.bedrock = BedrockEmulator(
            s3_client_factory=lambda: boto3.client("s3", endpoint_url=moto_url, region_name=REGION),
            publish_event=lambda entry: self._client("events", moto_url).put_events(Entries=[entry]),
            faults=self.faults,
            quotas=self._quotas(),
            account_id=ACCOUNT_ID,
            region=REGION,
        )
        bedrock_url = self.bedrock.start()
        self.state_machine_arns = {spec.name: f"arn:aws:states:{REGION}:{ACCOUNT_ID}:stateMachine:batchlane-{spec.name}" for spec in STATE_MACHINES}
        env = {
            "AWS_ENDPOINT_URL": moto_url,
            "AWS_ENDPOINT_URL_BEDROCK": bedrock_url,
            "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": bedrock_url,
            "DATABASE_URL": database_url,
            "BATCHLANE_BUCKET": BUCKET,
            "BATCHLANE_TIME_SCALE": str(self.faults.time_scale),
            "CONVERSION_STATE_MACHINE_ARN": self.state_machine_arns["conversion"],
            "BATCH_LANE_STATE_MACHINE_ARN": self.state_machine_arns["batch_lane"],
            "BATCH_CONVERSION_ENABLED": "true" if self.options.batch_lane else "false",
            "BATCH_CONVERSION_S3_BUCKET": BUCKET,
            "BATCH_CONVERSION_ROLE_ARN": SERVICE_ROLE_ARN,
            **self.options.extra_env,
        }
        self._set_env(env)
        self.env = {**_STATIC_ENV, "MOTO_PORT": str(moto_port), **env}
        if self.options.enforce_grants:
            self.grants = iam.GrantEnforcer(self._grant_targets())
        iam.install(self.grants)  # before reset_services: the handlers' clients are made hooked
        reset_services()
        from batchlane.db.migrate import migrate

        migrate(services().db)
        patches.install(self.registry, self._start_execution_from_event)
        self._deploy(moto_url)
        from batchlane.local.api_server import LocalApiServer

        self.api = LocalApiServer(self.registry)
        self._set_env({"BATCHLANE_API_URL": self.api.start()})
        self.env["BATCHLANE_API_URL"] = self.api.url
        self._start_schedules()
        log.info("offline stack up", extra={"moto": moto_url, "bedrock": bedrock_url})
        return self

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=5)
        if self.api:
            self.api.stop()
        if self.bedrock:
            self.bedrock.stop()
        reset_services()
        if iam.active() is self.grants:
            iam.install(None)
        if self._moto:
            self._moto.stop()
        if self._pg is not None:
            postgres.stop(self._pg, self.options.workdir / "pgdata")
        for key, value in self._saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value

    def __enter__(self) -> OfflineStack:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- pieces ------------------------------------------------------------------------
    def _quotas(self) -> BatchQuotas:
        """The emulated account's quotas follow the lane's configuration (AWS's defaults otherwise)."""
        env = {**os.environ, **self.options.extra_env}
        defaults = BatchQuotas()
        return BatchQuotas(
            min_records=min(defaults.min_records, int(env.get("BATCH_CONVERSION_MIN_RECORDS", defaults.min_records))),
            max_records=int(env.get("BATCH_CONVERSION_MAX_RECORDS", defaults.max_records)),
            max_concurrent_jobs=int(env.get("BATCH_CONVERSION_MAX_CONCURRENT_JOBS", defaults.max_concurrent_jobs)),
        )

    def _grant_targets(self) -> iam.Targets:
        """What each resource kind of topology_grants is in this stack (the deployed names, emulated)."""
        return iam.Targets(
            account_id=ACCOUNT_ID,
            region=REGION,
            bucket=BUCKET,
            conversion_state_machine_arn=self.state_machine_arns["conversion"],
            batch_lane_state_machine_arn=self.state_machine_arns["batch_lane"],
            bedrock_service_role_arn=SERVICE_ROLE_ARN,
            model_ids=(reload_settings().batchlane_model_id,),
            database_secret_arn=os.environ.get("DATABASE_SECRET_ARN"),  # when a test serves credentials from a secret
        )

    def _set_env(self, values: dict[str, str]) -> None:
        for key, value in values.items():
            self._saved_env.setdefault(key, os.environ.get(key))
            os.environ[key] = value

    def _start_postgres(self) -> str:
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

    def definition(self, name: str) -> str:
        """The state machine file with CDK's substitutions applied (offline values for intervals)."""
        spec = next(s for s in STATE_MACHINES if s.name == name)
        text = spec.path.read_text()
        values = {**spec.settings, **{k: v for k, v in OFFLINE_SETTINGS.items() if k in spec.settings}}
        values.update({f"{fn}_arn": self.registry.arn(fn) for fn in spec.functions})
        for key, value in values.items():
            text = text.replace("${" + key + "}", value)
        return text

    def _deploy(self, moto_url: str) -> None:
        s3 = self._client("s3", moto_url)
        s3.create_bucket(Bucket=BUCKET)
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
