"""The bedrock batch control plane: Create/Get/Stop/List ModelInvocationJob and tags.

Validation is synchronous and shaped like AWS's (``1 validation error detected: ...``),
so the submit code meets the same rejections here as in the cloud. Idempotency follows
the API: a repeated clientRequestToken returns the job it created, and a jobName
already taken under another token is a ConflictException.
"""

from __future__ import annotations

import re
import secrets
import string
import threading
from collections import Counter
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from batchlane.domain.pool import base_model_id

from .clock import EmulatedClock
from .errors import ApiError, validation
from .faults import Faults
from .job import ACTIVE, Job
from .job_io import S3_URI
from .lifecycle import request_stop
from .quotas import BatchQuotas

JOB_NAME = re.compile(r"[a-zA-Z0-9]{1,63}(-*[a-zA-Z0-9\+\-\.]){0,63}")
ROLE_ARN = re.compile(r"arn:aws(-[^:]+)?:iam::[0-9]{12}:role/.+")
TOKEN = re.compile(r"[a-zA-Z0-9]{1,256}(-*[a-zA-Z0-9]){0,256}")
JOB_IDENTIFIER = re.compile(r"(arn:aws(-[^:]+)?:bedrock:[a-z0-9-]{1,20}:[0-9]{12}:model-invocation-job/)?[a-z0-9]{12}")
INVOCATION_TYPES = ("InvokeModel", "Converse")
STATUSES = ("Submitted", "InProgress", "Completed", "Failed", "Stopping", "Stopped", "PartiallyCompleted", "Expired", "Validating", "Scheduled")
DEFAULT_TIMEOUT_HOURS = 24
_ID_ALPHABET = string.ascii_lowercase + string.digits


def _constraint(value: Any, field: str, constraint: str) -> ApiError:
    shown = "null" if value is None else repr(value) if isinstance(value, str) else str(value)
    return validation(f"1 validation error detected: Value {shown} at '{field}' failed to satisfy constraint: {constraint}")


def _pattern(value: Any, field: str, pattern: re.Pattern[str], max_len: int) -> str:
    if value is None:
        raise _constraint(None, field, "Member must not be null")
    if not isinstance(value, str) or len(value) > max_len or not pattern.fullmatch(value):
        raise _constraint(value, field, f"Member must satisfy regular expression pattern: {pattern.pattern}")
    return value


def _s3_uri(config: Any, outer: str, inner: str) -> None:
    inner_config = config.get(inner) if isinstance(config, Mapping) else None
    uri = inner_config.get("s3Uri") if isinstance(inner_config, Mapping) else None
    _pattern(uri, f"{outer}.{inner}.s3Uri", S3_URI, 1024)


class ControlPlane:
    def __init__(
        self,
        *,
        account_id: str,
        region: str,
        faults: Faults,
        quotas: BatchQuotas,
        clock: EmulatedClock,
        notify: Callable[[Job], None],
        start_job: Callable[[Job], None],
        count: Callable[[str], None],
    ) -> None:
        self._account_id = account_id
        self._region = region
        self._faults = faults
        self._quotas = quotas
        self._clock = clock
        self._notify = notify
        self._start_job = start_job
        self._count = count
        self._lock = threading.Lock()
        self._create_calls = 0
        self.jobs: dict[str, Job] = {}
        # The most jobs of one model ever Submitted..Stopping at once: a test's proof that the
        # lane kept under its own concurrent-job setting (the quota below may be set wider).
        self.peak_active_by_model: Counter[str] = Counter()

    # -- CreateModelInvocationJob -------------------------------------------------

    def create(self, body: Any) -> dict[str, Any]:
        with self._lock:
            self._create_calls += 1
            if self._create_calls <= self._faults.create_throttle:
                self._count("create_throttled")
                raise ApiError("ThrottlingException", "Rate exceeded (emulated fault create_throttle).")
        if not isinstance(body, Mapping):
            raise validation("The request body must be a JSON object.")
        name = _pattern(body.get("jobName"), "jobName", JOB_NAME, 63)
        role_arn = _pattern(body.get("roleArn"), "roleArn", ROLE_ARN, 2048)
        model_id = body.get("modelId")
        if not isinstance(model_id, str) or not 1 <= len(model_id) <= 2048:
            raise _constraint(model_id, "modelId", "Member must have length between 1 and 2048")
        _s3_uri(body.get("inputDataConfig"), "inputDataConfig", "s3InputDataConfig")
        _s3_uri(body.get("outputDataConfig"), "outputDataConfig", "s3OutputDataConfig")
        input_format = body["inputDataConfig"]["s3InputDataConfig"].get("s3InputFormat", "JSONL")
        if input_format != "JSONL":
            raise _constraint(input_format, "inputDataConfig.s3InputDataConfig.s3InputFormat", "Member must satisfy enum value set: [JSONL]")
        timeout = body.get("timeoutDurationInHours", DEFAULT_TIMEOUT_HOURS)
        if isinstance(timeout, bool) or not isinstance(timeout, int) or not 24 <= timeout <= 168:
            raise _constraint(timeout, "timeoutDurationInHours", "Member must have value between 24 and 168")
        invocation_type = body.get("modelInvocationType", "InvokeModel")
        if invocation_type not in INVOCATION_TYPES:
            raise _constraint(invocation_type, "modelInvocationType", "Member must satisfy enum value set: [InvokeModel, Converse]")
        token = body.get("clientRequestToken")
        if token is not None:
            _pattern(token, "clientRequestToken", TOKEN, 256)
        tags = self._tags(body.get("tags", []))

        with self._lock:
            for job in self.jobs.values():
                if token is not None and job.client_token == token:
                    return {"jobArn": job.arn}
            if any(job.name == name for job in self.jobs.values()):
                raise ApiError("ConflictException", f"A batch inference job named {name} already exists.")
            # AWS's quota is per model: "Sum of in-progress and submitted batch inference jobs using a base model".
            # So the us., eu. and global. profiles of one model count together (domain.pool.base_model_id).
            base = base_model_id(model_id)
            active = sum(1 for job in self.jobs.values() if job.status in ACTIVE and base_model_id(job.model_id) == base)
            if active >= self._quotas.max_concurrent_jobs:
                raise ApiError(
                    "ServiceQuotaExceededException",
                    f"You have {active} batch inference jobs submitted or in progress, the quota is {self._quotas.max_concurrent_jobs}.",
                )
            self.peak_active_by_model[model_id] = max(self.peak_active_by_model[model_id], active + 1)
            job_id = "".join(secrets.choice(_ID_ALPHABET) for _ in range(12))
            job = Job(
                arn=f"arn:aws:bedrock:{self._region}:{self._account_id}:model-invocation-job/{job_id}",
                job_id=job_id,
                name=name,
                model_id=model_id,
                role_arn=role_arn,
                client_token=token,
                input_config=dict(body["inputDataConfig"]),
                output_config=dict(body["outputDataConfig"]),
                timeout_hours=timeout,
                invocation_type=invocation_type,
                submit_time=self._clock.now(),
                account_id=self._account_id,
                tags=tags,
                vpc_config=body.get("vpcConfig"),
                notify=self._notify,
            )
            self.jobs[job.arn] = job
            job.transition("Submitted", job.submit_time)
        self._count("jobs_created")
        self._start_job(job)
        return {"jobArn": job.arn}

    # -- Get / Stop / List --------------------------------------------------------

    def find(self, identifier: str) -> Job:
        _pattern(identifier, "jobIdentifier", JOB_IDENTIFIER, 1011)
        with self._lock:
            job = self.jobs.get(identifier) or next((j for j in self.jobs.values() if j.job_id == identifier), None)
        if job is None:
            raise ApiError("ResourceNotFoundException", f"The batch inference job {identifier} was not found.")
        return job

    def get(self, identifier: str) -> dict[str, Any]:
        return self.find(identifier).describe()

    def forget(self, identifier: str) -> Job:
        """Lose a job as a restarted emulator (or AWS's retention) would: Get, Stop and List
        answer ResourceNotFoundException from now on, and the job sends no more events."""
        job = self.find(identifier)
        with self._lock:
            self.jobs.pop(job.arn, None)
        with job.lock:
            job.forgotten = True
            job.notify = None
            job.wake.set()
        return job

    def stop(self, identifier: str) -> dict[str, Any]:
        job = self.find(identifier)
        self._count("stop_requests")
        request_stop(job, self._clock.now())
        return {}

    def list(self, query: Mapping[str, str]) -> dict[str, Any]:
        after = _timestamp(query.get("submitTimeAfter"), "submitTimeAfter")
        before = _timestamp(query.get("submitTimeBefore"), "submitTimeBefore")
        status = query.get("statusEquals")
        if status is not None and status not in STATUSES:
            raise _constraint(status, "statusEquals", f"Member must satisfy enum value set: [{', '.join(STATUSES)}]")
        name_contains = query.get("nameContains")
        order = query.get("sortOrder", "Descending")
        if order not in ("Ascending", "Descending"):
            raise _constraint(order, "sortOrder", "Member must satisfy enum value set: [Ascending, Descending]")
        if query.get("sortBy", "CreationTime") != "CreationTime":
            raise _constraint(query.get("sortBy"), "sortBy", "Member must satisfy enum value set: [CreationTime]")
        try:
            max_results = int(query.get("maxResults", "1000"))
            start = int(query.get("nextToken", "0"))
        except ValueError:
            raise validation("Invalid maxResults or nextToken.") from None
        if not 1 <= max_results <= 1000 or start < 0:
            raise validation("maxResults must be between 1 and 1000 and nextToken must come from a previous call.")
        with self._lock:
            jobs = list(self.jobs.values())
        jobs = [
            j
            for j in jobs
            if (status is None or j.status == status)
            and (name_contains is None or name_contains in j.name)
            and (after is None or j.submit_time > after)
            and (before is None or j.submit_time < before)
        ]
        jobs.sort(key=lambda j: j.submit_time, reverse=order == "Descending")
        page = jobs[start : start + max_results]
        answer: dict[str, Any] = {"invocationJobSummaries": [j.describe() for j in page]}
        if start + max_results < len(jobs):
            answer["nextToken"] = str(start + max_results)
        return answer

    # -- tags ---------------------------------------------------------------------

    @staticmethod
    def _tags(tags: Any) -> dict[str, str]:
        if not isinstance(tags, list) or any(
            not isinstance(t, Mapping) or not isinstance(t.get("key"), str) or not isinstance(t.get("value"), str) for t in tags
        ):
            raise validation("tags: each tag needs a string key and value")
        return {t["key"]: t["value"] for t in tags}

    def _tagged(self, body: Any) -> Job:
        arn = body.get("resourceARN") if isinstance(body, Mapping) else None
        with self._lock:
            job = self.jobs.get(arn or "")
        if job is None:
            raise ApiError("ResourceNotFoundException", f"The resource {arn} was not found.")
        return job

    def tag(self, body: Any) -> dict[str, Any]:
        job = self._tagged(body)
        tags = self._tags(body.get("tags"))
        with job.lock:
            job.tags.update(tags)
        return {}

    def untag(self, body: Any) -> dict[str, Any]:
        job = self._tagged(body)
        with job.lock:
            for key in body.get("tagKeys") or []:
                job.tags.pop(key, None)
        return {}

    def list_tags(self, body: Any) -> dict[str, Any]:
        job = self._tagged(body)
        with job.lock:
            return {"tags": [{"key": k, "value": v} for k, v in job.tags.items()]}


def _timestamp(value: str | None, field: str) -> float | None:
    """botocore sends query-string timestamps as ISO 8601; epoch seconds are accepted too."""
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        stamp = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise _constraint(value, field, "Member must be a timestamp") from None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=UTC)
    return stamp.timestamp()
