"""The pool's packing rule: which waiting chunks form which Bedrock jobs, and who gives up waiting.

Pure: the packer (batch/packer.py) reads the pool of one model from the database in fair order
(owners in turns, then each job's chunks in order), asks :func:`plan_pool`, and acts on the plan.

* A Bedrock job holds at most ``max_records`` records. A chunk's pages are an upper bound on its
  records (a blank page sends none), so the plan counts pages; prepare counts the real records
  and the lane skips to on-demand if blanks took it under ``min_records``.
* A Bedrock job's input files weigh at most ``max_bytes`` in all (the "Batch inference job size"
  quota): each chunk carries its records' estimated bytes (domain/limits.estimated_record_bytes,
  from its source PDF's size), so heavy pages split into more lanes instead of one that prepare
  would find too large and send on-demand. Each record is far under the per-file quota and prepare
  cuts a chunk's records into files of ``MAX_FILE_MB``, so files never limit the packing.
* A chunk is the unit: a job's chunks stay together in order where they fit, and a job with more
  pages than one Bedrock job allows spans several (the chunk is never cut).
* Full jobs go at once. What is left forms one more job when its oldest chunk has waited the pool
  window and it holds at least ``min_records``; when it holds fewer, the jobs whose window has
  passed leave the pool for on-demand (``pool_too_small``), and the rest keep waiting.
* Only ``slots`` Bedrock jobs may start (the concurrent-job quota of the model's BASE model minus
  the jobs in flight on any profile of it, :func:`base_model_id`):
  packing beyond them waits; it never fails, and nobody leaves for the quota (a job with pages
  waiting for a slot keeps its too-small remainder waiting too, rather than sending all on-demand).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal

# A cross-Region inference profile is "<geography>.<provider>.<model>" (us., eu., apac., global., ...;
# Bedrock user guide, "Supported Regions and models for inference profiles"); its base model is the rest.
_PROFILE_PREFIX = re.compile(r"^(?:us|eu|apac|global|us-gov|jp|au|ca|ap)\.(?=[a-z0-9-]+\.)")


def base_model_id(model_id: str) -> str:
    """The base model a model id or inference profile (id or ARN) runs on: Bedrock's concurrent batch-job
    quota ("... batch inference jobs using a base model for M") is per base model, so the us. and global.
    profiles of one model share it."""
    tail = model_id.rsplit("/", 1)[-1] if model_id.startswith("arn:") else model_id
    return _PROFILE_PREFIX.sub("", tail)


def by_base_model(per_model: dict[str, int]) -> dict[str, int]:
    """Per-model counts summed per base model: the us./global. profiles of one model share its quota."""
    found: dict[str, int] = {}
    for model, n in per_model.items():
        base = base_model_id(model)
        found[base] = found.get(base, 0) + n
    return found


@dataclass(frozen=True)
class PoolChunk:
    job_id: str
    chunk_index: int
    pages: int
    waited_s: float  # since the job entered the pool
    input_bytes: int = 0  # its records' estimated bytes in the lane's input (0: unknown, records only)


@dataclass(frozen=True)
class PoolPlan:
    bedrock_jobs: list[list[PoolChunk]] = field(default_factory=list)
    leave: list[str] = field(default_factory=list)  # job ids whose unpacked chunks go on-demand
    waiting_chunks: int = 0
    waiting_pages: int = 0
    why_waiting: str | None = None  # "window", "quota", or None when nothing waits
    short: bool = False  # a truncated read filled fewer than the free slots: read the whole pool (plan_pool)


OPEN_JOBS = 8  # how many partly filled jobs first fit tries: more would make packing quadratic


def pack(chunks: list[PoolChunk], max_records: int, max_bytes: int | None = None) -> list[list[PoolChunk]]:
    """First fit in the given order over the last few open jobs: the order's fairness holds, a job's
    chunks mostly stay together, and small chunks fill the gaps big ones leave. A job takes a chunk
    only where both its records and its bytes fit (a chunk heavier than ``max_bytes`` goes alone)."""
    return _pack(chunks, max_records, max_bytes)[0]


def _pack(chunks: list[PoolChunk], max_records: int, max_bytes: int | None) -> tuple[list[list[PoolChunk]], list[int]]:
    """:func:`pack`, and the jobs still open at the end (the only ones a chunk read after these could join)."""
    cap_bytes = max_bytes if max_bytes is not None else float("inf")
    jobs: list[list[PoolChunk]] = []
    room: list[int] = []
    room_bytes: list[float] = []
    open_jobs: list[int] = []
    for chunk in chunks:
        if chunk.pages > max_records:
            raise ValueError(f"chunk {chunk.chunk_index} of job {chunk.job_id} has {chunk.pages} pages, over the {max_records}-record cap")
        for i in open_jobs:
            if chunk.pages <= room[i] and chunk.input_bytes <= room_bytes[i]:
                jobs[i].append(chunk)
                room[i] -= chunk.pages
                room_bytes[i] -= chunk.input_bytes
                break
        else:
            jobs.append([chunk])
            room.append(max_records - chunk.pages)
            room_bytes.append(cap_bytes - chunk.input_bytes)
            open_jobs.append(len(jobs) - 1)
            if len(open_jobs) > OPEN_JOBS:
                open_jobs.pop(0)
    return jobs, open_jobs


def pages(chunks: list[PoolChunk]) -> int:
    return sum(c.pages for c in chunks)


def read_budget(slots: int, max_records: int, *, attempt: int = 0) -> int:
    """How many pages of one model's pool, in fair order, a turn reads (db/lanes.PgLanes.read_pool). First
    (``attempt`` 0): enough for ``slots`` full Bedrock jobs, the job still open at the end of what was read
    (a chunk read after it could join it, so a truncated read keeps it waiting), and one more. A read that
    turns out short (:attr:`PoolPlan.short`: chunks of mixed sizes leave several jobs open, or fill none)
    is made again with room for every job :func:`pack` may hold open (``attempt`` 1), then whole."""
    return (max(slots, 0) + 2 + (OPEN_JOBS if attempt else 0)) * max_records


def plan_pool(
    chunks: list[PoolChunk],
    *,
    max_records: int,
    min_records: int,
    window_s: float,
    slots: int,
    max_bytes: int | None = None,
    truncated: bool = False,
    smallest: int | None = None,
    lightest: int | None = None,
) -> PoolPlan:
    """What to do with one model's pool now (see the module doc).

    ``truncated``: ``chunks`` is only the fair-order prefix of the pool (:func:`read_budget` pages; more wait
    behind it), and ``smallest`` / ``lightest`` are the fewest pages and bytes of any chunk in the WHOLE pool.
    From the first job still open at the end of the prefix that a chunk of the pool could still fit, the
    packed jobs wait (with them every pool job they carry, which never leaves this turn): each Bedrock job that goes is one the whole pool would send, and each job let go is
    one it would let go too. When fewer than ``slots`` jobs could go from the prefix, the plan says
    ``short``: the whole pool might fill more slots, the packer reads it again unbounded."""
    if not chunks:
        return PoolPlan()
    smallest = min(c.pages for c in chunks) if smallest is None else smallest
    lightest = min(c.input_bytes for c in chunks) if lightest is None else lightest
    go: list[list[PoolChunk]] = []
    waiting: list[PoolChunk] = []
    too_small: list[PoolChunk] = []  # ripe, but too few records for a Bedrock job
    for_quota: set[str] = set()  # jobs with pages that only wait for a slot (or, truncated, for the read's end)
    why: str | None = None
    jobs, still_open = _pack(chunks, max_records, max_bytes)
    # Truncated: an open job some chunk of the pool could still fit (every chunk has at least ``smallest`` pages
    # and ``lightest`` bytes) may take chunks read after the prefix, and so may go, in the whole pool's plan,
    # before the jobs opened after it: from the first such job on, nothing is decided this turn. The jobs
    # before it are final, as a closed job is.
    cap_bytes = max_bytes if max_bytes is not None else float("inf")
    fits = [i for i in still_open if max_records - pages(jobs[i]) >= smallest and cap_bytes - sum(c.input_bytes for c in jobs[i]) >= lightest]
    undecided_from = min(fits) if truncated and fits else len(jobs)
    if truncated:  # the job of the prefix's last chunk may have chunks past it, in jobs not read: it does not leave this turn
        for_quota.add(chunks[-1].job_id)
    for index, job in enumerate(jobs):
        if index >= undecided_from:  # chunks past the prefix may change it or a job before it: not decided
            waiting.extend(job)
            for_quota.update(c.job_id for c in job)
            why = "quota" if len(go) >= slots else (why or "window")
            continue
        size = pages(job)
        heavy = max_bytes is not None and max_bytes - sum(c.input_bytes for c in job) < max(lightest, 1)
        full = max_records - size < smallest or heavy  # nothing in the pool would fit any more
        ripe = max(c.waited_s for c in job) >= window_s
        if full or (ripe and size >= min_records):
            if len(go) < slots:
                go.append(job)
                continue
            why = "quota"
            waiting.extend(job)
            for_quota.update(c.job_id for c in job)
        elif ripe:
            too_small.extend(job)
            why = why or "window"
        else:
            waiting.extend(job)
            why = why or "window"
    # Too few records even after the window: those who waited it out go on-demand, unless some of
    # their pages wait only for the quota (leaving would send those on-demand too: they all wait).
    leave = {c.job_id for c in too_small if c.waited_s >= window_s} - for_quota
    waiting.extend(c for c in too_small if c.job_id not in leave)
    # A job leaving takes its chunks that wait with it (any already packed above still ride: its
    # conversion resumes when that Bedrock job is collected, those pages primed, the rest on-demand).
    waiting = [c for c in waiting if c.job_id not in leave]
    short = truncated and len(go) < slots
    return PoolPlan(go, sorted(leave), len(waiting), pages(waiting), why if waiting else None, short)


MICRO = Decimal("0.000001")  # the ledger's precision (numeric(14, 6))


def split_by_weight(total: Decimal, weights: dict[str, int], *, unit: Decimal = MICRO) -> dict[str, Decimal]:
    """``total`` shared by ``weights`` (a member's records), in ``unit`` steps, largest remainder first, so the
    shares add up to ``total`` exactly. All weights 0: shared equally."""
    if not weights:
        return {}
    if sum(weights.values()) <= 0:
        weights = dict.fromkeys(weights, 1)
    steps = int((total / unit).to_integral_value())
    whole = sum(weights.values())
    exact = {k: Decimal(steps) * w / whole for k, w in weights.items()}
    floors = {k: int(v) for k, v in exact.items()}
    left = steps - sum(floors.values())
    for k in sorted(exact, key=lambda k: (exact[k] - floors[k], k), reverse=True)[:left]:
        floors[k] += 1
    return {k: n * unit for k, n in floors.items()}


# -- the retry batch -------------------------------------------------------------------------
# A record Bedrock answered with one of these may well succeed when sent again (throttling, a
# timeout, a transient model or service error); a validation error or a refusal would not.
RETRYABLE_ERROR_CODES = frozenset({408, 424, 429, 500, 502, 503, 504})
RETRYABLE_ERROR_NAMES = (
    "ThrottlingException",
    "ModelTimeoutException",
    "ModelErrorException",
    "ServiceUnavailableException",
    "InternalServerException",
    "ModelNotReadyException",
)
RETRYABLE_REJECTIONS = frozenset({"empty_text"})  # not a refusal, not a truncation


def retryable_error(code: object, message: object) -> bool:
    """A record-level error (``{"errorCode", "errorMessage"}``) a second batch may cure."""
    try:
        if int(str(code)) in RETRYABLE_ERROR_CODES:
            return True
    except ValueError:
        pass
    text = str(message or "")
    return any(name in text for name in RETRYABLE_ERROR_NAMES)


def retry_batch_allowed(records: int, *, min_records: int, already_a_retry: bool, deadlines_s: list[float | None], turnaround_s: float) -> str | None:
    """Why the failed records of a lane may NOT go to a retry batch (None: they may). ``deadlines_s``: each
    affected member's seconds left before its deadline (None: no deadline)."""
    if already_a_retry:
        return "retried_once"  # one retry batch per record: what fails twice goes on-demand
    if records < min_records:
        return "too_few_to_retry"
    if any(left is not None and left < turnaround_s for left in deadlines_s):
        return "deadline"
    return None
