"""One turn of a folder job's loop: settle finished files, start queued ones within the cap, report.

Progress is polled, not pushed: each turn joins the job's processing files with their
conversion jobs in one query, so a lost or duplicated event can never strand or double-count
a file (the loop is running anyway while files are in flight). Each file is the ordinary
single-file conversion (filejob/create.py) reading the PDF where it lies in the user's bucket.
"""

from __future__ import annotations

import json
import posixpath
from datetime import UTC, datetime
from typing import Any

from batchlane import keys
from batchlane.domain import status as st
from batchlane.domain.advice import error_object
from batchlane.domain.eligibility import batch_eligible
from batchlane.domain.errors import BatchlaneError, LimitReached, NotFound, ObjectUnreadable, StoreUnavailable
from batchlane.domain.file_types import DOCUMENTS
from batchlane.domain.folder_policy import DEADLINE, deadline_lane, retry_file, waits_for_capacity
from batchlane.filejob.create import create_job
from batchlane.filejob.figures import figure_folder
from batchlane.filejob.outputs import CONTENT_TYPES
from batchlane.folders import layout
from batchlane.folders.spec import FolderJobSpec
from batchlane.formats.document import media_type
from batchlane.naming import money
from batchlane.observability import logger
from batchlane.ports import FolderBuckets, FolderJobRepository, Services
from batchlane.rows import EndedConversion, FolderFile, FolderJob

# A claimed file whose conversion was not opened after this long lost its turn (the Lambda died): claim it again.
STALLED_START_S = 900.0
# A turn's queued and processing figures are counted up to this many (the loop needs only "none left"; the
# status read model, folder_jobs.counts, has the exact numbers): a turn's reads do not grow with the folder.
LIVE_COUNT_CAP = 10_000


def report_line(f: FolderFile, output_bucket: str) -> dict[str, Any]:
    """One finished file, as report.jsonl and GET .../report carry it (FolderReportLine in docs/api/openapi.yaml)."""
    completed = f.status == "completed"
    return {
        "key": f.source_key,
        "status": f.status,
        "pages": f.pages,
        "pagesFailed": f.pages_failed,
        "error": error_object(f.error_id, f.error_message),
        "lane": f.lane,
        "laneReason": f.lane_reason,
        "costUsd": money(f.cost_usd),
        "attempts": f.attempts,
        "outputKeys": [f.output_key] if completed and f.output_key else [],
        "outputUris": [f"s3://{output_bucket}/{f.output_key}"] if completed and f.output_key else [],
    }


def advance(svc: Services, job_id: str) -> dict[str, Any]:
    """Settle, start, report; ``done`` once nothing is queued or in flight and listing has ended (``queued`` and
    ``processing`` in the answer are counted up to LIVE_COUNT_CAP)."""
    folder_jobs = svc.uow().folder_jobs
    job = folder_jobs.get(job_id)
    if job is None:
        raise NotFound(f"no folder job {job_id}")
    settled = settle_ended(svc, job)
    started = 0
    live = job.status in st.LIVE_FOLDER_JOB_STATUSES
    if live:
        started = start_queued(svc, job)
    else:  # cancelled or error: nothing new starts; what is in flight finishes
        folder_jobs.skip_queued(job_id, error_id="CANCELLED", message="The folder job was cancelled before this file started.")
    write_report_part(folder_jobs, svc.folder_buckets(job.owner_id), job)
    queued, processing = folder_jobs.live_counts(job_id, cap=LIVE_COUNT_CAP)  # not counts(): that reads every file of the folder
    now = folder_jobs.get(job_id)
    listing_over = (now is not None and now.enumeration_done) or not live
    done = listing_over and queued == 0 and processing == 0
    if settled or started:
        logger.info("folder job advanced", job_id=job_id, settled=settled, started=started, processing=processing, queued=queued)
    handover = not done and hand_over_if_due(svc, job)
    return {"done": done, "handover": handover, "processing": processing, "queued": queued}


def hand_over_if_due(svc: Services, job: FolderJob) -> bool:
    """After ``batchlane_folder_turns_per_execution`` turns, start the next run's execution; this one then ends.

    A Standard execution keeps at most 25,000 history events: a job of a million files needs
    many executions, one after another (``folder-<id>-<run>-<created>``), never two at once.
    """
    folder_jobs = svc.uow().folder_jobs
    if folder_jobs.count_turn(job.id) < svc.settings.batchlane_folder_turns_per_execution:
        return False
    following = folder_jobs.next_run(job.id, run=job.run)
    if following is None:
        return False
    svc.workflows.start_folder_job(job.id, f"{following.run}-{int(following.created_at.timestamp())}")
    logger.info("folder job handed over", job_id=job.id, run=following.run)
    return True


def settle_ended(svc: Services, job: FolderJob) -> int:
    """Files whose conversion ended: copy the Markdown to its output key, record pages, cost, lane, error."""
    job_id = job.id
    uow = svc.uow()
    folder_jobs = uow.folder_jobs
    buckets = svc.folder_buckets(job.owner_id)
    max_retries = FolderJobSpec.model_validate(job.spec).policy.max_retries
    settled = 0
    for ended in folder_jobs.ended_conversions(job_id):
        key = ended.source_key
        common: dict[str, Any] = {
            "pages": ended.total_pages,
            "pages_failed": ended.pages_failed,
            "cost_usd": ended.total_cost_usd,
            "lane": "batch" if ended.pages_batch > 0 else "converter" if ended.source_type in BORN_DIGITAL else "on_demand",
            "lane_reason": "born_digital" if ended.source_type in BORN_DIGITAL else ended.lane_reason or ended.pool_reason or lane_rule_reason(svc, job, ended.total_pages),
        }
        if ended.job_status == "completed":
            refused = write_output(svc, buckets, job, ended)
            if refused is not None:
                folder_jobs.finish_file(job_id, key, status="failed", error_id=refused[0], error_message=refused[1], **common)
                continue
            folder_jobs.finish_file(job_id, key, status="completed", **common)
        elif ended.job_status == "failed" and waits_for_capacity(ended.job_error_id, ended.total_pages, uow.budgets.limits_for(job.owner_id, svc.settings)):
            # the live-page cap was full at its split: not its fault; it waits until its pages are free (no re-download each turn)
            folder_jobs.retry_conversion(job_id, key, waits_for_pages=ended.total_pages)
            logger.info("folder file waits for the owner's live-page cap", job_id=job_id, key=key)
        elif ended.job_status == "failed" and retry_file(ended.job_error_id, ended.attempts, max_retries):
            folder_jobs.retry_conversion(job_id, key)
            logger.info("folder file retried", job_id=job_id, key=key, error_id=ended.job_error_id, error=ended.job_error_message, attempts=ended.attempts)
        elif ended.job_status == "failed":
            folder_jobs.finish_file(
                job_id, key, status="failed", error_id=ended.job_error_id or "CONVERSION_FAILED", error_message=ended.job_error_message, **common
            )
        else:
            folder_jobs.finish_file(job_id, key, status="skipped", error_id="CANCELLED", error_message="The file's conversion was cancelled.", **common)
        settled += 1
    return settled


BORN_DIGITAL = frozenset(t.name for t in DOCUMENTS)  # converted with no model call: the report's lane is "converter"


def foreign_output(head: Any, owner_id: str) -> bool:
    """An object another owner's folder job wrote (its ``batchlane-owner`` metadata): never overwritten."""
    return head is not None and head.owner is not None and head.owner != owner_id


def write_output(svc: Services, buckets: Any, job: FolderJob, ended: EndedConversion) -> tuple[str, str] | None:
    """Copy the Markdown to its output key, stamped with the job's owner; (error id, message) when it cannot be."""
    target = (job.output_bucket, ended.output_key or "")
    try:
        if foreign_output(buckets.head(*target), job.owner_id):
            return "OUTPUT_NOT_YOURS", f"{ended.output_key} was written by another owner's folder job: it is never overwritten."
        buckets.copy((svc.store.bucket, ended.markdown_key or ""), target, owner=job.owner_id)
        _copy_beside(svc, buckets, ended, target, owner=job.owner_id)
    except NotFound:
        return "OUTPUT_MISSING", "The Markdown was not found."
    except ObjectUnreadable as exc:
        return exc.error_id, str(exc)
    return None


def file_options(spec: FolderJobSpec) -> dict[str, Any]:
    """A file's conversion options: the spec's, and for priority normal or low the bulk opt-in (its pages
    may wait in the batch pool, however few) and the policy's deadline (it leaves the pool in time)."""
    options = dict(spec.options)
    if spec.policy.priority != "high":
        options["batchLane"] = True
        if spec.policy.deadline is not None:
            options["deadline"] = spec.policy.deadline.isoformat()
    return options


def lane_rule_reason(svc: Services, job: FolderJob, pages: int) -> str:
    """Why the deployment's batch-lane rule sent a file where it went (domain/eligibility.py: large_job, bulk_opt_in, ...)."""
    spec = job.spec
    options = {**(spec.get("options") or {}), **({"batchLane": True} if (spec.get("policy") or {}).get("priority") != "high" else {})}
    settings = svc.settings
    return batch_eligible(options, pages, lane_configured=settings.batch_lane_configured, min_pages=settings.batch_conversion_min_pages)[1]


DEADLINE_MISSED = "deadline_missed"  # a late file of a job without the lane rights: it stays in the batch lane
ON_DEMAND_REASONS = frozenset({"priority_high", DEADLINE})


def file_lane(job: FolderJob, spec: FolderJobSpec, now: datetime, turnaround_h: float, margin_h: float) -> tuple[str | None, dict[str, Any]]:
    """(lane reason, options) of a file starting ``now``, by the lane rights recorded with the job at submit (or its last
    retry), never by who asks now (issue 40.3). Priority high or a deadline the batch turnaround no longer meets send it
    on-demand only with the rights; without them a late file stays in the batch lane and is reported ``deadline_missed``
    (its options lose the deadline, which would send it on-demand from the pool)."""
    options = file_options(spec)
    if spec.policy.priority == "high":
        return ("priority_high", options) if job.priority_allowed else (None, options)
    if deadline_lane(spec.policy.deadline, now, turnaround_h, margin_h) is None:
        return None, options
    if job.priority_allowed:
        return DEADLINE, options
    return DEADLINE_MISSED, {k: v for k, v in options.items() if k != "deadline"}


def start_queued(svc: Services, job: FolderJob) -> int:
    """Claim queued files up to the in-flight cap and open each one's ordinary conversion job."""
    job_id = job.id
    folder_jobs = svc.uow().folder_jobs
    folder_jobs.requeue_stalled_starts(job_id, older_than_s=STALLED_START_S)
    room = min(svc.settings.batchlane_folder_max_in_flight - folder_jobs.count_processing(job_id), _owner_places(svc, job.owner_id))
    claimed = folder_jobs.claim_queued(job_id, room, free_pages=_owner_free_pages(svc, job.owner_id))
    if not claimed:
        return 0
    spec = FolderJobSpec.model_validate(job.spec)
    buckets = svc.folder_buckets(job.owner_id)
    for f in claimed:
        start_file(svc, buckets, job, spec, f)
    return len(claimed)


def _owner_places(svc: Services, owner_id: str) -> int:
    """Conversions the owner may still open under their live-job cap (issue 15): a folder job waits for places,
    it never fails its files on the cap (docs/operations.md, "Budgets, caps and fair sharing")."""
    budgets = svc.uow().budgets
    return max(budgets.limits_for(owner_id, svc.settings).max_live_jobs - budgets.standing(owner_id).live_jobs, 0)


def _owner_free_pages(svc: Services, owner_id: str) -> int:
    """Pages the owner may still open under their live-page cap: a file that waits for that many starts again."""
    budgets = svc.uow().budgets
    return max(budgets.limits_for(owner_id, svc.settings).max_live_pages - budgets.standing(owner_id).live_pages, 0)


def start_file(svc: Services, buckets: Any, job: FolderJob, spec: FolderJobSpec, f: FolderFile) -> None:
    """One claimed file: refused by what is at its output key, failed when its source is gone, else its conversion opened."""
    job_id, key = job.id, f.source_key
    folder_jobs = svc.uow().folder_jobs
    try:
        refused = output_refusal(buckets, job, spec, f)
        source = buckets.head(job.input_bucket, key)
    except ObjectUnreadable as exc:  # this object only (AccessDenied under KMS, a key too long): the rest go on
        folder_jobs.finish_file(job_id, key, status="failed", error_id=exc.error_id, error_message=str(exc))
        return
    if refused is not None:
        status, error_id, message = refused
        folder_jobs.finish_file(job_id, key, status=status, error_id=error_id, error_message=message)
        return
    size = source.size if source is not None else None
    if size is None:
        folder_jobs.finish_file(job_id, key, status="failed", error_id="FILE_MISSING", error_message=f"s3://{job.input_bucket}/{key} does not exist.")
        return
    file_row = folder_jobs.insert_source_file(owner_id=job.owner_id, name=posixpath.basename(key), bucket=job.input_bucket, key=key, size_bytes=size)
    lane_reason, options = file_lane(job, spec, datetime.now(UTC), svc.settings.batch_deadline_hours, svc.settings.batch_deadline_margin_s / 3600)
    try:
        created = create_job(
            svc,
            file_id=file_row.id,
            options=options,
            max_pages=spec.policy.max_pages_per_document,
            on_demand=lane_reason in ON_DEMAND_REASONS,
        )
    except (LimitReached, StoreUnavailable):  # caps full (a race with their other conversions), or a blip: wait for the next turn
        folder_jobs.release(job_id, key)
        return
    except BatchlaneError as exc:  # options the single-file path refuses: this file fails, the rest go on
        folder_jobs.finish_file(job_id, key, status="failed", error_id=exc.error_id, error_message=str(exc))
        return
    except Exception:  # the intake could not start (throttled, a blip): queued again for the next turn
        logger.exception("folder file not started", job_id=job_id, key=key)
        folder_jobs.release(job_id, key)
        return
    folder_jobs.attach_conversion(job_id, key, file_id=file_row.id, conversion_job_id=created.job_id, lane_reason=lane_reason)


def output_refusal(buckets: FolderBuckets, job: FolderJob, spec: FolderJobSpec, f: FolderFile) -> tuple[str, str, str] | None:
    """What lies at THIS file's output key in the job's output bucket means for it (:func:`existing_output`), or None
    to convert it: only that object counts (not the source, not another file's output), and only its owner stamp."""
    if f.output_key is None:
        return None
    existing = buckets.head(job.output_bucket, f.output_key)
    return existing_output(spec, existing, f.output_key, job.owner_id) if existing is not None else None


def existing_output(spec: FolderJobSpec, existing: Any, output_key: str, owner_id: str) -> tuple[str, str, str] | None:
    """What an output already there means: (status, error id, message), or None to convert and write it.

    ``skip`` trusts only an output this owner's jobs wrote (ALREADY_CONVERTED); ``replace`` overwrites
    anything but another owner's output; neither ever takes or overwrites another owner's."""
    if foreign_output(existing, owner_id):
        return "failed", "OUTPUT_NOT_YOURS", f"{output_key} was written by another owner's folder job: it is neither trusted nor overwritten."
    if spec.output.on_existing == "replace":
        return None
    if existing.owner == owner_id:
        return "skipped", "ALREADY_CONVERTED", f"{output_key} exists (output.onExisting: skip)."
    return "failed", "OUTPUT_EXISTS", f"{output_key} exists and was not written by your folder jobs: remove it, or use output.onExisting: replace."


def write_report_part(folder_jobs: FolderJobRepository, buckets: FolderBuckets, job: FolderJob) -> int:
    """Files finished since the last turn → ``_batchlane/<id>/report/part-N.jsonl`` (the durable record as it grows)."""
    rows = folder_jobs.unreported(job.id)
    if not rows:
        return 0
    body = "".join(json.dumps(report_line(r, job.output_bucket), sort_keys=True) + "\n" for r in rows).encode()
    part = folder_jobs.next_report_part(job.id)
    key = layout.report_part_key(job.output_prefix, job.id, part)
    buckets.put_bytes(job.output_bucket, key, body, "application/x-ndjson", owner=job.owner_id)
    folder_jobs.mark_reported(job.id, [r.source_key for r in rows])
    return len(rows)


def _copy_beside(svc: Services, buckets: Any, ended: EndedConversion, target: tuple[str, str], *, owner: str) -> None:
    """pages.jsonl and the figures beside the file's Markdown (book.pages.jsonl, book.images/p12-1.png)."""
    job_dir = posixpath.dirname(ended.markdown_key or "")
    stem = target[1][:-3] if target[1].endswith(".md") else target[1]
    try:
        buckets.copy((svc.store.bucket, f"{job_dir}/pages.jsonl"), (target[0], f"{stem}.pages.jsonl"), owner=owner, content_type="application/x-ndjson")
    except NotFound:
        logger.info("no per-page record to copy", markdown_key=ended.markdown_key)  # assembled before it existed
    for fmt, name in keys.RENDERING_NAMES.items():  # conversionFormats: book.converted.docx, .converted.html, .blocks.jsonl
        suffix = ".blocks.jsonl" if fmt == "json" else f".converted.{fmt}"
        try:
            buckets.copy((svc.store.bucket, f"{job_dir}/{name}"), (target[0], f"{stem}{suffix}"), owner=owner, content_type=CONTENT_TYPES[fmt])
        except NotFound:
            continue  # not asked for, or not produced (outputs.json says why)
    folder = posixpath.join(posixpath.dirname(target[1]), figure_folder(posixpath.basename(ended.source_key)))
    for key in svc.store.list_keys(f"{job_dir}/images/"):
        buckets.copy((svc.store.bucket, key), (target[0], f"{folder}/{posixpath.basename(key)}"), owner=owner, content_type=media_type(key))
