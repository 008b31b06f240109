"""In-memory fakes of the AWS ports (batchlane.ports), following AWS's documented behaviour.

- BatchJobs: a create with a name that exists is adopted (same ARN); Stop on a job that has
  ended answers BatchJobAlreadyEnded (Bedrock's ValidationException); an unknown ARN is
  BatchJobNotFound (ResourceNotFoundException).
- Workflows: an execution name used before returns the same execution (ExecutionAlreadyExists
  is harmless); a task token answers once.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from batchlane import keys
from batchlane.domain.errors import NotFound
from batchlane.domain.records import pooled_record_id, record_id
from batchlane.pdf import plan_chunks
from batchlane.ports import BatchJobAlreadyEnded, BatchJobNotFound, BatchJobRef, BatchJobSpec, ModelCallFailed, Services
from batchlane.rows import Lane, LedgerRow
from fakes import FakeUnitOfWork
from fakes.ledger import money
from fakes.pool import lane_rows

BUCKET = "unit-bucket"
MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"


class NoModelRuntime:
    def invoke_model(self, request: Any, *, read_timeout: float) -> Any:
        raise ModelCallFailed("NotInThisTest", "the batch lane's use cases never call the model on-demand")


TERMINAL = frozenset({"Completed", "PartiallyCompleted", "Failed", "Stopped", "Expired"})


@dataclass
class FakeBatchJob:
    spec: BatchJobSpec
    arn: str
    status: str = "Submitted"


@dataclass
class FakeBatchJobs:
    jobs: dict[str, FakeBatchJob] = field(default_factory=dict)
    refuse_create: Exception | None = None  # raised by the next creates (BatchJobsBusy, BatchJobRejected)
    stops: list[str] = field(default_factory=list)

    def create(self, spec: BatchJobSpec) -> str:
        if self.refuse_create is not None:
            raise self.refuse_create
        for job in self.jobs.values():
            if job.spec.name == spec.name:
                return job.arn  # same name and token: Bedrock answers with the job it made
        arn = f"arn:aws:bedrock:us-east-1:123456789012:model-invocation-job/{uuid.uuid4().hex[:12]}"  # Bedrock assigns unique ids
        self.jobs[arn] = FakeBatchJob(spec, arn)
        return arn

    def status(self, arn: str) -> str:
        if arn not in self.jobs:
            raise BatchJobNotFound("ResourceNotFoundException", f"no job {arn}")
        return self.jobs[arn].status

    def stop(self, arn: str) -> None:
        job = self.jobs.get(arn)
        if job is None:
            raise BatchJobNotFound("ResourceNotFoundException", f"no job {arn}")
        if job.status in TERMINAL or job.status == "Stopping":
            raise BatchJobAlreadyEnded("ValidationException", f"job is {job.status}")
        self.stops.append(arn)
        job.status = "Stopping"

    def find_by_name(self, name: str) -> BatchJobRef | None:
        return next((BatchJobRef(j.arn, j.spec.name) for j in self.jobs.values() if j.spec.name == name), None)


@dataclass
class MemoryStore:
    bucket: str = "unit-bucket"
    objects: dict[str, bytes] = field(default_factory=dict)

    def put_bytes(self, key: str, data: bytes, content_type: str = "application/octet-stream") -> None:
        self.objects[key] = data

    def put_stream(self, key: str, chunks: Iterator[bytes], content_type: str = "application/octet-stream") -> None:
        self.objects[key] = b"".join(chunks)

    def get_bytes(self, key: str) -> bytes:
        if key not in self.objects:
            raise NotFound(f"no object {key}")
        return self.objects[key]

    def read_range(self, key: str, start: int, length: int) -> bytes:
        return self.get_bytes(key)[start : start + max(length, 0)]

    def put_json(self, key: str, value: Any) -> None:
        self.put_bytes(key, json.dumps(value).encode())

    def get_json(self, key: str) -> Any:
        return json.loads(self.get_bytes(key))

    def iter_lines(self, key: str) -> Iterator[bytes]:
        yield from self.get_bytes(key).splitlines()

    def download_to(self, key: str, path: Path, *, max_bytes: int | None = None) -> int:
        path.write_bytes(self.get_bytes(key))
        return path.stat().st_size

    def list_keys(self, prefix: str) -> list[str]:
        return sorted(k for k in self.objects if k.startswith(prefix))

    def size(self, key: str) -> int:
        return len(self.get_bytes(key))

    def delete_keys(self, keys: list[str]) -> None:
        for key in keys:
            self.objects.pop(key, None)


@dataclass
class FakeWorkflows:
    started: list[tuple[str, str]] = field(default_factory=list)  # (kind, id), each name once
    answered: dict[str, dict[str, Any]] = field(default_factory=dict)  # token -> output
    executions: dict[tuple[str, str], Any] = field(default_factory=dict)  # (machine, name) -> domain.workflow_end.Execution

    def describe_execution(self, machine: str, name: str) -> Any:
        return self.executions.get((machine, name))

    def _start(self, kind: str, key: str) -> str:
        if (kind, key) not in self.started:
            self.started.append((kind, key))
        return f"arn:aws:states:us-east-1:123456789012:execution:{kind}:{key}"

    def start_conversion(self, job_id: str) -> str:
        return self._start("conversion", job_id)

    def start_retry(self, job_id: str, attempt: int) -> str:
        return self._start("retry", f"{job_id}-{attempt}")

    def start_intake(self, job_id: str) -> str:
        return self._start("intake", job_id)

    def start_batch_lane(self, lane_id: str, members: list[str]) -> str:
        return self._start("batch", lane_id)

    def start_resume(self, job_id: str, attempt: int) -> str:
        return self._start("resume", f"{job_id}-{attempt}")

    def start_folder_job(self, job_id: str, run: str) -> str:
        return self._start("folder", f"{job_id}-{run}")

    def start_webhook_delivery(self, delivery_id: str) -> str:
        return self._start("delivery", delivery_id)

    def start_estimate(self, estimate_id: str, owner_id: str) -> str:
        return self._start("estimate", estimate_id)

    def send_task_success(self, token: str, output: dict[str, Any]) -> bool:
        if token in self.answered:
            return False  # TaskTimedOut / InvalidToken: the wait already ended
        self.answered[token] = output
        return True


class PlainCipher:
    """The SecretCipher port without KMS (for tests about dates and keys, not sealing; moto's KMS costs ~0.5 s a test)."""

    def seal(self, owner_id: str, plaintext: str) -> bytes:
        return f"{owner_id}|{plaintext}".encode()

    def open(self, owner_id: str, ciphertext: bytes) -> str:
        owner, _, value = ciphertext.decode().partition("|")
        assert owner == owner_id
        return value


@dataclass
class FakeBus:
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def publish(self, detail_type: str, detail: dict[str, Any]) -> None:
        self.events.append((detail_type, detail))


PAGES_PER_CHUNK = 50


class TypedStore(MemoryStore):
    """The memory store, remembering each object's content type."""

    def __init__(self) -> None:
        super().__init__()
        self.content_types: dict[str, str] = {}

    def put_bytes(self, key: str, data: bytes, content_type: str = "application/octet-stream") -> None:
        super().put_bytes(key, data, content_type)
        self.content_types[key] = content_type


def set_lane(svc: Services, lane_id: str, **columns: Any) -> None:
    """Set the lane row's columns (a test seam, as an UPDATE … SET column = value would)."""
    uow = svc.uow()
    assert isinstance(uow, FakeUnitOfWork)
    row = lane_row(svc, lane_id)
    lane_rows(uow.state).rows[row.id] = replace(row, **columns)


def backdate_lane(svc: Services, lane_id: str, **ago: timedelta) -> None:
    """Move the lane's timestamps back (as an UPDATE … SET column = now() - interval would)."""
    uow = svc.uow()
    assert isinstance(uow, FakeUnitOfWork)
    set_lane(svc, lane_id, **{column: uow.state.clock.now() - delta for column, delta in ago.items()})


def batch_jobs_of(svc: Services) -> FakeBatchJobs:
    assert isinstance(svc.batch_jobs, FakeBatchJobs)
    return svc.batch_jobs


def workflows_of(svc: Services) -> FakeWorkflows:
    assert isinstance(svc.workflows, FakeWorkflows)
    return svc.workflows


def store_of(svc: Services) -> MemoryStore:
    assert isinstance(svc.store, MemoryStore)
    return svc.store


def lane_row(svc: Services, lane_id: str) -> Lane:
    """The lane's row, which must exist."""
    row = svc.uow().lanes.get_row(lane_id)
    assert row is not None
    return row


def new_job(svc: Services, *, pages: int = 120, pages_per_chunk: int = PAGES_PER_CHUNK, owner: str = "owner-1", hold_usd: str = "5") -> str:
    """A job parked for the batch lane (waiting_batch, chunks of ``pages_per_chunk``) with a funds hold: in the pool, no lane yet."""
    with svc.uow() as uow:
        file_row = uow.jobs.insert_file(owner_id=owner, name="a.pdf", s3_key=f"uploads/{owner}/a.pdf", size_bytes=10)
        job = uow.jobs.insert_job(
            file_id=str(file_row.id),
            owner_id=owner,
            status="waiting_batch",
            options={},
            model_id=MODEL,
            total_pages=pages,
            pages_per_chunk=pages_per_chunk,
            chunks=plan_chunks(pages, pages_per_chunk),
        )
        job_id = str(job.id)
        uow.ledger.place_hold(job_id=job_id, owner_id=owner, amount_usd=Decimal(hold_usd), hours=30)
    return job_id


def _spans(svc: Services, chunks: list[tuple[str, int]]) -> dict[tuple[str, int], tuple[int, int]]:
    return {(j, c.chunk_index): (c.first_page, c.last_page) for j in dict.fromkeys(j for j, _ in chunks) for c in svc.uow().jobs.get_chunks(j)}


def packed_lane(svc: Services, chunks: list[tuple[str, int]]) -> str:
    """A lane as the packer makes it (lanes.insert_lane, preparing) carrying ``chunks`` — (job id, chunk index) —,
    each job tagged m<k> in order of first appearance. Returns the lane id."""
    spans = _spans(svc, chunks)
    lane_id = str(uuid.uuid4())
    svc.uow().lanes.insert_lane(lane_id=lane_id, model_id=MODEL, deadline_hours=26, chunks=[(j, c, spans[(j, c)][1] - spans[(j, c)][0] + 1) for j, c in chunks])
    return lane_id


def prepared_lane(svc: Services, chunks: list[tuple[str, int]], *, records: int = 1) -> str:
    """:func:`packed_lane`, prepared as finish_prepare leaves it: ``records`` records per member chunk (its first
    pages), the manifest in the store, the members' record counts and the row's counts recorded."""
    spans = _spans(svc, chunks)
    lane_id = packed_lane(svc, chunks)
    lanes = svc.uow().lanes
    row = lanes.get_row(lane_id)
    assert row is not None
    tags = {m.job_id: m.member_tag for m in lanes.members(row.id)}
    manifest_chunks: dict[str, dict[str, list[str]]] = {}
    hashes: dict[str, str] = {}
    counts: dict[tuple[str, int], int] = {}
    for job_id, chunk_index in chunks:
        first = spans[(job_id, chunk_index)][0]
        ids = [record_id(chunk_index, page) for page in range(first, first + records)]
        manifest_chunks.setdefault(tags[job_id], {})[str(chunk_index)] = ids
        hashes.update({pooled_record_id(tags[job_id], rid): f"hash-{rid}" for rid in ids})
        counts[(job_id, chunk_index)] = len(ids)
    manifest_key = keys.batch_manifest_key(lane_id)
    members = {tag: job_id for job_id, tag in tags.items()}
    svc.store.put_json(
        manifest_key, {"laneId": lane_id, "modelId": MODEL, "members": members, "recordCount": len(hashes), "chunks": manifest_chunks, "promptHashes": hashes}
    )
    lanes.record_member_records(row.id, counts)
    lanes.record_prepared(lane_id, record_count=len(hashes), input_bytes=1000, manifest_key=manifest_key)
    return lane_id


def lane_ledger(svc: Services, lane_id: str, *, source: str | None = None) -> list[LedgerRow]:
    """Every ledger row pointing at the lane (of ``source``: batch, the lane's own bill with no job; batch_share, a member's),
    as the fake ledger holds them: no repository reads a lane's bill, which belongs to no job."""
    uow = svc.uow()
    assert isinstance(uow, FakeUnitOfWork), "the services of svc_on_fakes"
    row = uow.lanes.get_row(lane_id)
    assert row is not None
    return [r for r in money(uow.state).ledger if r.lane_row_id == row.id and source in (None, r.source)]


def all_chunks(svc: Services, job_id: str) -> list[tuple[str, int]]:
    return [(job_id, c.chunk_index) for c in svc.uow().jobs.get_chunks(job_id)]


@dataclass(frozen=True)
class Parked:
    job_id: str
    lane_id: str


def parked_job(svc: Services, *, pages: int = 120, records: int = 1, hold_usd: str = "5") -> Parked:
    """A job parked for the batch lane and one lane, prepared, carrying every chunk of it (``records`` per chunk)."""
    job_id = new_job(svc, pages=pages, hold_usd=hold_usd)
    return Parked(job_id, prepared_lane(svc, all_chunks(svc, job_id), records=records))
