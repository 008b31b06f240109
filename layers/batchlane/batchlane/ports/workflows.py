"""Step Functions executions (one per job, named after it) and the EventBridge bus."""

from __future__ import annotations

from typing import Any, Protocol

from batchlane.domain.workflow_end import Execution


class Workflows(Protocol):
    """One execution per job, named after it: a repeat start returns the same execution."""

    def start_conversion(self, job_id: str) -> str: ...
    def start_retry(self, job_id: str, attempt: int) -> str: ...
    def start_intake(self, job_id: str) -> str: ...
    def start_batch_lane(self, lane_id: str, members: list[str]) -> str: ...  # batch-<laneId>
    def start_webhook_delivery(self, delivery_id: str) -> str: ...
    def start_resume(self, job_id: str, attempt: int) -> str: ...
    def start_folder_job(self, job_id: str, run: str) -> str: ...  # folder-<jobId>-<run>
    def start_estimate(self, estimate_id: str, owner_id: str) -> str: ...  # estimate-<estimateId>
    def describe_execution(self, machine: str, name: str) -> Execution | None:
        """DescribeExecution of ``name`` on the topology's ``machine`` (conversion, intake, folder_job); None when it does not exist."""
        ...

    def send_task_success(self, token: str, output: dict[str, Any]) -> bool:
        """False when the token is no longer valid (the wait already ended): harmless."""
        ...


class EventBus(Protocol):
    def publish(self, detail_type: str, detail: dict[str, Any]) -> None: ...
