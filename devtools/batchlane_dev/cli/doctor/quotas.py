"""The account's Bedrock batch quotas (Service Quotas, ServiceCode ``bedrock``) against the lane's settings.

Quotas are per model and found by NAME: the codes differ per model (and cannot be
guessed), the names follow one pattern ending with GetFoundationModel's ``modelName``,
e.g. "Records per batch inference job for Claude Sonnet 4" (AWS General Reference,
"Amazon Bedrock endpoints and quotas"). Sizes come both as "... size (in GB) for M" and
"... size for M (in GB)"; the "(in GB)" is dropped before matching.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from batchlane_dev.cli.doctor.results import Check, passed, warned
from batchlane_dev.cli.doctor.target import Target

SERVICE_CODE = "bedrock"
# {key: AWS's quota names, {model} = GetFoundationModel modelName}; matched case-insensitively, "(in GB)" dropped
QUOTA_PATTERNS: dict[str, tuple[str, ...]] = {
    "min_records": ("Minimum number of records per batch inference job for {model}",),
    "max_records": ("Records per batch inference job for {model}",),
    "max_file_gb": ("Batch inference input file size (in GB) for {model}",),
    "max_job_gb": ("Batch inference job size (in GB) for {model}",),
    "max_concurrent_jobs": (
        "Sum of in-progress and submitted batch inference jobs using a base model for {model}",
        "Number of concurrent batch inference jobs for {model}",
    ),
}


def _normalise(name: str) -> str:
    return re.sub(r"\s+", " ", name.lower().replace("(in gb)", "")).strip()


@dataclass(frozen=True)
class BatchQuotaValues:
    model_name: str
    values: dict[str, float]  # keys of QUOTA_PATTERNS found for the model


def read_batch_quotas(service_quotas: Any, model_name: str) -> BatchQuotaValues:
    """Every Bedrock quota (ListServiceQuotas, paginated), keeping the batch ones of this model."""
    by_name: dict[str, float] = {}
    for page in service_quotas.get_paginator("list_service_quotas").paginate(ServiceCode=SERVICE_CODE):
        for quota in page.get("Quotas", []):
            by_name[_normalise(quota["QuotaName"])] = float(quota["Value"])
    values: dict[str, float] = {}
    for key, patterns in QUOTA_PATTERNS.items():
        for pattern in patterns:
            name = _normalise(pattern.format(model=model_name))
            if name in by_name:
                values[key] = by_name[name]
                break
    return BatchQuotaValues(model_name, values)


def compare(target: Target, quotas: BatchQuotaValues) -> list[Check]:
    """One check per lane setting: a warning where the setting is outside what the account allows."""
    model = quotas.model_name
    q = quotas.values
    checks: list[Check] = []

    def missing(key: str) -> Check:
        return warned(f"quota {key}", f"no Service Quotas entry like {QUOTA_PATTERNS[key][0].format(model=model)!r}: check the Bedrock quotas in the console")

    min_records = target.setting("BATCH_CONVERSION_MIN_RECORDS", 100)
    if "min_records" not in q:
        checks.append(missing("min_records"))
    elif min_records < q["min_records"]:
        checks.append(
            warned(
                "quota min_records",
                f"BATCH_CONVERSION_MIN_RECORDS={min_records} is below the account's minimum of {q['min_records']:g} records per job for {model}: "
                "Bedrock rejects smaller jobs (raise the setting)",
            )
        )
    else:
        checks.append(passed("quota min_records", f"BATCH_CONVERSION_MIN_RECORDS={min_records} ≥ {q['min_records']:g} ({model})"))
    limits = (
        ("max_records", "BATCH_CONVERSION_MAX_RECORDS", 50_000, 1.0, "records per job"),
        # per BASE model: every profile of it (us., global.) and other applications in the account share it
        ("max_concurrent_jobs", "BATCH_CONVERSION_MAX_CONCURRENT_JOBS", 10, 1.0, "submitted + in-progress jobs of the base model, shared by its profiles"),
        # AWS's GB is 10**9 bytes and the settings' MB 10**6 (domain/limits.quota_bytes): 1,000 MB to the GB
        ("max_file_gb", "BATCH_CONVERSION_MAX_FILE_MB", 200, 1000.0, "MB per input file"),
        ("max_job_gb", "BATCH_CONVERSION_MAX_JOB_MB", 5000, 1000.0, "MB per job"),
    )
    for key, setting, default, scale, unit in limits:
        value = target.setting(setting, default)
        if key not in q:
            checks.append(missing(key))
            continue
        allowed = q[key] * scale
        if value > allowed:
            checks.append(
                warned(
                    f"quota {key}", f"{setting}={value} exceeds the account's quota of {allowed:g} {unit} for {model}: lower the setting or request an increase"
                )
            )
        else:
            checks.append(passed(f"quota {key}", f"{setting}={value} ≤ {allowed:g} {unit} ({model})"))
    return checks
