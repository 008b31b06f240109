"""Issue 42.4: Bedrock's batch size quotas are in GB, 10⁹ bytes, not GiB (2³⁰). The lane's MB settings are
10⁶ bytes, so the 5 GB job-size quota is 5,000 MB; read as 5,120 MiB a lane of up to 5.37 GB was sent and
Bedrock's validation failed it (every member then went on-demand at twice the price)."""

from __future__ import annotations

import json
from decimal import Decimal

from batchlane.batch.packer import _plans
from batchlane.config import Settings
from batchlane.domain.limits import MB, quota_bytes
from batchlane.rows import PooledChunk, PoolRead
from batchlane_dev.cli.doctor.quotas import BatchQuotaValues, compare
from batchlane_dev.cli.doctor.target import Target
from batchlane_dev.local.bedrock.quotas import BatchQuotas
from batchlane_dev.local.bedrock.service_quotas import ServiceQuotasApi

GB = 10**9


def test_the_default_job_and_file_caps_fit_5_gb_and_1_gb_as_aws_counts_them():
    settings = Settings()
    assert MB == 10**6
    assert quota_bytes(settings.batch_conversion_max_job_mb) <= 5 * GB
    assert quota_bytes(Settings.model_fields["batch_conversion_max_job_mb"].metadata[-1].le) <= 5 * GB  # the highest value allowed too
    assert quota_bytes(Settings.model_fields["batch_conversion_max_file_mb"].metadata[-1].le) <= 1 * GB


def test_the_packer_packs_lanes_under_5_gb_not_5_gib():
    # 60 chunks of ~100 MB of records each: 6 GB in all, one lane per 5 GB at most.
    chunks = [PooledChunk("job-a", "us.anthropic.claude-sonnet-4-5-20250929-v1:0", i, 50, 10_000.0, 75_000_000) for i in range(60)]
    read = PoolRead(chunks=chunks, truncated={}, smallest={}, lightest={})
    [(_, plan)] = _plans(read, {}, Settings(batch_conversion_min_records=1, batch_pool_window_minutes=0))
    assert len(plan.bedrock_jobs) >= 2
    for job in plan.bedrock_jobs:
        assert sum(c.input_bytes for c in job) <= 5 * GB, sum(c.input_bytes for c in job)


def test_the_emulator_and_its_service_quotas_count_a_gb_as_10_to_the_9():
    quotas = BatchQuotas()
    assert (quotas.max_file_bytes, quotas.max_job_bytes) == (1 * GB, 5 * GB)
    api = ServiceQuotasApi(BatchQuotas(max_job_bytes=5 * GB), account_id="123456789012", region="us-east-1")
    values = {q["QuotaName"]: q["Value"] for q in api._quotas}
    assert values["Batch inference job size (in GB) for Claude Sonnet 4.5"] == 5.0


def test_the_doctor_warns_of_a_5120_mb_cap_against_a_5_gb_quota_and_passes_5000():
    quotas = BatchQuotaValues("Claude Sonnet 4.5", {"max_job_gb": 5.0, "max_file_gb": 1.0})

    def job_check(job_mb: int) -> object:
        target = Target("t", {"LaneSettings": json.dumps({"BATCH_CONVERSION_MAX_JOB_MB": str(job_mb)})}, offline=True)
        return {c.name: c for c in compare(target, quotas)}["quota max_job_gb"]

    over, fits = job_check(5120), job_check(5000)
    assert over.ok is False and "5000 MB per job" in over.detail  # type: ignore[attr-defined]
    assert fits.ok is True  # type: ignore[attr-defined]
    assert Decimal(5000) * MB == 5 * GB
