"""What the use cases need from AWS, as interfaces: boto3 adapters in ``aws/``, in-memory fakes in tests.

The adapters translate AWS's error codes into the errors below, once; use cases never see a
``ClientError``. ``runtime.py`` is the one place that builds the adapters (docs/architecture.md,
"Ports and adapters").
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from batchlane.pdf.split import ChunkSpan

from batchlane.domain.budget import Limits, Standing
from batchlane.domain.status import Transition
from batchlane.domain.workflow_end import Execution

UPLOAD_URL_TTL_S = 600  # a presigned POST lives 10 minutes
PDF_CONTENT_TYPE = "application/pdf"
DOWNLOAD_URL_TTL_S = 900


# --- object store (S3) ---------------------------------------------------------------------------


class ObjectStoreError(Exception):
    """S3 refused a read for another reason than a missing object (AccessDenied, ...)."""


class ObjectStore(Protocol):
    """Objects of the deployment's bucket. A missing object raises ``domain.errors.NotFound``,
    another refused read ``ObjectStoreError``."""

    bucket: str

    def put_bytes(self, key: str, data: bytes, content_type: str = "application/octet-stream") -> None: ...
    def put_stream(self, key: str, chunks: Iterator[bytes], content_type: str = "application/octet-stream") -> None: ...  # never held whole
    def get_bytes(self, key: str) -> bytes: ...
    def put_json(self, key: str, value: Any) -> None: ...
    def get_json(self, key: str) -> Any: ...
    def iter_lines(self, key: str) -> Iterator[bytes]: ...
    def download_to(self, key: str, path: Path, *, max_bytes: int | None = None) -> int: ...  # streamed to a file; its size
    def read_range(self, key: str, start: int, length: int) -> bytes: ...  # one ranged GET
    def list_keys(self, prefix: str) -> list[str]: ...
    def size(self, key: str) -> int: ...
    def delete_keys(self, keys: list[str]) -> None: ...  # a key already gone is not an error
    def in_bucket(self, bucket: str) -> ObjectStore: ...  # the same store on another bucket (a folder job's source)


class Uploads(Protocol):
    """Uploads go straight to the bucket with a presigned POST (never through the API)."""

    def presigned_post(self, key: str, *, max_bytes: int, ttl_s: int = UPLOAD_URL_TTL_S) -> dict[str, Any]: ...


@dataclass(frozen=True)
class StoredObject:
    size_bytes: int
    expires_at: datetime


class Downloads(Protocol):
    """A short-lived presigned GET, and when the object expires (NotFound when it is gone)."""

    def head(self, key: str) -> StoredObject: ...
    def presigned_get(self, key: str, *, filename: str, ttl_s: int = DOWNLOAD_URL_TTL_S) -> str: ...


# --- Bedrock batch inference ------------------------------------------------------------------------


@dataclass(frozen=True)
class BatchJobSpec:
    """One CreateModelInvocationJob (modelInvocationType InvokeModel, JSONL input)."""

    name: str
    client_token: str
    model_id: str
    role_arn: str
    input_uri: str
    output_uri: str
    timeout_hours: int
    tags: Mapping[str, str]


@dataclass(frozen=True)
class BatchJobRef:
    arn: str
    name: str


class BatchJobsError(Exception):
    """Bedrock refused a batch-job call; ``code`` is AWS's error code."""

    def __init__(self, code: str, message: str = "") -> None:
        super().__init__(f"{code}: {message}" if message else code)
        self.code = code
        self.message = message


class BatchJobsBusy(BatchJobsError):
    """Throttled, or the concurrent-job quota is full: the same call may succeed later."""


class BatchJobRejected(BatchJobsError):
    """The create was refused for good (ValidationException, AccessDenied, ...)."""


class BatchJobNotFound(BatchJobsError):
    """Bedrock does not know the job (ResourceNotFoundException)."""


class BatchJobAlreadyEnded(BatchJobsError):
    """Stop refused because the job is no longer running (ValidationException): nothing left to stop."""


class BatchJobs(Protocol):
    def create(self, spec: BatchJobSpec) -> str:
        """The job's ARN. A job of the same name and token that exists already is adopted (idempotent).
        Raises BatchJobsBusy or BatchJobRejected."""
        ...

    def status(self, arn: str) -> str:
        """Bedrock's status (Submitted … Expired). Raises BatchJobNotFound."""
        ...

    def stop(self, arn: str) -> None:
        """Ask Bedrock to stop the job. Raises BatchJobAlreadyEnded, or BatchJobsError for any other refusal."""
        ...

    def find_by_name(self, name: str) -> BatchJobRef | None: ...


# --- Bedrock runtime (on-demand model calls) --------------------------------------------------------


class ModelCallFailed(Exception):
    """A runtime call with no answer: ``code`` is AWS's error code or the client error's name;
    ``transient`` when the call never reached a verdict (connection trouble)."""

    def __init__(self, code: str, message: str, *, transient: bool = False) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.transient = transient


class ModelReadTimeout(ModelCallFailed):
    """No answer within the read timeout: the request reached the model and is billed all the same."""


class ModelRuntime(Protocol):
    def invoke_model(self, request: Mapping[str, Any], *, read_timeout: float) -> bytes:
        """InvokeModel with ``request`` as its keyword arguments; the response body. Raises ModelCallFailed."""
        ...


# --- users' buckets (folder jobs) --------------------------------------------------------------------


@dataclass(frozen=True)
class ListedPage:
    objects: list[tuple[str, int]]  # (key, size)
    next_token: str | None  # None: this was the last page


@dataclass(frozen=True)
class ObjectHead:
    size: int
    owner: str | None  # the owner whose folder job wrote it (object metadata); None: not written by batchlane


class FolderBuckets(Protocol):
    """The user's buckets, within the configured folder sources: list one page, test, copy, write, read lines.
    A bucket the role may not list raises InputError FOLDER_NOT_READABLE; a missing object NotFound; an object
    that cannot be read or written for another reason (AccessDenied under KMS, a key too long) ObjectUnreadable.
    What a folder job writes carries its owner (``owner``), so another owner's job never takes it for its own."""

    def list_page(self, bucket: str, prefix: str, *, token: str | None, recursive: bool, max_keys: int) -> ListedPage: ...
    def size(self, bucket: str, key: str) -> int | None: ...
    def head(self, bucket: str, key: str) -> ObjectHead | None: ...
    def copy(self, source: tuple[str, str], target: tuple[str, str], *, owner: str, content_type: str = "text/markdown; charset=utf-8") -> None: ...
    def put_bytes(self, bucket: str, key: str, data: bytes, content_type: str, *, owner: str) -> None: ...
    def put_stream(self, bucket: str, key: str, chunks: Iterator[bytes], content_type: str, *, owner: str) -> None: ...
    def iter_lines(self, bucket: str, key: str) -> Iterator[bytes]: ...
    def list_keys(self, bucket: str, prefix: str) -> list[str]: ...


# --- workflows (Step Functions) and events (EventBridge) -------------------------------------------


class Workflows(Protocol):
    """One execution per job, named after it: a repeat start returns the same execution."""

    def start_conversion(self, job_id: str) -> str: ...
    def start_retry(self, job_id: str, attempt: int) -> str: ...
    def start_intake(self, job_id: str) -> str: ...
    def start_batch_lane(self, lane_id: str, members: list[str]) -> str: ...  # batch-<laneId>
    def start_webhook_delivery(self, delivery_id: str) -> str: ...
    def start_resume(self, job_id: str, attempt: int) -> str: ...
    def start_folder_job(self, job_id: str, run: str) -> str: ...  # folder-<jobId>-<run>
    def start_estimate(self, estimate_id: str, owner_id: str) -> str: ...  # estimate-<estimateId>
    def describe_execution(self, machine: str, name: str) -> Execution | None:
        """DescribeExecution of ``name`` on the topology's ``machine`` (conversion, intake, folder_job); None when it does not exist."""
        ...

    def send_task_success(self, token: str, output: dict[str, Any]) -> bool:
        """False when the token is no longer valid (the wait already ended): harmless."""
        ...


class EventBus(Protocol):
    def publish(self, detail_type: str, detail: dict[str, Any]) -> None: ...


# --- secrets -----------------------------------------------------------------------------------------


class SigningSecret(Protocol):
    """The webhook signing secret: read to sign, described and rotated by admins (never shown)."""

    def signing_keys(self, *, grace: timedelta, now: datetime | None = None) -> list[str]: ...
    def describe(self, *, grace: timedelta) -> dict[str, Any]: ...
    def rotate(self) -> None: ...


# --- rows the repositories return -------------------------------------------------------------------


@dataclass(frozen=True)
class FileRow:
    """One files row (0001_init.sql, 0005_files_deleted_at.sql, 0014_folder_jobs.sql)."""

    id: str
    owner_id: str
    name: str
    s3_key: str
    size_bytes: int
    status: str
    source_bucket: str | None
    created_at: datetime
    updated_at: datetime
    deleted_at: datetime | None

    @classmethod
    def of(cls, row: dict[str, Any]) -> FileRow:
        values: dict[str, Any] = {f.name: row.get(f.name) for f in fields(cls)}  # source_bucket, deleted_at came later
        return cls(**{**values, "id": str(row["id"])})


@dataclass(frozen=True)
class JobRow:
    """One large_conversion_jobs row (0001_init.sql, 0006_job_splitting.sql; the job's own state: 0030_job_state_columns.sql).

    ``options`` is what the user asked for, nothing else; the job's state is in typed columns."""

    id: str
    file_id: str
    owner_id: str
    status: str
    options: dict[str, Any]
    model_id: str
    total_pages: int
    pages_per_chunk: int
    chunk_count: int
    pages_converted: int
    pages_failed: int
    pages_batch: int
    total_cost_usd: Decimal
    error_id: str | None
    error_message: str | None
    markdown_key: str | None
    execution_name: str | None
    created_at: datetime
    updated_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    batch_primed: bool = False  # a lane's accepted answers wait for its chunks (they are not asked again)
    batch_cost_usd: Decimal = Decimal(0)  # what its lanes cost: total = chunk costs + this
    pause_settled: bool = False  # paused at its hold, and the paused run's last step ran: it may be resumed
    budget_resumes: int = 0  # how many times it was resumed after a budget pause
    process_now: bool = False  # go on-demand, never wait for the batch lane (process now while splitting; priority high)
    max_pages: int | None = None  # a folder policy's page limit (None: the deployment's)
    retry_attempt: int | None = None  # the retry of failed pages running on the job (None: none runs)
    retry_pages: tuple[int, ...] | None = None  # the pages that retry converts again

    @classmethod
    def of(cls, row: dict[str, Any]) -> JobRow:
        values = {f.name: row[f.name] for f in fields(cls)}  # columns added later are not read here
        pages = row["retry_pages"]
        return cls(
            **{
                **values,
                "id": str(row["id"]),
                "file_id": str(row["file_id"]),
                "options": dict(row["options"] or {}),
                "retry_pages": tuple(pages) if pages is not None else None,
            }
        )


@dataclass(frozen=True)
class ChunkRow:
    """One chunk_jobs row (0001_init.sql, 0015_chunk_statuses.sql)."""

    job_id: str
    chunk_index: int
    first_page: int
    last_page: int
    status: str
    worker_id: str | None
    heartbeat_at: datetime | None
    attempts: int
    pages_done: int
    pages_failed: int
    pages_batch: int
    cost_usd: Decimal
    result_key: str | None
    error: str | None
    updated_at: datetime
    source_bytes: int | None = None  # its source PDF's size, where the split knew it (0022_chunk_source_bytes.sql)

    @classmethod
    def of(cls, row: dict[str, Any]) -> ChunkRow:
        values: dict[str, Any] = {f.name: row.get(f.name) for f in fields(cls)}  # source_bytes came later
        return cls(**{**values, "job_id": str(row["job_id"])})


# --- repositories and the unit of work ---------------------------------------------------------------
# One repository per aggregate (cosmicpython's shape): the PostgreSQL adapters are in db/ (db/uow.py
# builds them), the in-memory fakes in batchlane_dev.fakes, and tests/contract runs the same contract
# tests against both, so the fake cannot drift from the SQL. Repositories return typed rows (frozen
# dataclasses), never dicts. Use cases take a UnitOfWork (or the one repository they use), not a Database.


class JobRepository(Protocol):
    """Files, jobs and their chunks (db/jobs.py): every status move goes through domain.status's table.

    A move answers None / False / 0 when the row was not in one of the transition's sources (nothing
    written); a chunk is claimed only while its job is processing, and only its worker completes it."""

    # files
    def insert_file(self, *, owner_id: str, name: str, s3_key: str, size_bytes: int, file_id: str | None = None) -> FileRow: ...
    def get_file(self, file_id: str) -> FileRow | None: ...
    def move_file(self, file_id: str, move: Transition) -> bool: ...
    def mark_file_deleted(self, file_id: str) -> None: ...  # hidden (its rows stay for the ledger); the first time only
    # jobs
    def insert_job(
        self,
        *,
        file_id: str,
        owner_id: str,
        status: str,
        options: dict[str, Any],
        model_id: str,
        total_pages: int,
        pages_per_chunk: int,
        chunks: Sequence[ChunkSpan],
        error_id: str | None = None,
        error_message: str | None = None,
        chunk_status: str | None = None,
        process_now: bool = False,
        max_pages: int | None = None,
    ) -> JobRow: ...  # options: the user's only (an underscore key is refused: the job's state has columns)
    def finish_split(
        self, job_id: str, *, parked: bool, total_pages: int, chunks: Sequence[ChunkSpan], chunk_bytes: Mapping[int, int] | None = None
    ) -> JobRow | None: ...
    def get_job(self, job_id: str) -> JobRow | None: ...
    def lock_job(self, job_id: str) -> JobRow | None: ...  # inside ``with uow:``, serialises the job's moves
    def move_job(self, job_id: str, move: Transition, **fields: Any) -> JobRow | None: ...  # fields: JobRow columns
    def mark_process_now(self, job_id: str, *, only_if: str) -> JobRow | None: ...
    def clear_retry(self, job_id: str) -> JobRow | None: ...
    def jobs_in(self, status: str, *, unchanged_for_s: float) -> list[str]: ...
    def jobs_to_sweep(self, statuses: Sequence[str], *, unchanged_for_s: float, limit: int) -> list[JobRow]:
        """Jobs in ``statuses`` unchanged for ``unchanged_for_s`` s, ``limit`` of them in random order (a pause already
        settled left out): the ones whose workflow may have ended without recording their end."""
        ...

    def jobs_due(self, *, margin_s: float) -> list[str]: ...  # parked jobs whose deadline option is less than margin_s away, soonest first
    def live_job_of_file(self, file_id: str) -> str | None: ...
    def count_live_by_status(self) -> dict[str, int]: ...  # jobs per live status (a gauge); a status with none is absent
    # chunks
    def get_chunks(self, job_id: str) -> list[ChunkRow]: ...
    def get_chunk(self, job_id: str, chunk_index: int) -> ChunkRow | None: ...
    def move_chunks(self, job_id: str, move: Transition, *, indexes: Sequence[int] | None = None, **fields: Any) -> int: ...
    def claim_chunk(self, job_id: str, chunk_index: int, worker_id: str) -> ChunkRow | None: ...
    def heartbeat_chunk(self, job_id: str, chunk_index: int, worker_id: str, pages_done: int) -> bool: ...
    def complete_chunk(
        self,
        job_id: str,
        chunk_index: int,
        worker_id: str,
        *,
        pages_done: int,
        pages_failed: int,
        pages_batch: int,
        cost_usd: Decimal,
        result_key: str,
    ) -> bool: ...
    def add_chunk_spend(self, job_id: str, chunk_index: int, cost_usd: Decimal) -> None: ...
    def chunk_still_owned(self, job_id: str, chunk_index: int, worker_id: str) -> bool: ...


@dataclass(frozen=True)
class LedgerRow:
    """One cost_ledger row (0001_init.sql; a lane's row with no job and the members' shares: 0017_batch_pool.sql)."""

    id: int
    job_id: str | None  # None: a lane's one row per Bedrock job (its members carry batch_share rows)
    chunk_index: int | None
    batch_row_id: int | None
    source: str  # chunk (on-demand requests), batch (a Bedrock job's bill), batch_share (a member's part of it)
    backend: str  # on_demand, batch
    model_id: str
    input_tokens: int
    output_tokens: int
    cost_usd: Decimal
    metadata: dict[str, Any]
    created_at: datetime

    @classmethod
    def of(cls, row: dict[str, Any]) -> LedgerRow:
        values: dict[str, Any] = {f.name: row[f.name] for f in fields(cls)}
        job = row["job_id"]
        return cls(**{**values, "job_id": str(job) if job is not None else None, "metadata": dict(row["metadata"] or {})})


@dataclass(frozen=True)
class Hold:
    """One funds_holds row (0001_init.sql; committed_usd, wanted_usd: 0029_hold_committed.sql): what a job may spend."""

    id: int
    job_id: str
    owner_id: str
    amount_usd: Decimal
    expires_at: datetime
    outcome: str | None  # None: open; settled, released, cancelled
    settled_usd: Decimal | None
    committed_usd: Decimal  # what the hold has given out (reservations and booked batch shares)
    wanted_usd: Decimal  # the worst case of the last request that did not fit (0 once one as large fits)
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, row: dict[str, Any]) -> Hold:
        values: dict[str, Any] = {f.name: row[f.name] for f in fields(cls)}
        return cls(**{**values, "job_id": str(row["job_id"])})


@dataclass(frozen=True)
class BudgetOverride:
    """One user_budgets row (0012_budgets.sql): an owner's limits where an admin set them (None: the deployment's)."""

    owner_id: str
    usd_per_month: Decimal | None
    max_live_jobs: int | None
    max_live_pages: int | None
    updated_by: str
    updated_at: datetime

    @classmethod
    def of(cls, row: dict[str, Any]) -> BudgetOverride:
        return cls(**{f.name: row[f.name] for f in fields(cls)})


@dataclass(frozen=True)
class JobMoney:
    """A job's money at a glance: its spend so far, its open hold (None: closed or none) and its pages done."""

    job_id: str
    owner_id: str
    status: str
    total_pages: int
    spent_usd: Decimal
    hold_usd: Decimal | None
    pages_done: int  # pages of completed chunks, converted or failed

    @classmethod
    def of(cls, row: dict[str, Any]) -> JobMoney:
        return cls(
            job_id=str(row["job_id"]),
            owner_id=row["owner_id"],
            status=row["status"],
            total_pages=int(row["total_pages"]),
            spent_usd=Decimal(row["spent_usd"]),
            hold_usd=Decimal(row["hold_usd"]) if row["hold_usd"] is not None else None,
            pages_done=int(row["pages_done"]),
        )


class LedgerRepository(Protocol):
    """What was spent (ledger rows) and what is held (funds holds) per job (db/ledger.py)."""

    # the ledger

    def add_chunk_cost(
        self, *, job_id: str, chunk_index: int, model_id: str, input_tokens: int, output_tokens: int, cost_usd: Decimal, metadata: dict[str, Any]
    ) -> None: ...
    def add_batch_cost(
        self, *, job_id: str | None, batch_row_id: int, model_id: str, input_tokens: int, output_tokens: int, cost_usd: Decimal, metadata: dict[str, Any]
    ) -> bool:
        """The one batch row per Bedrock job (``job_id`` None: the lane's); False when it exists already."""
        ...

    def add_batch_share(
        self, *, job_id: str, batch_row_id: int, model_id: str, input_tokens: int, output_tokens: int, cost_usd: Decimal, metadata: dict[str, Any]
    ) -> None:
        """A member's share of its lane's row (once per lane and job), spent from the job's hold."""
        ...

    def batch_cost_of_job(self, job_id: str) -> Decimal: ...  # its batch-backend rows: its shares (and a pre-pool batch row)
    def job_total(self, job_id: str) -> Decimal: ...  # every row of the job
    def ledger_rows(self, job_id: str) -> list[LedgerRow]: ...  # the job's rows, in the order they were booked
    def carry_late_batch_cost(self, job_id: str) -> None:
        """A batch bill booked after the job left the lane still counts: a finished job's total and its settled hold
        follow the ledger, and (unless parked) the job's batch cost is its batch rows."""
        ...

    # funds holds
    def place_hold(self, *, job_id: str, owner_id: str, amount_usd: Decimal, hours: float) -> None: ...  # a job's one hold (a second is ignored)
    def extend_hold(self, job_id: str, *, hours: float) -> None: ...  # an open hold expires ``hours`` from now
    def reopen_hold(self, job_id: str, *, extra_usd: Decimal, hours: float) -> None:
        """A retry of failed pages: the hold opens again for ``extra_usd`` more than it settled at."""
        ...

    def close_hold(self, job_id: str, *, outcome: str, settled_usd: Decimal | None = None) -> bool: ...  # False: not open
    def get_hold(self, job_id: str) -> Hold | None: ...


class BudgetRepository(Protocol):
    """Owners' limits and standing: monthly spend, live jobs and pages, reservations (db/budgets.py; the per-user caps' counts: CapCounts)."""

    def standing(self, owner_id: str, *, exclude_job: str | None = None) -> Standing:
        """This month's (UTC) spend on the owner's jobs (every ledger row of them: chunk, batch and batch_share),
        plus what their open holds may still spend, plus the live jobs and their pages (``exclude_job`` left out)."""
        ...

    def lock_owner(self, owner_id: str) -> None: ...  # inside ``with uow:``, serialises the owner's budget checks
    def get_override(self, owner_id: str) -> BudgetOverride | None: ...
    def set_override(
        self, owner_id: str, *, usd_per_month: Decimal | None, max_live_jobs: int | None, max_live_pages: int | None, updated_by: str
    ) -> BudgetOverride: ...  # inserted or replaced (None: the deployment's default)
    def limits_for(self, owner_id: str, settings: Any) -> Limits: ...  # the override where set, else the settings' defaults
    def job_money(self, job_id: str) -> JobMoney | None: ...
    def reserve(self, job_id: str, cost: Decimal) -> bool | None:
        """Take ``cost`` from the job's open hold if that much is left: True; False when not (nothing taken, the cost
        kept as ``wanted_usd``); None when the job has no open hold."""
        ...

    def settle_reservation(self, job_id: str, *, reserved: Decimal, actual: Decimal) -> None: ...  # what it cost replaces the reservation
    def pause_at_hold(self, job_id: str, *, next_request_usd: Decimal = Decimal(0)) -> bool:
        """processing → paused_budget (domain.status's ``pause_budget``) when the job's spend reached its open hold, or
        what the hold has left cannot carry ``next_request_usd`` or the last request that did not fit; True if paused."""
        ...

    def mark_pause_settled(self, job_id: str) -> bool: ...  # the paused run's last step ran (only while paused_budget)
    def resume_paused(self, job_id: str, *, hold_usd: Decimal) -> JobRow | None:
        """paused_budget → processing (``resume``), the hold raised to ``hold_usd``, the resume counted, processing chunks
        back to pending; None if not paused."""
        ...


@dataclass(frozen=True)
class FolderJob:
    """A folder job (folder_jobs): its spec as posted (normalised), where it reads and writes, its listing checkpoint."""

    id: str
    owner_id: str
    name: str | None
    spec: dict[str, Any]
    status: str  # domain.status.FolderJobStatus
    error_id: str | None
    error_message: str | None
    input_bucket: str
    input_prefix: str
    output_bucket: str
    output_prefix: str
    continuation_token: str | None
    enumeration_done: bool
    objects_listed: int
    excluded_count: int
    run: int
    turns: int
    report_parts: int
    created_at: datetime
    updated_at: datetime
    enumerated_at: datetime | None
    finished_at: datetime | None
    # Lane rights, from the owner's groups at submit (and at the last retry or resume): files may leave the batch lane
    # for on-demand (priority high, opt-outs, a deadline the turnaround no longer meets). Issue 40.3.
    priority_allowed: bool = False


@dataclass(frozen=True)
class FolderFile:
    """One file of a folder job (folder_job_files): where its Markdown goes, its conversion, what it cost."""

    folder_job_id: str
    source_key: str
    status: str  # domain.status.FolderFileStatus
    output_key: str | None
    size_bytes: int
    file_id: str | None
    conversion_job_id: str | None
    pages: int
    pages_failed: int
    attempts: int
    error_id: str | None
    error_message: str | None
    lane: str | None
    lane_reason: str | None
    cost_usd: Decimal
    reported: bool
    waits_for_pages: int | None
    started_at: datetime | None
    finished_at: datetime | None


@dataclass(frozen=True)
class NewFolderFile:
    """What a listed page found: queued, or already failed/skipped with an error id (NOT_PDF, ALREADY_CONVERTED)."""

    source_key: str
    size_bytes: int
    output_key: str | None
    status: str = "queued"
    error_id: str | None = None
    error_message: str | None = None


@dataclass(frozen=True)
class EndedConversion:
    """A processing folder file joined with its conversion job, which has ended."""

    source_key: str
    output_key: str | None
    attempts: int
    lane_reason: str | None  # why the folder job sent it on-demand (priority_high, deadline), if it chose
    conversion_job_id: str
    job_status: str  # completed, failed or cancelled
    total_pages: int
    pages_failed: int
    pages_batch: int
    total_cost_usd: Decimal
    job_error_id: str | None
    job_error_message: str | None
    markdown_key: str | None
    pool_reason: str | None  # why the pool let the conversion go (its lane_reason)


@dataclass(frozen=True)
class FolderCounts:
    """A folder job's files and pages by status (the status read model)."""

    discovered: int
    queued: int
    processing: int
    completed: int
    failed: int
    skipped: int
    pages_completed: int
    pages_failed: int
    cost_usd: float


class FolderJobRepository(Protocol):
    """Folder jobs and their files (db/folder_jobs.py): every status move is one of domain.status's FOLDER_JOB /
    FOLDER_FILE moves, guarded on the current status. A turn's reads that join the conversion jobs (ended conversions,
    files in flight that hold capacity, parked ones) are here too: one query each, polled, never pushed."""

    def add(
        self,
        *,
        job_id: str,
        owner_id: str,
        name: str | None,
        spec: dict[str, Any],
        source: tuple[str, str],
        target: tuple[str, str],
        priority_allowed: bool = False,
    ) -> FolderJob | None:
        """The job, enumerating, with its lane rights; None when it exists already (the same spec posted again)."""
        ...

    def get(self, job_id: str) -> FolderJob | None: ...

    def move(
        self, job_id: str, move: Transition, *, ended: bool | None = None, error_id: str | None = None, error_message: str | None = None
    ) -> FolderJob | None:
        """The job by a named ``st.folder_job`` move, only from its sources; None when it was not in one. ``finished_at``
        is set for a terminal status unless ``ended`` is False (a cancelled job whose files in flight still finish)."""
        ...

    def reopen(self, job_id: str, *, priority_allowed: bool) -> FolderJob | None:
        """An ended job runs again (retry, resume): processing (or enumerating if listing was unfinished), next run,
        with the lane rights decided for this run (the owner's groups now)."""
        ...

    def save_checkpoint(self, job_id: str, *, token: str | None, listed: int, excluded: int, done: bool) -> None:
        """After a listed page: the next continuation token and the totals."""
        ...

    def count_turn(self, job_id: str) -> int:
        """One more loop turn in the current run; the count after it."""
        ...

    def next_run(self, job_id: str, *, run: int) -> FolderJob | None:
        """Run ``run`` → ``run + 1`` (turns back to 0); None if another turn already did."""
        ...

    def next_report_part(self, job_id: str) -> int: ...

    def owner_job_ids(self, owner_id: str, *, limit: int) -> list[str]:
        """The owner's folder job ids, newest first."""
        ...

    def add_files(self, job_id: str, files: Sequence[NewFolderFile]) -> int:
        """What a page found; a key already there is left as it is (a re-listed page). Returns the files added."""
        ...

    def taken_outputs(self, job_id: str, output_keys: Sequence[str]) -> dict[str, str]:
        """output key → the source that already claims it (flat-layout collisions; a collided file claims nothing)."""
        ...

    def claim_queued(self, job_id: str, limit: int, *, free_pages: int | None = None) -> list[FolderFile]:
        """Up to ``limit`` queued files (key order) → processing, one more attempt; a file waiting for live pages only
        once ``free_pages`` hold it (None: no page check)."""
        ...

    def release(self, job_id: str, source_key: str) -> None:
        """processing → queued for a file whose conversion was not opened (the next turn tries again)."""
        ...

    def requeue_stalled_starts(self, job_id: str, *, older_than_s: float) -> int:
        """Files claimed longer than ``older_than_s`` ago whose conversion never opened (the turn died): queued again."""
        ...

    def attach_conversion(self, job_id: str, source_key: str, *, file_id: str, conversion_job_id: str, lane_reason: str | None = None) -> None: ...

    def finish_file(
        self, job_id: str, source_key: str, *, status: str, error_id: str | None = None, error_message: str | None = None, **outcome: Any
    ) -> FolderFile | None:
        """queued/processing → completed, failed or skipped (``outcome``: pages, pages_failed, cost_usd, lane, lane_reason);
        None when it was already ended. Its report line is due again."""
        ...

    def retry_conversion(self, job_id: str, source_key: str, *, waits_for_pages: int | None = None) -> FolderFile | None:
        """processing → queued after a failed conversion the policy retries (or that waits for live pages)."""
        ...

    def skip_queued(self, job_id: str, *, error_id: str, message: str) -> int:
        """Every queued file → skipped (a cancel: what has not started); the count."""
        ...

    def requeue(self, job_id: str, *, statuses: Sequence[str], error_ids: Sequence[str] | None = None) -> int:
        """Ended files in ``statuses`` (optionally only these error ids) → queued again; never OUTPUT_COLLISION or NOT_PDF."""
        ...

    def unreported(self, job_id: str) -> list[FolderFile]:
        """Ended files whose report line is not written yet, in key order."""
        ...

    def mark_reported(self, job_id: str, keys: Sequence[str]) -> None: ...

    def iter_ended_files(self, job_id: str, *, after: str | None = None, page: int = 1000) -> Iterator[FolderFile]:
        """Every ended file in key order (past ``after``), read a page at a time (the final report, never all at once)."""
        ...

    def counts(self, job_id: str) -> FolderCounts: ...

    def live_counts(self, job_id: str, *, cap: int) -> tuple[int, int]:
        """(queued, processing) files, each counted up to ``cap`` only: what a loop turn needs, at a cost that
        does not grow with the folder (issue 27, point 3)."""
        ...

    def list_files(self, job_id: str, *, status: str | None = None, limit: int = 1000, after: str | None = None) -> list[FolderFile]:
        """The job's files in key order, past ``after``."""
        ...

    # what joins the conversion jobs and the files
    def ended_conversions(self, job_id: str) -> list[EndedConversion]:
        """Processing files whose conversion job has ended (completed, failed, cancelled), in key order: what a turn settles."""
        ...

    def parked_conversions(self, job_id: str) -> list[str]:
        """The conversion jobs of the job's processing files that wait for the batch lane (waiting_batch)."""
        ...

    def count_processing(self, job_id: str) -> int:
        """Processing files that hold in-flight capacity: one whose conversion waits in the batch pool does not."""
        ...

    def insert_source_file(self, *, owner_id: str, name: str, bucket: str, key: str, size_bytes: int) -> FileRow:
        """A ``files`` row for a folder file, read where it lies (``source_bucket``), never copied."""
        ...

    def live_unchanged(self, *, unchanged_for_s: float, limit: int) -> list[FolderJob]:
        """Live folder jobs unchanged for ``unchanged_for_s`` s, ``limit`` of them in random order (the recovery sweep)."""
        ...


@dataclass(frozen=True)
class Delivery:
    """One webhook delivery (webhook_deliveries): an event of a job or folder job, or a test."""

    id: str
    owner_id: str
    job_id: str | None  # a conversion job's uuid; None for a folder job's event or a test
    folder_job_id: str | None
    event: str
    url: str
    headers: dict[str, str]
    payload: dict[str, Any]
    status: str  # pending, retrying, delivered, failed (domain.status's DELIVERY moves)
    attempts: int
    response_code: int | None
    latency_ms: int | None
    last_error: str | None
    created_at: datetime
    last_attempt_at: datetime | None
    delivered_at: datetime | None


class DeliveryRepository(Protocol):
    """Webhook deliveries (db/deliveries.py): every status move is one of domain.status's DELIVERY moves."""

    def add(
        self,
        *,
        delivery_id: str,
        owner_id: str,
        job_id: str | None,
        event: str,
        url: str,
        headers: dict[str, str],
        payload: dict[str, Any],
        folder_job_id: str | None = None,
    ) -> bool:
        """A pending delivery; False when its id exists already (the same event dispatched twice)."""
        ...

    def get(self, delivery_id: str) -> Delivery | None: ...

    def record_attempt(self, delivery_id: str, *, delivered: bool, response_code: int | None, latency_ms: int, error: str | None) -> Delivery | None:
        """An attempt on an open delivery: delivered (deliver) or retrying (retry); None when it was not open."""
        ...

    def give_up(self, delivery_id: str, reason: str) -> Delivery | None:
        """An open delivery → failed (the first error kept); None when it was not open."""
        ...

    def for_owner(self, owner_id: str, *, job_id: str | None, limit: int = 100) -> list[Delivery]:
        """The owner's deliveries, newest first; ``job_id`` a conversion job's uuid or a folder job's ``fj-`` id."""
        ...


# -- the batch lanes and the pool (db/batch_rows.py) ----------------------------------------
@dataclass(frozen=True)
class BatchRow:
    """One conversion_batch_jobs row (0001_init.sql, 0008_batch_row_stopping.sql)."""

    id: int
    lane_id: str
    job_id: str | None  # only on lanes written before the pool (one job per Bedrock job)
    member_count: int
    retry_of: int | None  # a retry batch: the lane whose failed records it sends again
    state: str
    end_state: str | None
    reason: str | None
    model_id: str
    bedrock_job_arn: str | None
    bedrock_job_name: str | None
    bedrock_status: str | None
    task_tokens: list[str]
    record_count: int | None
    input_bytes: int | None
    accepted_count: int | None
    fallback_count: int | None
    manifest_key: str | None
    output_uri: str | None
    deadline: datetime | None
    attempts: int
    collect_attempts: int
    cost_usd: Decimal | None
    created_at: datetime
    prepare_started_at: datetime | None
    prepared_at: datetime | None
    submitted_at: datetime | None
    terminal_seen_at: datetime | None
    collect_started_at: datetime | None
    closed_at: datetime | None
    resumed_at: datetime | None
    updated_at: datetime

    @property
    def arn(self) -> str:
        """The Bedrock job's ARN; only a row that was submitted has one."""
        if self.bedrock_job_arn is None:
            raise ValueError(f"lane {self.lane_id} ({self.state}) has no Bedrock job")
        return self.bedrock_job_arn

    @classmethod
    def of(cls, row: dict[str, Any]) -> BatchRow:
        values = {f.name: row[f.name] for f in fields(cls)}  # columns added later are not read here
        job_id = str(row["job_id"]) if row["job_id"] is not None else None
        return cls(**{**values, "lane_id": str(row["lane_id"]), "job_id": job_id, "task_tokens": list(row["task_tokens"] or [])})


@dataclass(frozen=True)
class PooledChunk:
    """A chunk waiting in the pool, in the packer's fair order."""

    job_id: str
    model_id: str
    chunk_index: int
    pages: int
    waited_s: float
    source_bytes: int | None = None  # the chunk's source PDF (NULL: split before it was recorded)


@dataclass(frozen=True)
class Member:
    """One batch_members row: a chunk of a job riding in a lane."""

    batch_row_id: int
    job_id: str
    chunk_index: int
    member_tag: str
    pages: int
    records: int | None
    accepted: int | None
    state: str


@dataclass(frozen=True)
class PoolRead:
    """What a packer turn read of the pool: per model, the fair-order prefix of its waiting chunks that fits
    the model's page budget, whether chunks were left behind it, and the fewest pages and estimated bytes
    of ANY waiting chunk of the model (read or not: the packing rule's "nothing would fit any more")."""

    chunks: list[PooledChunk]
    truncated: dict[str, bool]
    smallest: dict[str, int]
    lightest: dict[str, int]


@dataclass(frozen=True)
class LaneOutcome:
    """Where a parked job stands with the lanes: ``settled`` when none still carries it and the pool has
    nothing more for it (every chunk rode, or the pool let it go)."""

    settled: bool
    accepted: int
    lanes: int


@dataclass(frozen=True)
class PurgeTarget:
    """A member of a closed lane whose page content is to be removed (its files are shared with nobody)."""

    batch_row_id: int
    lane_id: str
    job_id: str
    member_tag: str


class LaneRepository(Protocol):
    """conversion_batch_jobs (one row per Bedrock job, a "lane") and batch_members, and the pool they are packed from
    (db/batch_rows.py; the fake: batchlane_dev.fakes.lanes). Every lane and member move is one of domain.status's."""

    def add_task_token(self, lane_id: str, token: str) -> BatchRow | None: ...
    def close(
        self,
        lane_id: str,
        move: Transition,
        *,
        end_state: str,
        reason: str | None = None,
        accepted: int = 0,
        fallback: int = 0,
        cost_usd: Decimal | None = None,
    ) -> BatchRow | None: ...
    def count_past_deadline(self) -> int: ...
    def get_row(self, lane_id: str) -> BatchRow | None: ...
    def get_row_by_id(self, row_id: int) -> BatchRow | None: ...
    def has_packed_members(self, row_id: int) -> bool: ...
    def in_flight_by_base_model(self) -> dict[str, int]: ...
    def in_flight_by_model(self) -> dict[str, int]: ...
    def insert_lane(self, *, lane_id: str, model_id: str, deadline_hours: float, chunks: list[tuple[str, int, int]]) -> BatchRow: ...
    def insert_retry_lane(
        self,
        *,
        lane_id: str,
        retry_of: int,
        model_id: str,
        deadline_hours: float,
        manifest_key: str,
        input_bytes: int,
        members: list[tuple[str, int, str, int]],
    ) -> BatchRow | None: ...
    def job_deadlines(self, job_ids: list[str]) -> dict[str, str | None]: ...
    def job_lane_outcome(self, job_id: str) -> LaneOutcome: ...
    def lanes_of_job(self, job_id: str) -> list[BatchRow]: ...
    def leave_lanes(self, job_id: str) -> list[BatchRow]: ...
    def leave_pool(self, job_ids: list[str], *, reason: str) -> list[str]: ...
    def lock_claims(self) -> None: ...
    def lock_row(self, lane_id: str) -> BatchRow | None: ...
    def mark_purged(self, target: PurgeTarget) -> None: ...
    def mark_stopping(self, lane_id: str, *, reason: str) -> BatchRow | None: ...
    def mark_submitted(self, lane_id: str, *, arn: str, name: str, output_uri: str, deadline_hours: float) -> BatchRow | None: ...
    def member_job_ids(self, row_id: int) -> list[str]: ...
    def members(self, row_id: int, *, state: str | None = None) -> list[Member]: ...
    def members_to_purge(self, *, job_ids: list[str] | None = None, limit: int = 200) -> list[PurgeTarget]: ...
    def note_pooled(self, *, window_s: float) -> None: ...
    def pool_chunks(self) -> list[PooledChunk]: ...
    def preparing_lanes(self) -> list[tuple[str, int]]: ...
    def read_pool(self, *, budgets: dict[str, int] | None = None, default_budget: int | None = None) -> PoolRead: ...
    def record_accepted(self, row_id: int, accepted: dict[tuple[str, int], int]) -> None: ...
    def record_member_records(self, row_id: int, counts: dict[tuple[str, int], int]) -> None: ...
    def record_prepared(self, lane_id: str, *, record_count: int, input_bytes: int, manifest_key: str) -> BatchRow | None: ...
    def record_status(self, arn: str, status: str) -> BatchRow | None: ...
    def rows_preparing_since(self, *, older_than_hours: float) -> list[BatchRow]: ...
    def rows_stopping(self, *, limit: int = 200) -> list[BatchRow]: ...
    def rows_waiting(self, *, limit: int = 200) -> list[BatchRow]: ...
    def set_reason(self, lane_id: str, reason: str) -> BatchRow | None: ...
    def stamp(self, lane_id: str, column: str) -> None: ...
    def stranded_job_ids(self, *, older_than_s: float) -> list[str]: ...


# -- the page form recorded per model (db/page_forms.py) --------------------------------------
@dataclass(frozen=True)
class PageForm:
    """One page_forms row (0021_page_forms.sql): the form a model takes on this account, and who found it."""

    model_id: str
    page_form: str  # pdf, image (domain.page_form.FORMS)
    source: str  # doctor (batchlane doctor --live), refusal (a call Bedrock refused for its form)
    accepted: dict[str, Any]  # the doctor's findings per form; {} for a refusal
    detail: str | None
    recorded_at: datetime

    @classmethod
    def of(cls, row: dict[str, Any]) -> PageForm:
        values: dict[str, Any] = {f.name: row[f.name] for f in fields(cls)}
        return cls(**{**values, "accepted": dict(row["accepted"] or {})})


class PageFormRepository(Protocol):
    """The page form recorded per model, what ``BATCHLANE_PAGE_FORM=auto`` follows (db/page_forms.py)."""

    def recorded_forms(self) -> dict[str, str]: ...  # model id → recorded form; {} when nothing was recorded
    def get(self, model_id: str) -> PageForm | None: ...
    def record_form(self, model_id: str, page_form: str, *, source: str, accepted: Mapping[str, Any] | None = None, detail: str | None = None) -> None:
        """Insert or replace the model's form (the last finding wins), stamped now; ``page_form`` one of pdf/image,
        ``source`` doctor or refusal (anything else is refused)."""
        ...


# -- a job's retries of its failed pages (db/retries.py) ------------------------------------------------
@dataclass(frozen=True)
class JobRetry:
    """One job_retries row (0009_job_retries.sql): a retry of a job's failed pages and what the job was before it."""

    id: int
    job_id: str
    attempt: int
    status: str  # running, settled, failed, cancelled (domain.status's RETRY moves)
    pages: list[int]
    error_ids: list[str] | None
    previous_pages_failed: int
    previous_total_usd: Decimal
    previous_markdown_key: str | None
    chunks_before: list[dict[str, Any]]  # the retried chunks as they were: chunkIndex, resultKey, pagesDone, pagesFailed, pagesBatch, attempts
    pages_failed: int | None
    cost_usd: Decimal | None
    error_message: str | None
    created_at: datetime
    finished_at: datetime | None

    @classmethod
    def of(cls, row: dict[str, Any]) -> JobRetry:
        values = {f.name: row[f.name] for f in fields(cls)}
        errors = row["error_ids"]
        return cls(**{**values, "job_id": str(row["job_id"]), "pages": list(row["pages"]), "error_ids": list(errors) if errors else None})


class RetryRepository(Protocol):
    """job_retries (db/retries.py): one row per retry of a job's failed pages, numbered 1, 2, … per job; at most one
    runs at a time (a second raises UniqueViolation ``one_running_retry_per_job``)."""

    def running(self, job_id: str) -> JobRetry | None: ...
    def history(self, job_id: str) -> list[JobRetry]: ...  # oldest first (by attempt)
    def get(self, job_id: str, attempt: int) -> JobRetry | None: ...
    def insert(
        self,
        *,
        job_id: str,
        pages: Sequence[int],
        error_ids: Sequence[str] | None,
        previous_pages_failed: int,
        previous_total_usd: Decimal,
        previous_markdown_key: str | None,
        chunks_before: list[dict[str, Any]],
    ) -> JobRetry:
        """A running retry numbered one past the job's highest (an empty ``error_ids`` is kept as None)."""
        ...

    def finish(self, job_id: str, attempt: int, move: Transition, *, pages_failed: int | None, cost_usd: Decimal, error_message: str | None = None) -> bool:
        """running → settled, failed or cancelled (``move``, a RETRY transition: another entity's raises ValueError),
        stamped finished; False when the retry had already ended (a repeated settle, a late cancel)."""
        ...


# -- each owner's webhook signing secret (db/webhook_secrets.py, aws/kms.py) ------------------------------
@dataclass(frozen=True)
class StoredSecret:
    """One version of an owner's signing secret (0038_webhook_secrets.sql), still sealed (KMS ciphertext)."""

    owner_id: str
    version: int
    ciphertext: bytes
    created_at: datetime
    age_s: float  # seconds since it was created, by the store's clock (not a column)

    @classmethod
    def of(cls, row: dict[str, Any]) -> StoredSecret:
        values = {f.name: row[f.name] for f in fields(cls)}
        return cls(**{**values, "ciphertext": bytes(row["ciphertext"]), "age_s": float(row["age_s"])})


class WebhookSecretRepository(Protocol):
    """webhook_secrets (db/webhook_secrets.py): an owner's sealed secrets, numbered 1, 2, … (a second writer of the same
    version raises UniqueViolation); and since when deliveries are signed per owner (webhook_signing)."""

    def add(self, owner_id: str, ciphertext: bytes) -> StoredSecret:
        """The owner's next version (one past their newest)."""
        ...

    def newest(self, owner_id: str, *, limit: int = 2) -> list[StoredSecret]: ...  # newest first
    def per_owner_age_s(self) -> float:
        """Seconds since deliveries began to be signed per owner (the migration's start, by the store's clock)."""
        ...


class SecretCipher(Protocol):
    """Seals and opens an owner's signing secret (aws/kms.py: KMS, the owner in the encryption context): a sealed
    secret opens only for the owner it was sealed for (another's raises SecretUnreadable)."""

    def seal(self, owner_id: str, plaintext: str) -> bytes: ...
    def open(self, owner_id: str, ciphertext: bytes) -> str: ...


# -- a dry run's asynchronous estimate (db/estimates.py) --------------------------------------------------
@dataclass(frozen=True)
class Estimate:
    """One estimates row (0037_estimates.sql): a dry run the API recorded and the estimate worker answers."""

    id: str
    owner_id: str
    kind: str  # file | folder
    status: str  # running, completed, failed (domain.status's ESTIMATE moves)
    request: dict[str, Any]  # file: {fileId, options}; folder: {spec, groups}
    progress: dict[str, Any]  # what the worker last said it is doing ({step, done, total})
    result: dict[str, Any] | None  # the dry run's answer, once completed
    error_id: str | None
    error_message: str | None
    created_at: datetime
    finished_at: datetime | None
    age_s: float  # seconds since it was created, by the store's clock (not a column)

    @classmethod
    def of(cls, row: dict[str, Any]) -> Estimate:
        values = {f.name: row[f.name] for f in fields(cls)}
        return cls(**{**values, "id": str(row["id"]), "progress": dict(row["progress"] or {}), "age_s": float(row["age_s"])})


class EstimateRepository(Protocol):
    """estimates (db/estimates.py): the API inserts a running row, the worker reports progress and answers it once."""

    def add(self, *, estimate_id: str, owner_id: str, kind: str, request: dict[str, Any]) -> Estimate: ...
    def get(self, estimate_id: str) -> Estimate | None: ...
    def running(self, owner_id: str, *, younger_than_s: float) -> int:
        """The owner's running estimates created within the last ``younger_than_s`` seconds (older ones are lost)."""
        ...

    def report(self, estimate_id: str, progress: dict[str, Any]) -> bool:
        """The worker's progress on a running estimate; False once it is answered."""
        ...

    def finish(
        self, estimate_id: str, move: Transition, *, result: dict[str, Any] | None = None, error_id: str | None = None, error_message: str | None = None
    ) -> bool:
        """running → completed or failed (``move``, an ESTIMATE transition: another entity's raises ValueError), stamped
        finished; False when it was already answered."""
        ...

    def purge(self, owner_id: str, *, older_than_s: float) -> int:
        """Delete the owner's estimates created more than ``older_than_s`` seconds ago; how many."""
        ...


# -- the service tiers the doctor probed per model (db/service_tiers.py) ----------------------------------
class ServiceTierRepository(Protocol):
    """What the chunk processor's Flex rule reads (domain/service_tier.py): the doctor's probe of a model's tier, and
    why a job left the pool or its lane."""

    def probed(self, model_id: str, tier: str = "flex") -> bool | None: ...  # True accepted, False refused, None never probed
    def record_probe(self, model_id: str, tier: str, *, accepted: bool, detail: str) -> None: ...  # the last probe wins
    def job_lane_reason(self, job_id: str) -> str | None: ...  # deadline, pool_too_small, …; None when it never left one


# -- chunk admission (db/admission.py): an owner's running chunks capped at a fair share ----------------
@dataclass(frozen=True)
class Admission:
    """A chunk's admission decision, and what it was made on."""

    admitted: bool
    share: int  # this owner's share of ``capacity`` now
    held: int  # the owner's running chunks before this one
    total: int  # all running chunks before this one


class ChunkAdmissions(Protocol):
    """Slots for running chunks, one per chunk invocation, shared fairly by owner (conversion/admission.py says why).
    Each call is its own transaction: slots are counted and taken atomically, across processes."""

    def admit(self, *, job_id: str, chunk_index: int, owner_id: str, capacity: int, ttl_s: float) -> Admission:
        """Take a slot for the chunk for ``ttl_s`` (or refresh the one it holds: a continuation, always admitted) if the
        owner holds fewer than its share (``capacity // owners``, at least 1; owners are those holding a slot or refused
        lately, and this one) and fewer than ``capacity`` run; refused, the owner counts as waiting for a while."""
        ...

    def release(self, *, job_id: str, chunk_index: int) -> None: ...  # the chunk's slot freed (none held: nothing)


# -- what a chunk's page threads share: the process's one serial connection (ondemand/limiter.py) --------
class Lease(Protocol):
    def renew(self) -> None: ...


class Limiter(Protocol):
    """The global on-demand limit (ondemand/limiter.py): leases on numbered slots, shared by owner, and request pacing."""

    def slot(self, pool: str, *, aborted: Callable[[], bool]) -> Any: ...  # a context manager yielding a Lease
    def pace(self, pool: str, *, aborted: Callable[[], bool] = ...) -> float: ...  # seconds to wait before starting the request (taken before the slot)
    def free_now(self, pool: str) -> int | None: ...  # requests that could start at once (None: unknown)


class PageThreadDatabase(Protocol):
    """The on-demand path's own connection, one per process on one thread, so page threads never open their own:
    the limiter's leases and the reads and writes a page thread makes between model calls. Each call is its own
    statement (no ``with``), from any thread."""

    def limiter(self, *, owner: str | None) -> Limiter: ...  # slots and pace shared fairly by ``owner``
    @property
    def budgets(self) -> BudgetRepository: ...  # the job's hold: reserve and settle a request's worst case
    @property
    def jobs(self) -> JobRepository: ...  # whether the chunk is still the worker's


# -- the API's read model, the per-user caps and rate limits (db/read_model.py, db/caps.py, db/rate_limits.py) ----------
class UniqueViolation(Exception):
    """A unique constraint refused a row (two writers raced for one slot); ``constraint`` names it
    (``one_live_job_per_file``). PostgreSQL's adapters raise db.errors.UniqueViolation, a subclass; the fakes this."""

    def __init__(self, constraint: str, detail: object = None) -> None:
        super().__init__(detail if detail is not None else constraint)
        self.constraint = constraint


@dataclass(frozen=True)
class JobLanes:
    """A job's lanes summed: the busiest state (preparing, submitted, stopping, else closed; closed with end state
    ``skipped`` when the pool let the job go without a lane), the newest lane's end, its members' records."""

    state: str
    end_state: str | None
    bedrock_status: str | None
    reason: str | None  # the newest lane's, else why the job left the pool
    record_count: int | None
    accepted_count: int | None
    fallback_count: int | None
    cost_usd: Decimal | None  # the job's batch-backend ledger rows
    submitted_at: datetime | None
    closed_at: datetime | None
    lanes: int


@dataclass(frozen=True)
class HoldView:
    """A job's funds hold as the API shows it."""

    amount_usd: Decimal
    outcome: str | None
    settled_usd: Decimal | None
    expires_at: datetime


@dataclass(frozen=True)
class JobProgress:
    """A job with its progress (its chunks summed), its lanes and its funds hold: what the API shows of a conversion."""

    job_id: str
    file_id: str
    owner_id: str
    status: str
    model_id: str
    total_pages: int
    chunk_count: int
    pages_failed: int
    pages_batch: int
    total_cost_usd: Decimal
    error_id: str | None
    error_message: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    retry_attempt: int | None
    retry_pages: tuple[int, ...] | None
    chunks_done: int
    chunks_cancelled: int
    pages_done: int  # pages of completed chunks, and the pages done so far of the others
    lanes: JobLanes | None  # None: never in a lane, nor let go by the pool
    hold: HoldView | None


@dataclass(frozen=True)
class OwnerFile:
    """One of an owner's files (not deleted) with its current job: the live one, else the newest."""

    file_id: str
    name: str
    size_bytes: int
    status: str
    created_at: datetime
    updated_at: datetime
    folder_job_id: str | None  # the folder job that opened it, if one did
    job: JobProgress | None


@dataclass(frozen=True)
class FileJob:
    """One job of a file and the state of a lane still open that carries it (None: none is)."""

    job_id: str
    open_lane_state: str | None


@dataclass(frozen=True)
class ModelSpend:
    """A job's booked cost and tokens for one model (every ledger row of the job)."""

    model_id: str
    cost_usd: Decimal
    input_tokens: int
    output_tokens: int


class ReadModel(Protocol):
    """The API's read model (db/read_model.py): read-only joins of jobs, chunks, lanes, holds and the ledger, one
    query per answer (a file listing is one query, not one per file)."""

    def job(self, job_id: str) -> JobProgress | None: ...
    def current_job(self, file_id: str) -> JobProgress | None:
        """The file's live job if it has one, else its newest."""
        ...

    def owner_files(self, owner_id: str, *, job_status: str | None, limit: int) -> list[OwnerFile]:
        """The owner's files not deleted, newest first (only those whose current job is in ``job_status`` when given)."""
        ...

    def jobs_of_file(self, file_id: str) -> list[FileJob]: ...
    def spend_by_model(self, job_id: str) -> list[ModelSpend]: ...


class CapCounts(Protocol):
    """The counts behind the per-user caps on what costs outside the budget (db/caps.py)."""

    def pending_uploads(self, owner_id: str) -> int:
        """Files the owner registered (presigned POSTs handed out) and never converted nor deleted; a folder file is not one."""
        ...

    def live_folder_jobs(self, owner_id: str) -> int:
        """The owner's folder jobs not finished (a cancelled one whose files still finish counts)."""
        ...

    def recent_test_deliveries(self, owner_id: str, *, event: str, hours: float) -> int:
        """Deliveries of ``event`` with no job nor folder job (tests) the owner asked for in the last ``hours``."""
        ...


class RateLimits(Protocol):
    """The API's per-user token buckets (db/rate_limits.py): a bucket starts full and refills at ``rate_per_s`` up to ``burst``."""

    def take(self, owner_id: str, *, cost: float, rate_per_s: float, burst: float) -> float:
        """Take ``cost`` tokens from the owner's bucket: 0 when admitted, else the seconds until that many have refilled
        (nothing taken; with no refill rate, an hour)."""
        ...


class UnitOfWork(Protocol):
    """One transaction over the repositories: what a use case does inside ``with uow:`` commits together
    when the block ends, and none of it when the block raises. Outside a ``with`` each call is its own
    transaction. Blocks do not nest."""

    @property
    def jobs(self) -> JobRepository: ...
    @property
    def ledger(self) -> LedgerRepository: ...
    @property
    def budgets(self) -> BudgetRepository: ...
    @property
    def folder_jobs(self) -> FolderJobRepository: ...
    @property
    def deliveries(self) -> DeliveryRepository: ...
    @property
    def lanes(self) -> LaneRepository: ...
    @property
    def page_forms(self) -> PageFormRepository: ...
    @property
    def retries(self) -> RetryRepository: ...
    @property
    def service_tiers(self) -> ServiceTierRepository: ...
    @property
    def reads(self) -> ReadModel: ...
    @property
    def caps(self) -> CapCounts: ...
    @property
    def rate_limits(self) -> RateLimits: ...
    @property
    def estimates(self) -> EstimateRepository: ...
    @property
    def webhook_secrets(self) -> WebhookSecretRepository: ...

    def check_connection(self) -> None:
        """Make sure the next statement finds the database (reconnect now if the connection died): before a write
        that follows minutes of other work (a chunk's model calls), whose booking must not be lost."""
        ...

    def __enter__(self) -> UnitOfWork: ...
    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> None: ...
