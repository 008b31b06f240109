"""Enumeration: a few ListObjectsV2 pages per run, from the checkpointed continuation token.

Each page's files are inserted (ON CONFLICT DO NOTHING: a page listed twice after a retry adds
nothing) and the next token saved in the same transaction, so no run holds more than one page
and a million-object folder is listed by many short runs of ``folder_enumerate``. Files start
converting as they are found: the folder loop's next step starts them within the in-flight cap.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from batchlane.config import Settings
from batchlane.domain import file_types
from batchlane.domain import status as st
from batchlane.domain.errors import InputError, NotFound, ObjectUnreadable
from batchlane.folders import layout
from batchlane.folders.notify import publish_folder_change
from batchlane.folders.spec import FolderJobSpec
from batchlane.observability import logger
from batchlane.ports import EventBus, FolderBuckets, FolderJobRepository, ListedPage, UnitOfWork
from batchlane.rows import FolderJob, NewFolderFile


@dataclass(frozen=True)
class Classified:
    files: list[NewFolderFile]
    excluded: int


def classify(spec: FolderJobSpec, job_id: str, objects: list[tuple[str, int]], *, done_sources: set[str]) -> Classified:
    """What a listed page means for the job: files to convert (or failed/skipped with an id) and excluded ones.

    Our own outputs (``.md``, ``_batchlane/``) are never inputs; folder markers are ignored;
    a matched file of a type batchlane does not convert fails FILE_TYPE_UNSUPPORTED (listed, never dropped);
    a file an earlier report says was converted is skipped.
    """
    in_prefix = spec.input_uri.key
    out_prefix = spec.output_uri.key
    explicit = spec.input.files is not None
    selected: list[tuple[str, int]] = []
    excluded = 0
    for key, size in objects:
        if key.endswith("/") or layout.is_own_output(key):
            continue
        if not explicit and not layout.matches(layout.relative_key(key, in_prefix), spec.input.include, spec.input.exclude):
            excluded += 1
            continue
        selected.append((key, size))
    inputs = {key for key, _ in selected}  # an output may never land on one of these
    files: list[NewFolderFile] = []
    for key, size in selected:
        out = layout.output_key(key, input_prefix=in_prefix, output_prefix=out_prefix, layout=spec.output.layout, is_input=inputs.__contains__)
        if not layout.is_supported_name(key):
            files.append(NewFolderFile(key, size, out, "failed", file_types.UNSUPPORTED, file_types.unsupported_message(key)))
        elif key in done_sources and spec.output.on_existing == "skip":
            files.append(NewFolderFile(key, size, out, "skipped", "ALREADY_CONVERTED", "An earlier run's report says this file was converted."))
        else:
            files.append(NewFolderFile(key, size, out))
    return Classified(files, excluded)


def mark_collisions(folder_jobs: FolderJobRepository, job_id: str, files: list[NewFolderFile]) -> list[NewFolderFile]:
    """Two sources, one output key (``flat``): the later one fails OUTPUT_COLLISION, the first keeps it."""
    taken = folder_jobs.taken_outputs(job_id, [f.output_key for f in files if f.output_key])
    seen: dict[str, str] = {}
    out = []
    for f in files:
        owner = taken.get(f.output_key or "") or seen.get(f.output_key or "")
        if f.output_key and owner and owner != f.source_key:
            message = f"Its output {f.output_key} is already {owner}'s; rename one of them or use the mirror layout."
            out.append(NewFolderFile(f.source_key, f.size_bytes, f.output_key, "failed", "OUTPUT_COLLISION", message))
            continue
        if f.output_key:
            seen.setdefault(f.output_key, f.source_key)
        out.append(f)
    return out


def earlier_report_sources(buckets: FolderBuckets, bucket: str, output_prefix: str, job_id: str, *, owner_id: str) -> set[str]:
    """Keys an earlier run of this job reported completed (report.jsonl and its parts): the resume after a lost database.
    Only reports this owner's jobs wrote count (``batchlane-owner``): a forged one would skip the owner's files."""
    done: set[str] = set()
    prefix = layout.record_prefix(output_prefix, job_id)
    for key in [layout.report_key(output_prefix, job_id), *buckets.list_keys(bucket, prefix + "report/")]:
        try:
            head = buckets.head(bucket, key)
        except ObjectUnreadable:
            continue
        if head is None or head.owner != owner_id:
            continue
        try:
            for line in buckets.iter_lines(bucket, key):
                if line.strip():
                    entry = json.loads(line)
                    if entry.get("status") == "completed":
                        done.add(entry["key"])
        except NotFound:
            continue
    return done


def enumerate_step(
    uow: UnitOfWork, buckets_for: Callable[[str], FolderBuckets], bus: EventBus, settings: Settings, job_id: str, *, pages: int | None = None
) -> dict[str, object]:
    """List up to ``pages`` pages from the checkpoint; returns whether enumeration is complete.
    ``buckets_for(owner)`` is the owner-scoped bucket port (runtime.Services.folder_buckets)."""
    job = uow.folder_jobs.get(job_id)
    if job is None:
        raise NotFound(f"no folder job {job_id}")
    if job.enumeration_done or job.status not in st.LIVE_FOLDER_JOB_STATUSES:
        return {"enumerationDone": True}
    spec = FolderJobSpec.model_validate(job.spec)
    buckets = buckets_for(job.owner_id)
    done_sources = (
        earlier_report_sources(buckets, job.output_bucket, job.output_prefix, job_id, owner_id=job.owner_id) if spec.output.on_existing == "skip" else set()
    )
    token = job.continuation_token
    for _ in range(pages or settings.batchlane_folder_list_pages_per_step):
        try:
            page = _next_page(buckets, spec, job, token, settings.batchlane_folder_list_page_size)
        except InputError as exc:
            publish_folder_change(uow.folder_jobs, bus, uow.folder_jobs.move(job_id, st.folder_job("fail"), error_id=exc.error_id, error_message=str(exc)))
            logger.warning("folder job cannot list", job_id=job_id, error_id=exc.error_id)
            return {"enumerationDone": True}
        found = classify(spec, job_id, page.objects, done_sources=done_sources)
        with uow:  # the page's files and the next token together: a retry re-lists at most this page
            added = uow.folder_jobs.add_files(job_id, mark_collisions(uow.folder_jobs, job_id, found.files))
            uow.folder_jobs.save_checkpoint(job_id, token=page.next_token, listed=len(page.objects), excluded=found.excluded, done=page.next_token is None)
        logger.info("folder page listed", job_id=job_id, objects=len(page.objects), added=added, excluded=found.excluded)
        token = page.next_token
        if token is None:
            return _enumeration_complete(uow.folder_jobs, bus, job_id)
    return {"enumerationDone": False}


def _next_page(buckets: FolderBuckets, spec: FolderJobSpec, job: FolderJob, token: str | None, page_size: int) -> ListedPage:
    if spec.input.files is not None:
        return _files_page(buckets, spec, token, page_size)
    return buckets.list_page(job.input_bucket, job.input_prefix, token=token, recursive=spec.input.recursive, max_keys=page_size)


def _files_page(buckets: FolderBuckets, spec: FolderJobSpec, token: str | None, page_size: int) -> ListedPage:
    """An explicit list is "listed" in pages of its own (the token is an index); a missing object is a file-level error later."""
    files = spec.input.files or []
    start = int(token or 0)
    chosen = files[start : start + page_size]
    objects = [(uri.split("/", 3)[3], 0) for uri in chosen]
    following = start + page_size
    return ListedPage(objects, str(following) if following < len(files) else None)


def _enumeration_complete(folder_jobs: FolderJobRepository, bus: EventBus, job_id: str) -> dict[str, object]:
    """An empty folder, or one with nothing to convert, is the job's own error (FOLDER_EMPTY / FOLDER_NO_PDF)."""
    job = folder_jobs.get(job_id)
    assert job is not None
    if folder_jobs.counts(job_id).discovered == 0:
        if job.objects_listed == 0:
            error_id, message = "FOLDER_EMPTY", "The folder holds no objects."
        else:
            error_id, message = "FOLDER_NO_PDF", f"None of the folder's {job.objects_listed} objects is a file the include/exclude globs select."
        publish_folder_change(folder_jobs, bus, folder_jobs.move(job_id, st.folder_job("fail"), error_id=error_id, error_message=message))
        logger.info("folder job has nothing to convert", job_id=job_id, error_id=error_id)
    else:
        publish_folder_change(folder_jobs, bus, folder_jobs.move(job_id, st.folder_job("enumerated")))
    return {"enumerationDone": True}
