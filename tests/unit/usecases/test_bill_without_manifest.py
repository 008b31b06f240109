"""A stopped Bedrock job whose manifest.json.out is missing or unreadable is never billed $0 in silence.

Bedrock writes manifest.json.out at the job's terminal status; if it is missing (deleted, never
written) or unreadable (AccessDenied, truncated), the bill falls back to the usage the output
records carry, the ledger row says it is estimated, and the BatchBillEstimated metric (alarmed
in infra/monitoring.py) counts it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from usecase_fakes import MemoryStore, lane_ledger, parked_job

from batchlane.batch.abandon import abandon
from batchlane.batch.billing import settle_stopping
from batchlane.batch.submit import submit_batch_job
from batchlane.observability import metrics
from batchlane.ports import Services
from batchlane.rows import LedgerRow


@pytest.fixture
def metrics_on(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    metrics.clear_metrics()
    yield
    metrics.clear_metrics()


def _record(record_id: str, tokens_in: int, tokens_out: int) -> dict[str, Any]:
    answer = {
        "content": [{"type": "text", "text": f"# {record_id}"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": tokens_in, "output_tokens": tokens_out},
    }
    return {"recordId": record_id, "modelOutput": answer}


def _stopped_with_outputs(svc: Services, *, manifest: bytes | None) -> tuple[str, str]:
    """A lane whose Bedrock job stopped after answering three records (one of them failed)."""
    parked = parked_job(svc)
    arn = str(submit_batch_job(svc, parked.lane_id)["jobArn"])
    row = svc.uow().lanes.get_row(parked.lane_id)
    assert row is not None and row.output_uri is not None
    prefix = row.output_uri.removeprefix(f"s3://{svc.store.bucket}/").rstrip("/") + "/" + arn.rsplit("/", 1)[-1] + "/"
    lines = [_record("m0c0p1", 1000, 200), _record("m0c0p2", 1200, 300), {"recordId": "m0c1p51", "error": {"errorCode": 500, "errorMessage": "x"}}]
    assert isinstance(svc.store, MemoryStore)
    svc.store.put_bytes(prefix + "input-0.jsonl.out", "\n".join(json.dumps(x) for x in lines).encode())
    if manifest is not None:
        svc.store.put_bytes(prefix + "manifest.json.out", manifest)
    svc.batch_jobs.jobs[arn].status = "Stopped"  # type: ignore[attr-defined]
    return parked.lane_id, arn


def _lane_bill(svc: Services, lane_id: str) -> LedgerRow:
    [bill] = lane_ledger(svc, lane_id, source="batch")
    return bill


def _estimated_count() -> float:
    found = metrics.provider.metric_set.get("BatchBillEstimated", {}).get("Value", [])
    return float(sum(found))


@pytest.mark.parametrize("manifest", [None, b'{"inputTokenCount": 22', b'{"processedRecordCount": 3}'], ids=["missing", "truncated", "no-token-counts"])
def test_an_abandoned_job_without_a_readable_manifest_bills_its_output_records_marked_estimated(
    svc: Services, metrics_on: None, manifest: bytes | None
) -> None:
    lane_id, _ = _stopped_with_outputs(svc, manifest=manifest)

    assert abandon(svc, lane_id, reason="collect_failed")["won"] is True

    bill = _lane_bill(svc, lane_id)
    assert (bill.input_tokens, bill.output_tokens) == (2200, 500), "not $0: the two answered records"
    assert bill.cost_usd > 0
    meta = bill.metadata
    assert meta["estimated"] is True and meta["usageSource"] == "outputRecords" and "manifest" in meta["estimateReason"]
    assert _estimated_count() == 1, "the alarm's metric counts the estimated bill"


def test_a_stopping_lane_settled_without_its_manifest_is_estimated_too(svc: Services, metrics_on: None) -> None:
    parked = parked_job(svc)
    arn = str(submit_batch_job(svc, parked.lane_id)["jobArn"])
    svc.batch_jobs.jobs[arn].status = "InProgress"  # type: ignore[attr-defined]
    assert abandon(svc, parked.lane_id, reason="collect_failed")["endState"] == "stopping"
    svc.batch_jobs.jobs[arn].status = "Stopped"  # type: ignore[attr-defined]  # and Bedrock never wrote a manifest, nor any output
    row = svc.uow().lanes.get_row(parked.lane_id)
    assert row is not None

    assert settle_stopping(svc, row)["won"] is True

    meta = _lane_bill(svc, parked.lane_id).metadata
    assert meta["estimated"] is True, "a $0 bill with nothing to read is at least marked, never silent"
    assert _estimated_count() == 1


def test_a_readable_manifest_is_the_bill_and_nothing_alarms(svc: Services, metrics_on: None) -> None:
    lane_id, _ = _stopped_with_outputs(svc, manifest=json.dumps({"inputTokenCount": 3000, "outputTokenCount": 900}).encode())

    assert abandon(svc, lane_id, reason="collect_failed")["won"] is True

    bill = _lane_bill(svc, lane_id)
    meta = bill.metadata
    assert (bill.input_tokens, bill.output_tokens, meta["estimated"], meta["usageSource"]) == (3000, 900, False, "manifest")
    assert _estimated_count() == 0
