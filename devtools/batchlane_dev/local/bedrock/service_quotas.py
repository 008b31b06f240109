"""Service Quotas for Amazon Bedrock's batch inference, offline (moto has none for ServiceCode "bedrock").

AWS JSON 1.1 (``X-Amz-Target: ServiceQuotasV20190624.<Operation>``), the two reads
``batchlane doctor`` uses: GetServiceQuota and ListServiceQuotas (paginated). The quotas
are AWS's per-model batch quotas, named as the Service Quotas console and the General
Reference name them ("Records per batch inference job for Claude Sonnet 4", ...), one set
per emulated model, valued from the emulator's :class:`.quotas.BatchQuotas`. Quota codes
are opaque per model on AWS; here they are stable hashes of the name (clients must find
quotas by name, never by a code copied from another account or model).
"""

from __future__ import annotations

import hashlib
from typing import Any

from .catalog import MODELS
from .errors import ApiError
from .quotas import GB, BatchQuotas

TARGET_PREFIX = "ServiceQuotasV20190624."
SERVICE_CODE = "bedrock"

# {field of BatchQuotas: (quota name pattern, divisor to the quota's unit)}
QUOTA_NAMES: dict[str, tuple[str, int]] = {
    "min_records": ("Minimum number of records per batch inference job for {model}", 1),
    "max_records": ("Records per batch inference job for {model}", 1),
    "max_file_bytes": ("Batch inference input file size (in GB) for {model}", GB),
    "max_job_bytes": ("Batch inference job size (in GB) for {model}", GB),
    "max_concurrent_jobs": ("Sum of in-progress and submitted batch inference jobs using a base model for {model}", 1),
}


def quota_code(name: str) -> str:
    return "L-" + hashlib.sha256(name.encode()).hexdigest()[:8].upper()


class ServiceQuotasApi:
    def __init__(self, quotas: BatchQuotas, *, account_id: str, region: str) -> None:
        self._account_id, self._region = account_id, region
        self._quotas: list[dict[str, Any]] = []
        for model in MODELS:
            for field, (pattern, divisor) in QUOTA_NAMES.items():
                name = pattern.format(model=model.name)
                code = quota_code(name)
                self._quotas.append(
                    {
                        "ServiceCode": SERVICE_CODE,
                        "ServiceName": "Amazon Bedrock",
                        "QuotaArn": f"arn:aws:servicequotas:{region}:{account_id}:{SERVICE_CODE}/{code}",
                        "QuotaCode": code,
                        "QuotaName": name,
                        "Value": float(getattr(quotas, field)) / divisor,
                        "Unit": "None",
                        "Adjustable": True,
                        "GlobalQuota": False,
                        "QuotaAppliedAtLevel": "ACCOUNT",
                    }
                )

    def handle(self, target: str, body: dict[str, Any]) -> dict[str, Any]:
        operation = target.removeprefix(TARGET_PREFIX)
        if operation == "GetServiceQuota":
            return {"Quota": self._get(body)}
        if operation == "ListServiceQuotas":
            return self._list(body)
        raise ApiError("UnknownOperationException", f"The emulator does not serve Service Quotas {operation}.")

    def _check_service(self, body: dict[str, Any]) -> None:
        if body.get("ServiceCode") != SERVICE_CODE:
            raise ApiError("NoSuchResourceException", f"The request failed because the specified service {body.get('ServiceCode')!r} does not exist.")

    def _get(self, body: dict[str, Any]) -> dict[str, Any]:
        self._check_service(body)
        for quota in self._quotas:
            if quota["QuotaCode"] == body.get("QuotaCode"):
                return dict(quota)
        raise ApiError("NoSuchResourceException", f"The request failed because the specified quota {body.get('QuotaCode')!r} does not exist.")

    def _list(self, body: dict[str, Any]) -> dict[str, Any]:
        self._check_service(body)
        size = max(1, min(100, int(body.get("MaxResults") or 100)))
        start = int(body.get("NextToken") or 0)
        page = [dict(q) for q in self._quotas[start : start + size]]
        answer: dict[str, Any] = {"Quotas": page}
        if start + size < len(self._quotas):
            answer["NextToken"] = str(start + size)
        return answer
