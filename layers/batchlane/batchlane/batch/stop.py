"""batch_stop: ask Bedrock to stop a submitted batch job (overdue wait, cancel, process now)."""

from __future__ import annotations

from botocore.exceptions import ClientError

from batchlane.db import batch_rows as rows
from batchlane.observability import logger
from batchlane.runtime import Services


def stop_batch_job(svc: Services, job_id: str, *, reason: str) -> bool:
    """Best effort: True when Bedrock accepted the stop (or the job was already ending)."""
    row = rows.set_reason(svc.db, job_id, reason)
    if row is None or not row.bedrock_job_arn or row.state != "submitted":
        return False
    try:
        svc.bedrock().stop_model_invocation_job(jobIdentifier=row.bedrock_job_arn)
        logger.info("batch job stop requested", job_id=job_id, reason=reason)
        return True
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "")
        logger.info("batch job stop not accepted", job_id=job_id, code=code, error_message=exc.response.get("Error", {}).get("Message", ""))
        return code == "ValidationException"  # already terminal: nothing left to stop
