"""What the use cases need from AWS, as interfaces: boto3 adapters in ``aws/``, in-memory fakes in tests.

The adapters translate AWS's error codes into the errors below, once; use cases never see a
``ClientError``. ``runtime.py`` is the one place that builds the adapters (docs/architecture.md,
"Ports and adapters").
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # the typed rows live beside their SQL; the port only names them
    from batchlane.db.jobs import ChunkRow, FileRow, JobRow
    from batchlane.domain.status import Transition
    from batchlane.pdf.split import ChunkSpan

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
    def live_job_of_file(self, file_id: str) -> str | None: ...
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


class LedgerRepository(Protocol):
    """What was spent (ledger rows) and what is held (funds holds) per job (db/ledger.py)."""


class BudgetRepository(Protocol):
    """Owners' limits and standing: monthly spend, live jobs and pages, reservations (db/budgets.py, db/caps.py)."""


class FolderJobRepository(Protocol):
    """Folder jobs and their files (db/folder_jobs.py)."""


class DeliveryRepository(Protocol):
    """Webhook subscriptions and deliveries (db/deliveries.py)."""


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

    def __enter__(self) -> UnitOfWork: ...
    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> None: ...
