"""Folder jobs and their files, as stored (ports.folder_jobs.FolderJobRepository)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any


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
    # for on-demand (priority high, opt-outs, a deadline the turnaround no longer meets). Issue 40.3, decision 0036.
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
    source_type: str = "pdf"  # what the file was (domain/file_types.py): a born-digital one's lane is the converter


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
