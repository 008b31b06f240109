"""Every status a row can hold, and every move between them, as ONE table (``TRANSITIONS``).

Values are what the database stores (the CHECK lists of db/migrations/*.sql). Repositories
guard each ``UPDATE … WHERE status = ANY(…)`` with the from-states of a named transition.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum


class Entity(StrEnum):
    """The tables whose rows carry a status."""

    FILE = "file"  # files.status
    JOB = "job"  # large_conversion_jobs.status
    CHUNK = "chunk"  # chunk_jobs.status
    LANE = "lane"  # the table lanes, column state (one row per Bedrock job of the pool)
    BATCH_MEMBER = "batch_member"  # batch_members.state (a job's chunk riding in a lane)
    RETRY = "retry"  # job_retries.status
    DELIVERY = "delivery"  # webhook_deliveries.status
    FOLDER_JOB = "folder_job"  # folder_jobs.status
    FOLDER_FILE = "folder_file"  # folder_job_files.status
    ESTIMATE = "estimate"  # estimates.status


class FileStatus(StrEnum):
    UPLOADED = "uploaded"
    CONVERTING = "converting"
    CONVERTED = "converted"
    FAILED = "failed"


class JobStatus(StrEnum):
    """In the order a job passes through them."""

    SPLITTING = "splitting"
    PENDING = "pending"
    WAITING_BATCH = "waiting_batch"
    PROCESSING = "processing"
    PAUSED_BUDGET = "paused_budget"
    ASSEMBLING = "assembling"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


class ChunkStatus(StrEnum):
    """A chunk is never splitting, assembling or paused: those are the job's."""

    PENDING = "pending"
    WAITING_BATCH = "waiting_batch"
    PROCESSING = "processing"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


class LaneState(StrEnum):
    """The state of a row of the table lanes; ``stopping``: the lane left a Bedrock job still running, its bill waits."""

    PREPARING = "preparing"
    SUBMITTED = "submitted"
    STOPPING = "stopping"
    CLOSED = "closed"


class BatchMemberState(StrEnum):
    """batch_members.state: a chunk in a lane; ``left``: its job left first (cancel, process now, the lane stopping)."""

    PACKED = "packed"
    COLLECTED = "collected"
    LEFT = "left"


class RetryStatus(StrEnum):
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


class DeliveryStatus(StrEnum):
    PENDING = "pending"
    RETRYING = "retrying"
    DELIVERED = "delivered"
    FAILED = "failed"


class FolderJobStatus(StrEnum):
    """A folder job: listing (files found so far already convert), then converting, then one of the ends."""

    ENUMERATING = "enumerating"
    PROCESSING = "processing"
    COMPLETED = "completed"
    COMPLETED_WITH_FAILURES = "completed_with_failures"
    CANCELLED = "cancelled"
    ERROR = "error"  # the job itself could not run (why is on the row)


class FolderFileStatus(StrEnum):
    QUEUED = "queued"
    PROCESSING = "processing"
    COMPLETED = "completed"
    FAILED = "failed"
    SKIPPED = "skipped"


class EstimateStatus(StrEnum):
    """A dry run's asynchronous estimate (0037_estimates.sql): the worker runs it, then it holds its answer or why not."""

    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"


class BedrockJobStatus(StrEnum):
    """GetModelInvocationJob's statuses (AWS), plus ``Lost``: ours, for ResourceNotFoundException."""

    SUBMITTED = "Submitted"
    VALIDATING = "Validating"
    SCHEDULED = "Scheduled"
    IN_PROGRESS = "InProgress"
    COMPLETED = "Completed"
    PARTIALLY_COMPLETED = "PartiallyCompleted"
    FAILED = "Failed"
    STOPPING = "Stopping"
    STOPPED = "Stopped"
    EXPIRED = "Expired"
    LOST = "Lost"


# Nothing more comes from a Bedrock job in one of these: collect what exists.
TERMINAL_BEDROCK_STATUSES: frozenset[str] = frozenset(
    {
        BedrockJobStatus.COMPLETED,
        BedrockJobStatus.PARTIALLY_COMPLETED,
        BedrockJobStatus.FAILED,
        BedrockJobStatus.STOPPED,
        BedrockJobStatus.EXPIRED,
        BedrockJobStatus.LOST,
    }
)

STATUSES: dict[Entity, type[StrEnum]] = {
    Entity.FILE: FileStatus,
    Entity.JOB: JobStatus,
    Entity.CHUNK: ChunkStatus,
    Entity.LANE: LaneState,
    Entity.BATCH_MEMBER: BatchMemberState,
    Entity.RETRY: RetryStatus,
    Entity.DELIVERY: DeliveryStatus,
    Entity.FOLDER_JOB: FolderJobStatus,
    Entity.FOLDER_FILE: FolderFileStatus,
    Entity.ESTIMATE: EstimateStatus,
}

# The statuses a row is inserted with.
INITIAL: dict[Entity, frozenset[str]] = {
    Entity.FILE: frozenset({FileStatus.UPLOADED}),
    # splitting; failed when the upload is rejected at intake (the job row records why)
    Entity.JOB: frozenset({JobStatus.SPLITTING, JobStatus.FAILED}),
    # written by the split, with the status the job moves to
    Entity.CHUNK: frozenset({ChunkStatus.PENDING, ChunkStatus.WAITING_BATCH}),
    # preparing when the packer forms a lane
    Entity.LANE: frozenset({LaneState.PREPARING}),
    Entity.BATCH_MEMBER: frozenset({BatchMemberState.PACKED}),
    Entity.RETRY: frozenset({RetryStatus.RUNNING}),
    Entity.DELIVERY: frozenset({DeliveryStatus.PENDING}),
    Entity.FOLDER_JOB: frozenset({FolderJobStatus.ENUMERATING}),
    # found by the listing: queued, or already decided (skipped: converted before; failed: not a PDF, a collision)
    Entity.FOLDER_FILE: frozenset({FolderFileStatus.QUEUED, FolderFileStatus.SKIPPED, FolderFileStatus.FAILED}),
    Entity.ESTIMATE: frozenset({EstimateStatus.RUNNING}),
}


@dataclass(frozen=True)
class Transition:
    """A named move of one entity: allowed only from ``sources``, always to ``target``."""

    entity: Entity
    name: str
    sources: frozenset[str]
    target: str

    @property
    def from_states(self) -> list[str]:
        """The sources as a sorted list: the ``= ANY(:from)`` parameter of a guarded UPDATE."""
        return sorted(self.sources)

    def allows(self, current: str) -> bool:
        return current in self.sources


def _t(entity: Entity, name: str, sources: Iterable[str], target: str) -> Transition:
    return Transition(entity, name, frozenset(str(s) for s in sources), str(target))


F, J, C, B, R, D = FileStatus, JobStatus, ChunkStatus, LaneState, RetryStatus, DeliveryStatus
FJ, FF = FolderJobStatus, FolderFileStatus
_FOLDER_LIVE = (FJ.ENUMERATING, FJ.PROCESSING)
_FOLDER_ENDED = (FJ.COMPLETED, FJ.COMPLETED_WITH_FAILURES, FJ.CANCELLED)  # may run again (retry, resume); error may not
_JOB_CANCELLABLE = (J.SPLITTING, J.PENDING, J.WAITING_BATCH, J.PROCESSING, J.PAUSED_BUDGET)  # not assembling: too late
_JOB_LIVE = (*_JOB_CANCELLABLE, J.ASSEMBLING)
_JOB_IN_RETRY = (J.PENDING, J.PROCESSING, J.PAUSED_BUDGET, J.ASSEMBLING)  # where a retry of failed pages can be

TRANSITIONS: tuple[Transition, ...] = (
    # files: follow their latest job
    _t(Entity.FILE, "convert", (F.UPLOADED, F.CONVERTED, F.FAILED), F.CONVERTING),  # a job is created
    _t(Entity.FILE, "reject", (F.UPLOADED, F.CONVERTED, F.FAILED), F.FAILED),  # the upload is refused at intake
    _t(Entity.FILE, "settle", (F.CONVERTING,), F.CONVERTED),
    _t(Entity.FILE, "fail", (F.CONVERTING,), F.FAILED),
    _t(Entity.FILE, "cancel", (F.CONVERTING,), F.UPLOADED),  # can be converted again
    _t(Entity.FILE, "retry", (F.CONVERTED,), F.CONVERTING),
    _t(Entity.FILE, "end_retry", (F.CONVERTING,), F.CONVERTED),
    # jobs
    _t(Entity.JOB, "queue", (J.SPLITTING,), J.PENDING),  # split, goes on-demand
    _t(Entity.JOB, "park", (J.SPLITTING,), J.WAITING_BATCH),  # split, waits for the batch lane
    _t(Entity.JOB, "claim", (J.WAITING_BATCH,), J.WAITING_BATCH),  # the packer takes it: its lane is born preparing
    _t(Entity.JOB, "leave_batch_lane", (J.WAITING_BATCH,), J.PENDING),  # resume after the lane, or process now
    _t(Entity.JOB, "start", (J.PENDING, J.PROCESSING), J.PROCESSING),  # the conversion workflow (re)starts
    _t(Entity.JOB, "pause_budget", (J.PROCESSING,), J.PAUSED_BUDGET),  # spend reached the funds hold
    _t(Entity.JOB, "resume", (J.PAUSED_BUDGET,), J.PROCESSING),  # the hold was raised
    _t(Entity.JOB, "assemble", (J.PROCESSING, J.ASSEMBLING), J.ASSEMBLING),
    _t(Entity.JOB, "settle", (J.ASSEMBLING,), J.COMPLETED),
    _t(Entity.JOB, "fail", _JOB_LIVE, J.FAILED),
    _t(Entity.JOB, "cancel", _JOB_CANCELLABLE, J.CANCELLED),
    _t(Entity.JOB, "retry", (J.COMPLETED,), J.PENDING),  # retry its failed pages
    _t(Entity.JOB, "end_retry", _JOB_IN_RETRY, J.COMPLETED),  # a retry cancelled or failed: back as it was
    # chunks: move with their job, and one worker at a time
    _t(Entity.CHUNK, "leave_batch_lane", (C.WAITING_BATCH,), C.PENDING),
    _t(Entity.CHUNK, "start", (C.PENDING, C.WAITING_BATCH), C.PENDING),
    _t(Entity.CHUNK, "claim", (C.PENDING, C.PROCESSING), C.PROCESSING),  # a previous attempt's processing is taken over
    _t(Entity.CHUNK, "resume", (C.PROCESSING,), C.PENDING),  # its job resumed after a budget pause: the new run claims it again
    _t(Entity.CHUNK, "complete", (C.PROCESSING,), C.COMPLETED),
    _t(Entity.CHUNK, "fail", (C.PENDING, C.WAITING_BATCH, C.PROCESSING), C.FAILED),
    _t(Entity.CHUNK, "cancel", (C.PENDING, C.WAITING_BATCH, C.PROCESSING, C.FAILED), C.CANCELLED),
    _t(Entity.CHUNK, "retry", (C.COMPLETED,), C.PENDING),
    _t(Entity.CHUNK, "end_retry", (C.PENDING, C.PROCESSING, C.COMPLETED), C.COMPLETED),  # restored from the snapshot
    # lanes (one per Bedrock job of the pool): preparing → submitted [→ stopping] → closed
    _t(Entity.LANE, "submit", (B.PREPARING,), B.SUBMITTED),  # or a retried submit adopts the created Bedrock job
    _t(Entity.LANE, "stop", (B.SUBMITTED,), B.STOPPING),  # the lane leaves a running Bedrock job
    _t(Entity.LANE, "leave_before_submit", (B.PREPARING,), B.CLOSED),  # skipped or prepare failed
    _t(Entity.LANE, "close", (B.SUBMITTED,), B.CLOSED),  # collected (or abandoned at a terminal status) and billed
    _t(Entity.LANE, "settle_stopping", (B.STOPPING,), B.CLOSED),  # billed at the terminal status
    # a job's chunk in a lane
    _t(Entity.BATCH_MEMBER, "collect", (BatchMemberState.PACKED,), BatchMemberState.COLLECTED),  # its lane closed
    _t(Entity.BATCH_MEMBER, "leave", (BatchMemberState.PACKED,), BatchMemberState.LEFT),  # its job left, or the lane went stopping
    # retries of a job's failed pages
    _t(Entity.RETRY, "settle", (R.RUNNING,), R.COMPLETED),
    _t(Entity.RETRY, "fail", (R.RUNNING,), R.FAILED),
    _t(Entity.RETRY, "cancel", (R.RUNNING,), R.CANCELLED),
    # webhook deliveries
    _t(Entity.DELIVERY, "deliver", (D.PENDING, D.RETRYING), D.DELIVERED),
    _t(Entity.DELIVERY, "retry", (D.PENDING, D.RETRYING), D.RETRYING),
    _t(Entity.DELIVERY, "give_up", (D.PENDING, D.RETRYING), D.FAILED),
    # folder jobs
    _t(Entity.FOLDER_JOB, "enumerated", (FJ.ENUMERATING,), FJ.PROCESSING),  # the listing is complete
    _t(Entity.FOLDER_JOB, "complete", _FOLDER_LIVE, FJ.COMPLETED),
    _t(Entity.FOLDER_JOB, "complete_with_failures", _FOLDER_LIVE, FJ.COMPLETED_WITH_FAILURES),
    _t(Entity.FOLDER_JOB, "cancel", _FOLDER_LIVE, FJ.CANCELLED),  # documents in flight finish
    _t(Entity.FOLDER_JOB, "end_cancelled", (FJ.CANCELLED,), FJ.CANCELLED),  # its last documents finished: the record is written
    _t(Entity.FOLDER_JOB, "fail", _FOLDER_LIVE, FJ.ERROR),
    _t(Entity.FOLDER_JOB, "reopen", _FOLDER_ENDED, FJ.PROCESSING),  # retry or resume, the listing complete
    _t(Entity.FOLDER_JOB, "reopen_enumeration", _FOLDER_ENDED, FJ.ENUMERATING),  # resume with the listing unfinished
    _t(Entity.FOLDER_JOB, "relist", (FJ.ERROR,), FJ.ENUMERATING),  # a job that could not run (an empty folder) lists its folder afresh
    # a folder job's files
    _t(Entity.FOLDER_FILE, "start", (FF.QUEUED,), FF.PROCESSING),  # its conversion is being created
    _t(Entity.FOLDER_FILE, "requeue", (FF.PROCESSING,), FF.QUEUED),  # the start did not happen (released, stalled)
    _t(Entity.FOLDER_FILE, "retry_conversion", (FF.PROCESSING,), FF.QUEUED),  # its conversion failed; policy.max_retries allows another
    _t(Entity.FOLDER_FILE, "complete", (FF.QUEUED, FF.PROCESSING), FF.COMPLETED),
    _t(Entity.FOLDER_FILE, "fail", (FF.QUEUED, FF.PROCESSING), FF.FAILED),
    _t(Entity.FOLDER_FILE, "skip", (FF.QUEUED, FF.PROCESSING), FF.SKIPPED),  # cancelled, or converted before
    _t(Entity.FOLDER_FILE, "retry", (FF.FAILED, FF.SKIPPED), FF.QUEUED),  # retry by error id, or a resume
    # a dry run's estimate: the worker answers it once
    _t(Entity.ESTIMATE, "complete", (EstimateStatus.RUNNING,), EstimateStatus.COMPLETED),
    _t(Entity.ESTIMATE, "fail", (EstimateStatus.RUNNING,), EstimateStatus.FAILED),
)

_BY_NAME: dict[tuple[Entity, str], Transition] = {(t.entity, t.name): t for t in TRANSITIONS}


def transition(entity: Entity, name: str) -> Transition:
    """The row of the table; KeyError when ``entity`` has no transition of that name."""
    return _BY_NAME[(entity, name)]


def targets(entity: Entity, current: str) -> frozenset[str]:
    """Every status a row of ``entity`` in ``current`` may move to."""
    return frozenset(t.target for t in TRANSITIONS if t.entity is entity and current in t.sources)


def terminal(entity: Entity) -> frozenset[str]:
    """The statuses with no way out."""
    return frozenset(str(s) for s in STATUSES[entity] if not (targets(entity, s) - {str(s)}))


# Finished: the job's work has ended (finished_at is set). Completed is finished but not
# terminal: a retry of its failed pages reopens it.
FINISHED_JOB_STATUSES: tuple[str, ...] = (J.COMPLETED, J.FAILED, J.CANCELLED)
LIVE_JOB_STATUSES: tuple[str, ...] = tuple(s for s in JobStatus if s not in FINISHED_JOB_STATUSES)
# What an owner's live-job and live-page caps count (issue 15): not a job parked for the batch pool. It
# holds no on-demand capacity, and the pool exists to gather many of them (a folder of 10,000 small
# documents must be able to wait there together); its funds hold still counts against the budget.
CAPPED_JOB_STATUSES: tuple[str, ...] = tuple(s for s in LIVE_JOB_STATUSES if s != JobStatus.WAITING_BATCH)
# A Stopping Bedrock job still counts against the model's concurrent-job quota.
IN_FLIGHT_LANE_STATES: tuple[str, ...] = (B.PREPARING, B.SUBMITTED, B.STOPPING)


LIVE_FOLDER_JOB_STATUSES: tuple[str, ...] = _FOLDER_LIVE


# -- the named transitions ----------------------------------------------------------------
def folder_job(name: str) -> Transition:
    """A folder job's move by name (``complete``, ``cancel``, ``fail``, ``reopen``, ...)."""
    return transition(Entity.FOLDER_JOB, name)


def folder_file(name: str) -> Transition:
    """A folder file's move by name (``start``, ``requeue``, ``complete``, ``fail``, ``skip``, ``retry``)."""
    return transition(Entity.FOLDER_FILE, name)


def queue() -> Transition:
    return transition(Entity.JOB, "queue")


def park() -> Transition:
    return transition(Entity.JOB, "park")


def claim(entity: Entity = Entity.JOB) -> Transition:
    return transition(entity, "claim")


def leave_batch_lane(entity: Entity = Entity.JOB) -> Transition:
    return transition(entity, "leave_batch_lane")


def start(entity: Entity = Entity.JOB) -> Transition:
    return transition(entity, "start")


def pause_budget() -> Transition:
    return transition(Entity.JOB, "pause_budget")


def resume(entity: Entity = Entity.JOB) -> Transition:
    return transition(entity, "resume")


def assemble() -> Transition:
    return transition(Entity.JOB, "assemble")


def settle(entity: Entity = Entity.JOB) -> Transition:
    return transition(entity, "settle")


def fail(entity: Entity = Entity.JOB) -> Transition:
    return transition(entity, "fail")


def cancel(entity: Entity = Entity.JOB) -> Transition:
    return transition(entity, "cancel")


def retry(entity: Entity = Entity.JOB) -> Transition:
    return transition(entity, "retry")


def end_retry(entity: Entity = Entity.JOB) -> Transition:
    return transition(entity, "end_retry")


def convert() -> Transition:
    return transition(Entity.FILE, "convert")


def reject() -> Transition:
    return transition(Entity.FILE, "reject")


def complete_chunk() -> Transition:
    return transition(Entity.CHUNK, "complete")


def submit() -> Transition:
    return transition(Entity.LANE, "submit")


def stop() -> Transition:
    return transition(Entity.LANE, "stop")


def leave_before_submit() -> Transition:
    return transition(Entity.LANE, "leave_before_submit")


def close() -> Transition:
    return transition(Entity.LANE, "close")


def collect_member() -> Transition:
    return transition(Entity.BATCH_MEMBER, "collect")


def leave_lane() -> Transition:
    return transition(Entity.BATCH_MEMBER, "leave")


def settle_stopping() -> Transition:
    return transition(Entity.LANE, "settle_stopping")


def deliver() -> Transition:
    return transition(Entity.DELIVERY, "deliver")


def retry_delivery() -> Transition:
    return transition(Entity.DELIVERY, "retry")


def give_up_delivery() -> Transition:
    return transition(Entity.DELIVERY, "give_up")


def estimate(name: str) -> Transition:
    """An estimate's move by name (``complete``, ``fail``)."""
    return transition(Entity.ESTIMATE, name)
