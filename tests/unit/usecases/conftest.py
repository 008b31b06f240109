"""Use cases of the batch lane and the operations against in-memory fakes of the AWS ports.

The database is the real embedded PostgreSQL (tests/conftest.py): the repositories are not
behind a port yet (issue 11, point 2), and the guarded transitions are the rules under test.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from fakes import FakeBatchJobs, FakeBus, FakeWorkflows, MemoryStore

from batchlane.batch import rows
from batchlane.config import Settings
from batchlane.db import Database, ledger
from batchlane.db import jobs as job_repo
from batchlane.domain.cost import PriceTable
from batchlane.pdf import plan_chunks
from batchlane.ports import ModelCallFailed
from batchlane.runtime import Services

BUCKET = "unit-bucket"
MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"


class NoModelRuntime:
    def invoke_model(self, request: Any, *, read_timeout: float) -> bytes:
        raise ModelCallFailed("NotInThisTest", "the batch lane's use cases never call the model on-demand")


@pytest.fixture
def svc(db: Database) -> Iterator[Services]:
    settings = Settings(
        batchlane_bucket=BUCKET,
        batch_conversion_s3_bucket=BUCKET,
        batch_conversion_role_arn="arn:aws:iam::123456789012:role/batch",
        batch_conversion_enabled=True,
        batchlane_model_id=MODEL,
        batchlane_time_scale=1.0,
    )
    yield Services(
        settings=settings,
        db=db,
        store=MemoryStore(bucket=BUCKET),
        workflows=FakeWorkflows(),
        bus=FakeBus(),
        prices=PriceTable(settings.batchlane_prices),
        batch_jobs=FakeBatchJobs(),
        model_runtime=NoModelRuntime(),
    )


def parked_job(svc: Services, *, pages: int = 120, records: int = 3, hold_usd: str = "5") -> str:
    """A job parked for the batch lane with its row prepared (``records`` records, manifest in the store)."""
    with svc.db.transaction() as tx:
        file_row = job_repo.insert_file(tx, owner_id="owner-1", name="a.pdf", s3_key="uploads/owner-1/a.pdf", size_bytes=10)
        job = job_repo.insert_job(
            tx,
            file_id=str(file_row["id"]),
            owner_id="owner-1",
            status="waiting_batch",
            options={},
            model_id=MODEL,
            total_pages=pages,
            pages_per_chunk=50,
            chunks=plan_chunks(pages, 50),
        )
        job_id = str(job["id"])
        ledger.place_hold(tx, job_id=job_id, owner_id="owner-1", amount_usd=Decimal(hold_usd), hours=30)
        rows.insert_preparing(tx, job_id=job_id, model_id=MODEL, deadline_hours=26)
    manifest_key = f"batch/{job_id}/manifest.json"
    hashes = {f"c0-p{page}": f"hash-{page}" for page in range(1, records + 1)}
    svc.store.put_json(manifest_key, {"modelId": MODEL, "chunks": [0, 1, 2], "promptHashes": hashes})
    rows.record_prepared(svc.db, job_id, record_count=records, input_bytes=1000, manifest_key=manifest_key)
    return job_id
