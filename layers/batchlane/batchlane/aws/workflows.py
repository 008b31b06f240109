"""Starting state machine executions, one per job, named after the job (idempotent)."""

from __future__ import annotations

import json
from typing import Any

from botocore.exceptions import ClientError

from batchlane.domain.workflow_end import Execution


def execution_name(kind: str, job_id: str) -> str:
    return f"{kind}-{job_id}"


class StepFunctionsWorkflows:
    def __init__(
        self,
        sfn: Any,
        *,
        conversion_arn: str | None,
        batch_lane_arn: str | None,
        intake_arn: str | None = None,
        webhook_delivery_arn: str | None = None,
        folder_job_arn: str | None = None,
        estimate_arn: str | None = None,
    ) -> None:
        self._sfn = sfn
        self.conversion_arn = conversion_arn
        self.batch_lane_arn = batch_lane_arn
        self.intake_arn = intake_arn
        self.webhook_delivery_arn = webhook_delivery_arn
        self.folder_job_arn = folder_job_arn
        self.estimate_arn = estimate_arn

    def _start(self, arn: str | None, name: str, payload: dict[str, Any]) -> str:
        if not arn:
            raise RuntimeError("state machine ARN not configured (CONVERSION_ / BATCH_LANE_ / INTAKE_STATE_MACHINE_ARN)")
        try:
            return str(self._sfn.start_execution(stateMachineArn=arn, name=name, input=json.dumps(payload))["executionArn"])
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ExecutionAlreadyExists":
                return f"{arn.replace(':stateMachine:', ':execution:')}:{name}"  # a repeat start is harmless
            raise

    def start_conversion(self, job_id: str) -> str:
        return self._start(self.conversion_arn, execution_name("conversion", job_id), {"jobId": job_id})

    def start_retry(self, job_id: str, attempt: int) -> str:
        """A retry of a job's failed pages runs the conversion machine again as ``retry-<jobId>-<n>``."""
        return self._start(self.conversion_arn, f"{execution_name('retry', job_id)}-{attempt}", {"jobId": job_id})

    def start_resume(self, job_id: str, attempt: int) -> str:
        """A job resumed after a budget pause runs the conversion machine again as ``resume-<jobId>-<n>``."""
        return self._start(self.conversion_arn, f"{execution_name('resume', job_id)}-{attempt}", {"jobId": job_id})

    def start_intake(self, job_id: str) -> str:
        """The split of a new job (download, validate, chunk): ``intake-<jobId>``, one per job."""
        return self._start(self.intake_arn, execution_name("intake", job_id), {"jobId": job_id})

    def start_batch_lane(self, lane_id: str, members: list[str]) -> str:
        """One execution per lane (Bedrock job), ``batch-<laneId>``; its input names the member jobs for the console."""
        return self._start(self.batch_lane_arn, execution_name("batch", lane_id), lane_input(lane_id, members))

    def start_webhook_delivery(self, delivery_id: str) -> str:
        """One execution per webhook delivery, ``delivery-<deliveryId>`` (its input is the id, never the body)."""
        return self._start(self.webhook_delivery_arn, execution_name("delivery", delivery_id), {"deliveryId": delivery_id})

    def start_folder_job(self, job_id: str, run: str) -> str:
        """A folder job's loop (enumerate, start files, report): ``folder-<jobId>-<run>``; a resume or retry is a new run."""
        return self._start(self.folder_job_arn, f"{execution_name('folder', job_id)}-{run}", {"jobId": job_id})

    def start_estimate(self, estimate_id: str, owner_id: str) -> str:
        """A dry run's estimate in its worker: ``estimate-<estimateId>``; the owner rides along for the worker's logs."""
        return self._start(self.estimate_arn, execution_name("estimate", estimate_id), {"estimateId": estimate_id, "ownerId": owner_id})

    def describe_execution(self, machine: str, name: str) -> Execution | None:
        """DescribeExecution of ``name`` on ``machine`` (conversion, intake, folder_job); None when there is none."""
        arn = {"conversion": self.conversion_arn, "intake": self.intake_arn, "folder_job": self.folder_job_arn}.get(machine)
        if not arn:
            raise RuntimeError(f"state machine ARN not configured for {machine!r}")
        try:
            out = self._sfn.describe_execution(executionArn=f"{arn.replace(':stateMachine:', ':execution:')}:{name}")
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ExecutionDoesNotExist":
                return None
            raise
        return Execution(machine=machine, name=name, status=str(out["status"]), started_at=out["startDate"], stopped_at=out.get("stopDate"))

    def send_task_success(self, token: str, output: dict[str, Any]) -> bool:
        """False when the token is no longer valid (the wait already ended): harmless."""
        try:
            self._sfn.send_task_success(taskToken=token, output=json.dumps(output))
            return True
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("TaskTimedOut", "TaskDoesNotExist", "InvalidToken"):
                return False
            raise


MAX_LISTED_MEMBERS = 500  # 500 job ids are ~20 KB of the execution input's 256 KB


def lane_input(lane_id: str, members: list[str]) -> dict[str, Any]:
    """The execution input: the lane and (the first 500 of) its member jobs, for a reader of the console."""
    listed = members[:MAX_LISTED_MEMBERS]
    return {"laneId": lane_id, "memberCount": len(members), "members": listed, "membersListed": len(listed)}
