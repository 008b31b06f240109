"""ServiceTierRepository's contract, on the fake and on PostgreSQL: the doctor's last probe of a model's tier, and why
a job left the pool (what the chunk processor's Flex rule reads)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from batchlane.domain.status import JobStatus
from batchlane.pdf.split import plan_chunks


def _model() -> str:
    return f"model-{uuid.uuid4()}"  # the PostgreSQL side is shared by every test: a model of its own


def _parked_job(uow: Any) -> str:
    file_id = uow.jobs.insert_file(owner_id="owner-tiers", name="book.pdf", s3_key=f"uploads/{uuid.uuid4()}.pdf", size_bytes=1000).id
    job = uow.jobs.insert_job(
        file_id=file_id, owner_id="owner-tiers", status=JobStatus.WAITING_BATCH, options={}, model_id="model-a", total_pages=4,
        pages_per_chunk=2, chunks=plan_chunks(4, 2),
    )  # fmt: skip
    return str(job.id)


def test_a_tier_never_probed_is_none_and_the_last_probe_wins(uow: Any) -> None:
    model, other = _model(), _model()
    assert uow.service_tiers.probed(model) is None
    uow.service_tiers.record_probe(model, "flex", accepted=False, detail="ValidationException: serviceTier")
    uow.service_tiers.record_probe(other, "flex", accepted=True, detail="batchlane doctor --live")
    assert uow.service_tiers.probed(model) is False
    uow.service_tiers.record_probe(model, "flex", accepted=True, detail="batchlane doctor --live")
    assert (uow.service_tiers.probed(model), uow.service_tiers.probed(model, "flex"), uow.service_tiers.probed(other)) == (True, True, True)
    assert uow.service_tiers.probed(model, "priority") is None  # one row per model and tier


def test_a_tier_outside_the_tables_check_is_refused(uow: Any) -> None:
    model = _model()
    with pytest.raises(Exception), uow:  # the CHECK's error (pg8000's) or the fake's ValueError
        uow.service_tiers.record_probe(model, "turbo", accepted=True, detail="doctor")
    assert uow.service_tiers.probed(model, "turbo") is None


def test_a_jobs_lane_reason_is_the_first_reason_the_pool_let_it_go_for(uow: Any) -> None:
    job, never = _parked_job(uow), _parked_job(uow)
    assert uow.service_tiers.job_lane_reason(job) is None
    assert uow.lanes.leave_pool([job], reason="deadline") == [job]
    assert uow.lanes.leave_pool([job], reason="pool_too_small") == []  # it left already: the first reason stays
    assert uow.service_tiers.job_lane_reason(job) == "deadline"
    assert uow.service_tiers.job_lane_reason(never) is None
    assert uow.service_tiers.job_lane_reason(str(uuid.uuid4())) is None
