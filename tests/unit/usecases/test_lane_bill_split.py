"""A shared lane's bill is split by each member's own tokens (issue 21.5), on fakes of Bedrock and S3
and the in-memory unit of work (no server): owner A's dense, long-answer pages are paid by A, not by B who shares A's Bedrock job."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from usecase_fakes import FakeBatchJobs, MemoryStore, all_chunks, lane_ledger, new_job, prepared_lane

from batchlane.batch.collect import collect
from batchlane.batch.submit import submit_batch_job
from batchlane.domain.cost import Usage
from batchlane.ports import Services


def _answer(record_id: str, tokens_in: int, tokens_out: int) -> dict[str, Any]:
    body = {
        "content": [{"type": "text", "text": f"# {record_id}"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": tokens_in, "output_tokens": tokens_out},
    }
    return {"recordId": record_id, "modelOutput": body}


def test_each_member_of_a_shared_lane_pays_for_its_own_tokens(svc: Services) -> None:
    # A (owner-1, tag m0) sends one chunk of one record, B (owner-2, tag m1) one chunk of one record:
    # the same record count, but A's page is dense with a long answer
    a, b = new_job(svc, pages=40, owner="owner-1"), new_job(svc, pages=40, owner="owner-2")
    lane_id = prepared_lane(svc, [*all_chunks(svc, a), *all_chunks(svc, b)])
    arn = str(submit_batch_job(svc, lane_id)["jobArn"])
    row = svc.uow().lanes.get_row(lane_id)
    assert row is not None and row.output_uri is not None
    prefix = row.output_uri.removeprefix(f"s3://{svc.store.bucket}/").rstrip("/") + "/" + arn.rsplit("/", 1)[-1] + "/"
    lines = [_answer("m0c0p1", 9_000, 8_000), _answer("m1c0p1", 1_000, 200)]
    assert isinstance(svc.store, MemoryStore) and isinstance(svc.batch_jobs, FakeBatchJobs)
    svc.store.put_bytes(prefix + "input-0.jsonl.out", "\n".join(json.dumps(x) for x in lines).encode())
    svc.batch_jobs.jobs[arn].status = "Completed"

    assert collect(svc, lane_id)["won"] is True

    shares = {str(r.job_id): r for r in lane_ledger(svc, lane_id, source="batch_share")}
    assert (shares[a].input_tokens, shares[a].output_tokens) == (9_000, 8_000)
    assert (shares[b].input_tokens, shares[b].output_tokens) == (1_000, 200)
    model = svc.settings.batchlane_model_id
    own_b = svc.prices.cost(model, Usage(1_000, 200), batch=True)
    assert abs(shares[b].cost_usd - own_b) <= Decimal("0.000001"), "B pays the price of its own tokens"
    [bill] = lane_ledger(svc, lane_id, source="batch")
    assert shares[a].cost_usd + shares[b].cost_usd == bill.cost_usd  # and the shares add up to the bill
    assert svc.uow().ledger.job_total(b) == shares[b].cost_usd
