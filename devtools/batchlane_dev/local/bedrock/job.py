"""One batch inference job as the emulator keeps it, and how it is shown.

A Job is shared between the HTTP threads (Get, Stop, List) and its own lifecycle
thread, so every mutation goes through :meth:`Job.transition` or happens under
``job.lock``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from .clock import iso

ACTIVE = frozenset({"Submitted", "Validating", "Scheduled", "InProgress", "Stopping"})
STOPPABLE = frozenset({"Submitted", "Validating", "Scheduled", "InProgress"})
TERMINAL = frozenset({"Completed", "PartiallyCompleted", "Failed", "Stopped", "Expired"})


@dataclass
class Job:
    arn: str
    job_id: str
    name: str
    model_id: str
    role_arn: str
    client_token: str | None
    input_config: dict[str, Any]
    output_config: dict[str, Any]
    timeout_hours: int
    invocation_type: str
    submit_time: float
    account_id: str
    tags: dict[str, str] = field(default_factory=dict)
    vpc_config: dict[str, Any] | None = None
    status: str = "Submitted"
    message: str | None = None
    last_modified: float = 0.0
    end_time: float | None = None
    total: int | None = None
    processed: int = 0
    success: int = 0
    errors: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    answered: list[str] = field(default_factory=list)  # record ids answered with output (billed), in order
    lock: threading.RLock = field(default_factory=threading.RLock, repr=False)
    wake: threading.Event = field(default_factory=threading.Event, repr=False)
    stop_requested: bool = False
    forgotten: bool = False  # the service no longer knows this job (see ControlPlane.forget)
    behind_s: float = 0.0  # how far (emulated s) the job thread fell behind the clock: > 0 means time_scale is too high
    history: list[str] = field(default_factory=list)
    notify: Callable[[Job], None] | None = field(default=None, repr=False)

    def transition(self, status: str, at: float, *, message: str | None = None) -> None:
        """Change status and announce it while still holding the lock.

        ``notify`` only enqueues the event (see events.EventDispatcher), so holding the
        lock is cheap and keeps each job's events in transition order even when the
        Stop API and the job thread race.
        """
        with self.lock:
            self.status = status
            self.last_modified = at
            self.history.append(status)
            if message is not None:
                self.message = message
            if status in TERMINAL:
                self.end_time = at
            if self.notify is not None:
                self.notify(self)

    @property
    def expiration_time(self) -> float:
        return self.submit_time + self.timeout_hours * 3600

    @property
    def input_uri(self) -> str:
        return str(self.input_config["s3InputDataConfig"]["s3Uri"])

    @property
    def output_uri(self) -> str:
        return str(self.output_config["s3OutputDataConfig"]["s3Uri"])

    def describe(self) -> dict[str, Any]:
        """The GetModelInvocationJob response (also a ListModelInvocationJobs summary)."""
        with self.lock:
            body: dict[str, Any] = {
                "jobArn": self.arn,
                "jobName": self.name,
                "modelId": self.model_id,
                "roleArn": self.role_arn,
                "status": self.status,
                "submitTime": iso(self.submit_time),
                "lastModifiedTime": iso(self.last_modified or self.submit_time),
                "inputDataConfig": self.input_config,
                "outputDataConfig": self.output_config,
                "timeoutDurationInHours": self.timeout_hours,
                "jobExpirationTime": iso(self.expiration_time),
                "modelInvocationType": self.invocation_type,
            }
            if self.client_token:
                body["clientRequestToken"] = self.client_token
            if self.message:
                body["message"] = self.message
            if self.end_time is not None:
                body["endTime"] = iso(self.end_time)
            if self.vpc_config:
                body["vpcConfig"] = self.vpc_config
            if self.total is not None:
                body.update(
                    totalRecordCount=self.total,
                    processedRecordCount=self.processed,
                    successRecordCount=self.success,
                    errorRecordCount=self.errors,
                )
            return body

    def event_detail(self) -> dict[str, Any]:
        """The detail of an aws.bedrock "Batch Inference Job State Change" event."""
        with self.lock:
            detail: dict[str, Any] = {
                "version": "0.0",
                "accountId": self.account_id,
                "batchJobName": self.name,
                "batchJobArn": self.arn,
                "batchModelId": self.model_id,
                "status": self.status,
                "failureMessage": self.message or "" if self.status == "Failed" else "",
                "creationTime": _console_time(self.submit_time),
                "submitTime": iso(self.submit_time),
                "inputDataConfig": self.input_config,
                "outputDataConfig": self.output_config,
                "roleArn": self.role_arn,
                "timeoutDurationInHours": self.timeout_hours,
                "jobExpirationTime": iso(self.expiration_time),
            }
            if self.end_time is not None:
                detail["endTime"] = iso(self.end_time)
            return detail

    def manifest(self) -> dict[str, int]:
        with self.lock:
            return {
                "totalRecordCount": self.total or 0,
                "processedRecordCount": self.processed,
                "successRecordCount": self.success,
                "errorRecordCount": self.errors,
                "inputTokenCount": self.input_tokens,
                "outputTokenCount": self.output_tokens,
            }


def _console_time(epoch: float) -> str:
    """AWS's own sample event writes creationTime this way ("Aug 11, 2023, 12:34:56 PM")."""
    stamp = datetime.fromtimestamp(epoch, tz=UTC)
    return stamp.strftime("%b %-d, %Y, %-I:%M:%S %p")
