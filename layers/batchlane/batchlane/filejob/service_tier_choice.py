"""The service tier a chunk's on-demand calls go at, wired from the settings, the price table and the doctor's probes."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from batchlane.claude import Transport
from batchlane.claude.tiers import FlexTransport
from batchlane.domain import service_tier as tiers
from batchlane.ports import ServiceTierRepository
from batchlane.rows import JobRow


def flex_lane(svc: Any, probes: ServiceTierRepository, job: JobRow, *, retrying: bool) -> str | None:
    """Why this job's on-demand work goes Flex (domain/service_tier.py), or None for the default tier.
    No Flex rate configured (today's default): no database read at all."""
    if svc.prices.flex_rate(job.model_id) is None:
        return None
    if not tiers.flex_for_model(job.model_id, probe=probes.probed(job.model_id), rate_configured=True).on:
        return None
    return tiers.flex_reason(
        job.options or {},
        lane_reason=probes.job_lane_reason(job.id),
        retrying=retrying,
        now=datetime.now(UTC),
        min_deadline_hours=svc.settings.batchlane_flex_min_deadline_hours,
        process_now=job.process_now,
        batch_primed=job.batch_primed,
    )


def with_flex(reason: str | None, transport: Transport) -> Transport:
    return transport if reason is None else FlexTransport(transport)
