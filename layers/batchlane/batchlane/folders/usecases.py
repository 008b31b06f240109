"""What the API (and the CLI through it) does with folder jobs: submit, watch, list files, retry, cancel, report.

Every use case takes the caller's owner id and answers NOT_FOUND for a job of somebody else.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import Any

from batchlane.domain import status as st
from batchlane.domain.advice import error_object
from batchlane.domain.caps import check_cap
from batchlane.domain.eligibility import lane_opt_outs
from batchlane.domain.errors import Conflict, Forbidden, InputError, NotFound
from batchlane.domain.folder_policy import check_deadline, deadline_opt_outs, parse_deadline
from batchlane.filejob.retry import failed_pages
from batchlane.folders import layout
from batchlane.folders.finish import redacted_spec, report_lines
from batchlane.folders.notify import publish_folder_change
from batchlane.folders.spec import FolderJobSpec, NotificationsSpec, check_allowed, check_folder_job_id, folder_job_id, granted_prefixes, parse_spec
from batchlane.naming import api_case, money
from batchlane.observability import logger
from batchlane.operations.cancel import cancel_job
from batchlane.ports import Services
from batchlane.rows import FolderCounts, FolderFile, FolderJob
from batchlane.webhooks import subscription

FOLDER_EVENTS = ("job.completed",)
FILE_STATUSES = tuple(s.value for s in st.FolderFileStatus)
TERMINAL = ("completed", "completed_with_failures", "cancelled", "error")
# ETA only once the numbers mean something: listing complete and this many pages converted.
ETA_MIN_PAGES = 10
MAX_KEY_CHARS = 1024  # an S3 key's limit, in bytes


def prepare(svc: Services, body: Any, *, owner_id: str, groups: Iterable[str] = ()) -> FolderJobSpec:
    """Validate the spec and the folders it names against the caller's grants (FOLDER_NOT_ALLOWED before anything is listed)."""
    spec = parse_spec(body)
    check_deadline(spec.policy.deadline, datetime.now(UTC))
    check_allowed(spec, svc.settings.folder_sources, owner_id=owner_id, groups=groups)
    if spec.notifications is not None:
        spec.notifications = check_notifications(spec.notifications, allow_private=svc.settings.batchlane_webhook_allow_private)
    model = spec.options.get("modelId")
    allowed = svc.settings.allowed_model_ids
    if model is not None and model not in allowed:  # as for a single file: IAM grants these models only
        raise InputError(f"Model {model} is not enabled in this deployment; use one of: {', '.join(allowed)}.", error_id="MODEL_NOT_ALLOWED")
    return spec


def check_notifications(notes: NotificationsSpec, *, allow_private: bool) -> NotificationsSpec:
    """CALLBACK_INVALID as for a single file; a folder job's own events are its end (``job.completed``),
    each file's conversion keeps the single-file ``callback*`` options."""
    checked = subscription.validate_options(notes.as_options(), allow_private=allow_private)
    events = list(checked["callbackEvents"])
    unknown = sorted(set(events) - set(FOLDER_EVENTS))
    if unknown:
        raise subscription.CallbackInvalid(f"notifications.callback_events: a folder job sends {', '.join(FOLDER_EVENTS)}, not {', '.join(unknown)}.")
    return NotificationsSpec(callback_url=checked["callbackUrl"], callback_events=events, callback_headers=checked["callbackHeaders"])


def lane_opt_outs_of(svc: Services, spec: FolderJobSpec) -> list[str]:
    """What in the spec leaves the half-price batch lane, needing the priority permission: priority high, the lane
    opt-out options, a deadline sooner than the batch turnaround (now)."""
    settings = svc.settings
    short = deadline_opt_outs(
        {"policy.deadline": spec.policy.deadline, "options.deadline": parse_deadline(spec.options.get("deadline"))},
        datetime.now(UTC),
        settings.batch_deadline_hours,
        settings.batch_deadline_margin_s / 3600,
    )
    return (["policy.priority high"] if spec.policy.priority == "high" else []) + lane_opt_outs(spec.options) + short


def check_lane_rights(svc: Services, spec: FolderJobSpec, *, priority_group: str | None) -> bool:
    """The lane rights of a run of the job, from the caller's groups now (issue 40.3): True when its files may leave the
    batch lane. ``priority_group``: the group the caller lacks (None: a member, or no group configured). A spec that
    needs the rights without them answers 403, as for a single file."""
    if priority_group is None:
        return True
    needs = lane_opt_outs_of(svc, spec)
    if needs:
        raise Forbidden(
            f"priority high, lane opt-out options or a deadline sooner than the batch lane's {svc.settings.batch_deadline_hours:g} h turnaround "
            f"({', '.join(needs)}) skip the half-price batch lane; that needs membership of the {priority_group} group."
        )
    return False


def submit(svc: Services, owner_id: str, body: Any, *, priority_group: str | None = None, groups: Iterable[str] = ()) -> tuple[dict[str, Any], bool]:
    """(status, created). The same spec again answers the existing job; with ``skip`` a cancelled one resumes.

    ``priority_group``: the group the caller lacks; then ``priority: high`` or options that keep files
    out of the batch lane answer 403, as for a single file (docs/operations.md, budgets). The lane rights the caller's
    groups give are recorded with the job: every file of this run starts by them (folders/advance.start_file)."""
    spec = prepare(svc, body, owner_id=owner_id, groups=groups)
    settings = svc.settings
    priority_allowed = check_lane_rights(svc, spec, priority_group=priority_group)
    job_id = folder_job_id(spec, owner_id)
    folder_jobs = svc.uow().folder_jobs
    if folder_jobs.get(job_id) is None:  # a new job (the same spec again answers the existing one)
        check_cap(
            what="folder jobs running",
            count=svc.uow().caps.live_folder_jobs(owner_id),
            limit=settings.batchlane_max_live_folder_jobs,
            setting="BATCHLANE_MAX_LIVE_FOLDER_JOBS",
            error_id="FOLDER_JOBS_LIMIT",
            wait="Wait for one to finish or cancel one",
        )
    source, target = spec.input_uri, spec.output_uri
    row = folder_jobs.add(
        job_id=job_id,
        owner_id=owner_id,
        name=spec.name,
        spec=spec.model_dump(mode="json"),
        source=(source.bucket, source.key),
        target=(target.bucket, target.key),
        priority_allowed=priority_allowed,
    )
    if row is not None:
        svc.workflows.start_folder_job(job_id, _run_name(row))
        logger.info("folder job submitted", job_id=job_id, folder=str(source), layout=spec.output.layout, priority_allowed=priority_allowed)
        return status(svc, owner_id, job_id), True
    existing = owned(svc, owner_id, job_id)
    if existing.status == "cancelled" and spec.output.on_existing == "skip":
        resume(svc, existing, statuses=("skipped",), error_ids=["CANCELLED"], priority_allowed=priority_allowed)
    elif existing.status == "error":  # it could not run (an empty folder): the same spec again lists the folder afresh
        relist(svc, existing, priority_allowed=priority_allowed)
    return status(svc, owner_id, job_id), False


def relist(svc: Services, job: FolderJob, *, priority_allowed: bool) -> None:
    """Run a job that could not run (FOLDER_EMPTY, FOLDER_NO_PDF, a listing refused) again, from its listing, with the
    lane rights decided for it."""
    again = svc.uow().folder_jobs.relist(job.id, priority_allowed=priority_allowed)
    if again is None:  # another request relisted it first
        return
    publish_folder_change(svc.uow().folder_jobs, svc.bus, again)
    svc.workflows.start_folder_job(job.id, _run_name(again))
    logger.info("folder job listed again", job_id=job.id, run=again.run, was=job.error_id, priority_allowed=priority_allowed)


def resume(svc: Services, job: FolderJob, *, statuses: tuple[str, ...], error_ids: list[str] | None, priority_allowed: bool) -> int:
    """Requeue what is asked for and start the job's next run (folder-<id>-<run>), with the lane rights decided for it."""
    job_id = job.id
    with svc.uow() as uow:
        reopened = uow.folder_jobs.reopen(job_id, priority_allowed=priority_allowed)
        if reopened is None:
            raise Conflict(f"The folder job is {job.status} and still finishing; try again when it has ended.", error_id="FOLDER_JOB_RUNNING")
        requeued = uow.folder_jobs.requeue(job_id, statuses=statuses, error_ids=error_ids)
    publish_folder_change(svc.uow().folder_jobs, svc.bus, reopened)
    svc.workflows.start_folder_job(job_id, _run_name(reopened))
    logger.info("folder job resumed", job_id=job_id, run=reopened.run, requeued=requeued)
    return requeued


def retry(svc: Services, owner_id: str, job_id: str, *, error_ids: list[str] | None = None, priority_group: str | None = None) -> dict[str, Any]:
    """Once terminal: requeue failed files (all, or those with ``error_ids``); what succeeded is never converted again.
    A job that could not run (error: an empty folder) lists its folder again instead. The lane rights are decided again
    from the caller's groups now (``priority_group``: the group they lack): a spec that needs them answers 403 without
    them; a deadline the turnaround no longer meets keeps the files in the batch lane."""
    job = owned(svc, owner_id, job_id)
    spec = FolderJobSpec.model_validate(job.spec)
    if job.status == "error":
        relist(svc, job, priority_allowed=check_lane_rights(svc, _without_past_deadline(spec), priority_group=priority_group))
        return {**status(svc, owner_id, job_id), "requeued": 0}
    if job.status not in TERMINAL:
        raise Conflict(f"The folder job is still {job.status}; retry it once it has finished.", error_id="FOLDER_JOB_RUNNING")
    failed = svc.uow().folder_jobs.list_files(job_id, status="failed", limit=1)
    if not failed:
        raise Conflict("No file failed: there is nothing to retry.", error_id="NOTHING_TO_RETRY")
    allowed = check_lane_rights(svc, _without_past_deadline(spec), priority_group=priority_group)
    requeued = resume(svc, job, statuses=("failed",), error_ids=error_ids, priority_allowed=allowed)
    return {**status(svc, owner_id, job_id), "requeued": requeued}


def _without_past_deadline(spec: FolderJobSpec) -> FolderJobSpec:
    """The spec as a retry's permission check reads it: a deadline is the submit's (checked then); only priority high
    and the lane opt-outs need the group again. A late retried file then stays in the batch lane (deadline missed)."""
    options = {k: v for k, v in spec.options.items() if k != "deadline"}
    return spec.model_copy(update={"policy": spec.policy.model_copy(update={"deadline": None}), "options": options})


def cancel(svc: Services, owner_id: str, job_id: str) -> dict[str, Any]:
    """Queued files are skipped at the loop's next turn; documents in flight finish; the report still lands."""
    job = owned(svc, owner_id, job_id)
    if job.status not in st.LIVE_FOLDER_JOB_STATUSES:
        raise Conflict(f"The folder job is {job.status}; there is nothing to cancel.", error_id="NOT_CANCELLABLE")
    folder_jobs = svc.uow().folder_jobs
    folder_jobs.move(job_id, st.folder_job("cancel"), ended=False)
    folder_jobs.skip_queued(job_id, error_id="CANCELLED", message="The folder job was cancelled before this file started.")
    parked = stop_parked(svc, job_id)
    logger.info("folder job cancelled", job_id=job_id, parked_cancelled=parked)
    return status(svc, owner_id, job_id)


def stop_parked(svc: Services, job_id: str) -> int:
    """Files parked for the batch lane would wait hours: cancel their conversions (the Bedrock job is
    stopped and what it produced billed once, as a single file's cancel does); converting ones finish."""
    parked = svc.uow().folder_jobs.parked_conversions(job_id)
    for conversion_id in parked:
        try:
            cancel_job(svc, conversion_id)
        except Conflict:  # it left the lane meanwhile (assembling): it finishes
            continue
    return len(parked)


def grants(svc: Services, owner_id: str, *, groups: Iterable[str] = ()) -> dict[str, Any]:
    """The folders this caller may use (input and output), as ``s3://bucket/prefix``: what the console and an error offer."""
    return {"folders": [f"s3://{bucket}/{prefix}" for bucket, prefix in granted_prefixes(svc.settings.folder_sources, owner_id, groups)]}


def list_jobs(svc: Services, owner_id: str, *, limit: int = 50) -> dict[str, Any]:
    """The owner's folder jobs, newest first, each as :func:`status` answers it (a lost fj-… id is found here)."""
    return {"folderJobs": [status(svc, owner_id, job_id) for job_id in svc.uow().folder_jobs.owner_job_ids(owner_id, limit=limit)]}


def status(svc: Services, owner_id: str, job_id: str) -> dict[str, Any]:
    job = owned(svc, owner_id, job_id)
    counts = svc.uow().folder_jobs.counts(job_id)
    out_prefix = f"s3://{job.output_bucket}/"
    throughput, eta = pace(job, counts)
    return {
        "id": job_id,
        "name": job.name,
        "status": job.status,
        "error": error_object(job.error_id, job.error_message),
        "files": {
            "discovered": counts.discovered,
            "excluded": job.excluded_count,
            **{k: getattr(counts, k) for k in ("queued", "processing", "completed", "failed", "skipped")},
        },
        "pages": {"completed": counts.pages_completed, "failed": counts.pages_failed},
        "enumerationComplete": job.enumeration_done,
        "throughputPagesPerMinute": throughput,
        "etaSeconds": eta,
        "costUsd": money(counts.cost_usd),
        "outputUri": out_prefix + job.output_prefix,
        "manifestUri": out_prefix + layout.manifest_key(job.output_prefix, job_id),
        "reportUri": out_prefix + layout.report_key(job.output_prefix, job_id),
        "createdAt": job.created_at.isoformat(),
        "finishedAt": job.finished_at.isoformat() if job.finished_at else None,
        "spec": api_case(redacted_spec(job.spec)),  # stored by field name, answered camelCase; header values never shown back
    }


def pace(job: FolderJob, counts: FolderCounts) -> tuple[float | None, int | None]:
    """Pages a minute since the job started; ETA from the pages per finished file and the files left."""
    end = job.finished_at or datetime.now(UTC)
    minutes = max((end - job.created_at).total_seconds() / 60, 1e-6)
    done_pages = counts.pages_completed + counts.pages_failed
    throughput = round(done_pages / minutes, 2) if done_pages else None
    finished = counts.completed + counts.failed
    left = counts.queued + counts.processing
    if job.finished_at is not None or not job.enumeration_done or done_pages < ETA_MIN_PAGES or not throughput or not finished:
        return throughput, (0 if job.finished_at is not None else None)
    pages_left = left * done_pages / finished
    return throughput, round(pages_left / throughput * 60)


def files(svc: Services, owner_id: str, job_id: str, *, status_filter: str | None = None, after: str | None = None, limit: int = 1000) -> dict[str, Any]:
    job = owned(svc, owner_id, job_id)
    if status_filter is not None and status_filter not in FILE_STATUSES:
        raise InputError(f"status must be one of {', '.join(FILE_STATUSES)}.", error_id="STATUS_INVALID")
    if after is not None and (len(after) > MAX_KEY_CHARS or any(ord(c) < 32 or ord(c) == 127 for c in after)):
        raise InputError(f"after must be an object key (at most {MAX_KEY_CHARS} characters, no control characters).", error_id="BAD_REQUEST")
    rows = svc.uow().folder_jobs.list_files(job_id, status=status_filter, after=after, limit=limit)
    items = [
        {
            "key": f.source_key,
            "status": f.status,
            "pages": f.pages,
            "pagesFailed": f.pages_failed,
            "attempts": f.attempts,
            "error": error_object(f.error_id, f.error_message),
            "outputUris": [f"s3://{job.output_bucket}/{f.output_key}"] if f.status == "completed" and f.output_key else [],
            "conversionJobId": f.conversion_job_id,
            "failedPages": _failed_pages(svc, f),
        }
        for f in rows
    ]
    return {"files": items, "next": rows[-1].source_key if len(rows) == limit else None}


def _failed_pages(svc: Services, f: FolderFile) -> list[int]:
    """A completed document with failed pages lists them (marked in its Markdown; retry them with the job's retry)."""
    if f.status != "completed" or not f.pages_failed or not f.conversion_job_id:
        return []
    return sorted(p.page for p in failed_pages(svc, f.conversion_job_id))


def report(svc: Services, owner_id: str, job_id: str) -> Iterator[str]:
    """The report.jsonl lines as they stand now (the same bytes the bucket gets at the end)."""
    return report_lines(svc.uow().folder_jobs, owned(svc, owner_id, job_id))


def report_page(svc: Services, owner_id: str, job_id: str, *, after: str | None, limit: int) -> tuple[list[str], str | None]:
    """Up to ``limit`` report lines past the source key ``after`` and the key to ask after next (None: the end):
    the API answers a page at a time, never the whole report in memory (issue 21.2)."""
    job = owned(svc, owner_id, job_id)
    lines = list(itertools.islice(report_lines(svc.uow().folder_jobs, job, after=after, page=limit + 1), limit + 1))
    if len(lines) <= limit:
        return lines, None
    lines = lines[:limit]
    return lines, str(json.loads(lines[-1])["key"])


def _run_name(job: FolderJob) -> str:
    """``<run>-<row created, epoch s>``: a new row (the database was lost) never meets an earlier execution's name
    (folders/advance.hand_over_if_due names the next run the same way)."""
    return f"{job.run}-{int(job.created_at.timestamp())}"


def owned(svc: Services, owner_id: str, job_id: str) -> FolderJob:
    """The caller's folder job; 400 for an id that cannot be one, 404 for somebody else's."""
    job = svc.uow().folder_jobs.get(check_folder_job_id(job_id))
    if job is None or job.owner_id != owner_id:
        raise NotFound(f"no folder job {job_id}")
    return job
