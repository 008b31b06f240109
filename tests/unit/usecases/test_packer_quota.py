"""The packer counts Bedrock's concurrent batch-job quota per BASE model.

AWS names the quota "Sum of in-progress and submitted batch inference jobs using a base model
for M": the us. and global. inference profiles of one model (and the model id itself) share it,
so a lane on one profile takes a slot from the other.
"""

from __future__ import annotations

import dataclasses
from decimal import Decimal

from usecase_fakes import MODEL, new_job, packed_lane

from batchlane.batch.packer import pack_pool
from batchlane.domain import status as st
from batchlane.domain.pool import base_model_id
from batchlane.pdf import plan_chunks
from batchlane.ports import Services
from fakes import FakeUnitOfWork

GLOBAL = MODEL.replace("us.", "global.", 1)  # the same Claude model through the global profile
OTHER = "us.anthropic.claude-haiku-4-5-20251001-v1:0"


def _quota_of_one(svc: Services) -> Services:
    settings = svc.settings.model_copy(update={"batch_conversion_max_concurrent_jobs": 1, "batch_conversion_min_records": 1, "batch_pool_window_minutes": 0})
    return dataclasses.replace(svc, settings=settings)


def _parked_on(svc: Services, model_id: str, owner: str) -> str:
    """A job of 60 pages parked for the batch lane on ``model_id``, with a funds hold (usecase_fakes.new_job on another model)."""
    with svc.uow() as uow:
        file_row = uow.jobs.insert_file(owner_id=owner, name="a.pdf", s3_key=f"uploads/{owner}/a.pdf", size_bytes=10)
        job = uow.jobs.insert_job(
            file_id=file_row.id, owner_id=owner, status="waiting_batch", options={}, model_id=model_id, total_pages=60, pages_per_chunk=50,
            chunks=plan_chunks(60, 50),
        )  # fmt: skip
        uow.ledger.place_hold(job_id=job.id, owner_id=owner, amount_usd=Decimal(5), hours=30)
    return job.id


def test_profiles_of_one_model_are_one_base_model() -> None:
    assert base_model_id(MODEL) == base_model_id(GLOBAL) == base_model_id("eu.anthropic.claude-sonnet-4-5-20250929-v1:0")
    assert base_model_id(MODEL) == "anthropic.claude-sonnet-4-5-20250929-v1:0" == base_model_id("anthropic.claude-sonnet-4-5-20250929-v1:0")
    assert base_model_id(f"arn:aws:bedrock:us-east-1:123456789012:inference-profile/{GLOBAL}") == base_model_id(MODEL)
    assert base_model_id(OTHER) != base_model_id(MODEL)


def test_a_lane_on_the_us_profile_takes_the_only_slot_of_the_global_profile_too(svc_on_fakes: Services) -> None:
    svc = _quota_of_one(svc_on_fakes)
    running = new_job(svc, pages=60, owner="owner-1")  # on MODEL (us.)
    packed_lane(svc, [(running, 0), (running, 1)])  # in flight: it holds the base model's one slot
    waiting = _parked_on(svc, GLOBAL, "owner-2")
    other = _parked_on(svc, OTHER, "owner-3")

    result = pack_pool(svc)

    packed = {lane["modelId"]: lane["jobs"] for lane in result["lanes"]}
    assert GLOBAL not in packed, "the global profile shares the us. profile's quota: it waits for the slot"
    assert packed == {OTHER: [other]}, "another base model has its own quota"
    assert waiting not in result["letGo"] and result["waiting"] >= 1, "waiting for the quota is a wait, never on-demand"


def test_when_the_slot_frees_the_other_profile_gets_it(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    svc = _quota_of_one(svc_on_fakes)
    running = new_job(svc, pages=60, owner="owner-1")
    lane_id = packed_lane(svc, [(running, 0), (running, 1)])
    waiting = _parked_on(svc, GLOBAL, "owner-2")
    assert pack_pool(svc)["lanes"] == []
    assert fake_uow.lanes.close(lane_id, st.leave_before_submit(), end_state="Completed") is not None
    assert fake_uow.lanes.in_flight_by_base_model().get(base_model_id(MODEL), 0) == 0

    [lane] = pack_pool(svc)["lanes"]

    assert (lane["modelId"], lane["jobs"]) == (GLOBAL, [waiting])
