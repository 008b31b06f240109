"""A dry run for one uploaded file: what a conversion would do and cost, with nothing created or billed.

How it stays within the API's 29 s, and the estimates' basis: docs/module-notes.md "batchlane.filejob.dryrun".
"""

from __future__ import annotations

import io
import math
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from batchlane.domain import file_types as ft
from batchlane.domain.eligibility import batch_eligible
from batchlane.domain.errors import InputError
from batchlane.filejob import describe, page_form_choice
from batchlane.filejob.create import normalise_options
from batchlane.filejob.estimate import PageCounts, dry_run_money
from batchlane.formats import detect as formats
from batchlane.formats.pictures_to_describe import CountedPicture, count_pictures
from batchlane.pdf.split import open_pdf_file
from batchlane.pdf.survey import PageTreeUnreadable, count_pages, survey_pdf
from batchlane.ports import ObjectStore, Services

SECONDS_PER_REQUEST = 30.0
# An upload over batchlane_dry_run_survey_mb has only its page tree read, by ranged GETs of 16 KB blocks:
# at most this many bytes within this many seconds (a 300-page file's tree: ~20 KB), else its pages are a range.
DRY_RUN_RANGED_BYTES = 4 * 1024 * 1024
DRY_RUN_RANGED_SECONDS = 5.0
RANGED_BLOCK = 16 * 1024  # pdfium reads ~40 spots of 512 bytes for a 1,500-page tree: 7 blocks


class RangedUpload(io.RawIOBase):
    """A seekable read-only view of a stored upload, fetched in blocks by ranged GETs as pdfium asks for them,
    bounded in bytes and time: past either, reads come back short (pdfium then gives up) and ``stopped`` says why."""

    def __init__(self, store: ObjectStore, key: str, size: int, *, max_bytes: int, seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self._store, self._key, self._size, self._max_bytes, self._clock = store, key, size, max_bytes, clock
        self._deadline = clock() + seconds
        self._blocks: dict[int, bytes] = {}
        self._pos = 0
        self.fetched = 0
        self.stopped: str | None = None

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def _block(self, index: int) -> bytes:
        if index not in self._blocks:
            if self.fetched + RANGED_BLOCK > self._max_bytes:
                self.stopped = f"more than {self._max_bytes // 1024} KB of it needed"
            elif self._clock() > self._deadline:
                self.stopped = "out of time"
            if self.stopped:
                return b""  # a short read: pdfium gives up on the document (PdfiumError), ``stopped`` says why
            self._blocks[index] = self._store.read_range(self._key, index * RANGED_BLOCK, RANGED_BLOCK)
            self.fetched += len(self._blocks[index])
        return self._blocks[index]

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        done = 0
        while done < len(view) and self._pos < self._size:
            block = self._block(self._pos // RANGED_BLOCK)
            start = self._pos % RANGED_BLOCK
            part = block[start : start + len(view) - done]
            if not part:
                break
            view[done : done + len(part)] = part
            done += len(part)
            self._pos += len(part)
        return done


def dry_run(svc: Services, file_row: dict[str, Any], options: dict[str, Any] | None, *, scratch_dir: str | None = None) -> dict[str, Any]:
    """What converting ``file_row`` with ``options`` would do; raises InputError as convert would refuse."""
    settings = svc.settings
    options = normalise_options(options)
    model_id = str(options.get("modelId") or settings.batchlane_model_id)
    if model_id not in settings.batchlane_prices:
        raise InputError(f"Model {model_id} has no price configured.", error_id="MODEL_UNKNOWN")
    size = svc.store.size(file_row["s3_key"])
    if size > settings.batchlane_max_file_mb * 1024 * 1024:
        raise InputError(f"The file is {size // (1024 * 1024)} MB; the limit is {settings.batchlane_max_file_mb} MB.", error_id="PDF_TOO_LARGE")
    if size > settings.batchlane_dry_run_survey_mb * 1024 * 1024:
        claimed = ft.sniff(svc.store.read_range(file_row["s3_key"], 0, 4096), file_row["name"]) or ft.by_extension(file_row["name"])
        if claimed is not None and claimed.kind == ft.DOCUMENT:
            return document_dry_run(svc, file_row, options, model_id=model_id, size=size, file_type=claimed, pages=None, pictures=None)
        return _page_tree_dry_run(svc, file_row, options, model_id=model_id, size=size)
    with tempfile.TemporaryDirectory(prefix="dryrun-", dir=scratch_dir) as tmp:
        path = Path(tmp) / "upload.pdf"
        svc.store.download_to(file_row["s3_key"], path, max_bytes=settings.batchlane_dry_run_survey_mb * 1024 * 1024)
        found = formats.identify(path, file_row["name"])  # the split's own rule: a picture is pages, a document costs $0
        if isinstance(found, tuple):
            raise InputError(found[1], error_id=found[0])
        if found.kind == ft.DOCUMENT:
            pictures = count_pictures(path, found.name) if options.get(describe.OPTION) else None  # bounded: formats/pictures_to_describe.py
            return document_dry_run(
                svc, file_row, options, model_id=model_id, size=size, file_type=found, pages=cheap_page_count(path, found), pictures=pictures
            )
        if found.is_image:
            wrapped = Path(tmp) / "pages.pdf"
            wrapped.write_bytes(formats.wrap_image(path, max_pages=settings.batchlane_max_pages))
            path = wrapped
        with path.open("rb") as stream:  # the same refusals (and page limit) as the split of a real conversion
            open_pdf_file(stream, max_pages=settings.batchlane_max_pages)
        survey = survey_pdf(path, max_pages=settings.batchlane_max_pages)  # bounded: pdf/survey.SURVEY_BOUND
    records = survey.pages - survey.blank
    eligible, why = batch_eligible(options, survey.pages, lane_configured=settings.batch_lane_configured, min_pages=settings.batch_conversion_min_pages)
    per_request = max(1, min(settings.batchlane_pages_per_request, settings.batchlane_max_documents_per_request))
    requests = math.ceil(records / per_request) if records else 0
    on_demand_s = _on_demand_seconds(requests, settings)
    batch_hours = settings.batch_conversion_timeout_hours
    counts = PageCounts(survey.pages, survey.blank, survey.scans, survey.text_chars_nonblank)
    config = page_form_choice.converter_config(svc.uow().page_forms, settings, options)
    chunks = math.ceil(survey.pages / max(settings.batchlane_pages_per_chunk, 1))
    money = dry_run_money(
        svc, counts, config=config, eligible=eligible, why=why, chunks=chunks, owner_id=file_row.get("owner_id"), deadline=options.get("deadline")
    )
    return {
        "dryRun": True,
        "fileId": str(file_row["id"]),
        "name": file_row["name"],
        "sizeBytes": size,
        "modelId": model_id,
        "options": options,
        "pages": {"total": survey.pages, "blank": survey.blank, "scans": survey.scans},
        "inspection": {
            "method": "all_pages" if survey.inspected == survey.pages else "sampled",
            "pagesInspected": survey.inspected,
            "note": None if survey.inspected == survey.pages else f"blank pages and text estimated from a sample of {survey.inspected} pages",
        },
        "records": records,
        "lane": {
            "name": money["lane"] if money["lane"] != "depends" else "batch",
            "reason": why,
            "minPages": settings.batch_conversion_min_pages,
            "condition": money["condition"],
        },
        "estimate": money,
        "turnaround": {
            "onDemandSeconds": round(on_demand_s),
            "onDemandBasis": (
                f"{requests} requests at {settings.batchlane_ondemand_rpm:g} a minute"
                if settings.batchlane_ondemand_rpm
                else f"{requests} requests, {max(settings.batchlane_global_concurrency, 1)} at a time, ~{SECONDS_PER_REQUEST:g} s each"
            ),
            "batchUpToHours": batch_hours if eligible else None,
            "batchBasis": f"a Bedrock batch job ends by its timeout ({batch_hours} h), usually sooner; then the pages it missed go on-demand"
            if eligible
            else None,
            "expected": f"up to {batch_hours} h (batch lane)" if eligible else f"about {_human(on_demand_s)} (on-demand)",
        },
        "created": False,
    }


def cheap_page_count(path: Path, file_type: ft.FileType) -> int | None:
    """Slides or sheets from the container's directory and workbook (no slide or sheet parsed); None for a type whose
    pages are its heading sections (only the conversion knows them)."""
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
            if file_type is ft.PPTX:
                return sum(1 for n in names if n.startswith("ppt/slides/slide") and n.endswith(".xml"))
            if file_type is ft.XLSX and "xl/workbook.xml" in names:
                with archive.open("xl/workbook.xml") as book:
                    return book.read(4 * 1024 * 1024).count(b"<sheet ")
    except (zipfile.BadZipFile, OSError, KeyError):
        return None
    return None


def document_dry_run(
    svc: Services,
    file_row: dict[str, Any],
    options: dict[str, Any],
    *,
    model_id: str,
    size: int,
    file_type: ft.FileType,
    pages: int | None,
    pictures: list[CountedPicture] | None = None,
) -> dict[str, Any]:
    """A born-digital file: converted by its deterministic converter at the split, no model call: $0, and why. With
    describeFigures its pictures are the model calls: each priced, and in all, at the lane they would take."""
    converter = {"pptx": "python-pptx", "xlsx": "openpyxl"}.get(file_type.name, "pandoc")
    answer = {
        "dryRun": True,
        "fileId": str(file_row["id"]),
        "name": file_row["name"],
        "fileType": file_type.name,
        "sizeBytes": size,
        "modelId": model_id,
        "options": options,
        "pages": {"total": pages, "blank": None, "scans": 0, "pageIs": file_type.page_is},
        "inspection": {
            "method": "container" if pages is not None else "not_inspected",
            "pagesInspected": 0,
            "note": None if pages is not None else f"a page is {file_type.page_is}: counted when the document is converted",
        },
        "records": 0,
        "lane": {"name": "converter", "reason": f"born-digital {file_type.name.upper()}: converted by {converter}, no model call", "minPages": None},
        "estimate": {
            "inputTokens": 0,
            "outputTokens": 0,
            "onDemandUsd": "0",
            "batchUsd": "0",
            "costUsd": "0",
            "holdUsd": "0",
            "basis": f"{file_type.name.upper()} is converted by {converter} with no model call: $0 (docs/formats.md)",
        },
        "turnaround": {
            "onDemandSeconds": 0,
            "onDemandBasis": "no model call: converted within the split (seconds)",
            "batchUpToHours": None,
            "batchBasis": None,
            "expected": "seconds (converted at the split)",
        },
        "created": False,
    }
    if not options.get(describe.OPTION):
        return answer
    figures = describe.dry_run_figures(svc, options, model_id=model_id, pictures=pictures)
    answer["figures"] = figures
    if figures["toDescribe"]:  # the pictures are the job's model calls, on the lane they take
        settings = svc.settings
        batch = figures["lane"] == "batch"
        answer["records"] = figures["toDescribe"]
        answer["lane"] = {
            "name": figures["lane"],
            "reason": figures["laneReason"],
            "minPages": settings.batch_conversion_min_pages,
            "note": f"the text is converted by {converter} for $0; its {figures['toDescribe']} picture(s) are described by Claude",
        }
        keys_ = ("inputTokens", "outputTokens", "onDemandUsd", "batchUsd", "costUsd", "holdUsd")
        answer["estimate"] = {
            **{k: figures[k] for k in keys_},
            "worstCaseUsd": figures["holdUsd"],  # every picture at its worst case, all held while the job runs
            "holdBasis": "each picture's worst case: its image, the prompt and a whole answer",
            "basis": f"the text: $0 ({converter}); the pictures: {figures['basis']}",
        }
        requests_s = _on_demand_seconds(figures["toDescribe"], settings)
        hours = settings.batch_conversion_timeout_hours
        answer["turnaround"] = {
            "onDemandSeconds": round(requests_s),
            "onDemandBasis": f"{figures['toDescribe']} picture requests",
            "batchUpToHours": hours if batch else None,
            "batchBasis": f"a Bedrock batch job ends by its timeout ({hours} h), usually sooner; then the pictures it missed go on-demand" if batch else None,
            "expected": f"up to {hours} h (batch lane)" if batch else f"about {_human(requests_s)} (on-demand)",
        }
    return answer


def _on_demand_seconds(requests: int, settings: Any) -> float:
    if not requests:
        return 0.0
    if settings.batchlane_ondemand_rpm:
        return requests / settings.batchlane_ondemand_rpm * 60
    parallel = max(settings.batchlane_global_concurrency, 1)
    return math.ceil(requests / parallel) * SECONDS_PER_REQUEST


def _human(seconds: float) -> str:
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    if seconds < 5400:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"


def _page_tree_dry_run(svc: Services, file_row: dict[str, Any], options: dict[str, Any], *, model_id: str, size: int) -> dict[str, Any]:
    """An upload too large to fetch inside the API: its pages counted from the page tree (ranged GETs, bounded),
    their text not read. The estimate counts every page as a scan, the hold every page at its worst case,
    and the cost is stated as a range; pages not counted within the bound are the range 1..the page limit."""
    settings = svc.settings
    reader = RangedUpload(svc.store, file_row["s3_key"], size, max_bytes=DRY_RUN_RANGED_BYTES, seconds=DRY_RUN_RANGED_SECONDS)
    head = reader.read(1024)
    reader.seek(0)
    if b"%PDF-" not in head:
        raise InputError("The file is not a PDF (it does not start with %PDF-).", error_id="PDF_NOT_PDF")
    try:
        pages: int | None = count_pages(reader)  # type: ignore[arg-type]
    except PageTreeUnreadable:
        if reader.stopped is None:
            raise InputError("The PDF is damaged or is not a PDF.", error_id="PDF_CORRUPT") from None
        pages = None
    if pages is not None and pages > settings.batchlane_max_pages:
        raise InputError(f"The PDF has {pages} pages; the limit is {settings.batchlane_max_pages}.", error_id="PDF_TOO_MANY_PAGES")
    if pages == 0:
        raise InputError("The PDF has no pages.", error_id="PDF_NO_PAGES")
    most = pages or settings.batchlane_max_pages
    eligible, why = batch_eligible(options, most, lane_configured=settings.batch_lane_configured, min_pages=settings.batch_conversion_min_pages)
    config = page_form_choice.converter_config(svc.uow().page_forms, settings, options)
    chunks = math.ceil(most / max(settings.batchlane_pages_per_chunk, 1))
    counts = PageCounts(most, 0, most, 0, unknown=most)  # text not read: expected as scans, at worst unknown
    money = dry_run_money(
        svc, counts, config=config, eligible=eligible, why=why, chunks=chunks, owner_id=file_row.get("owner_id"), deadline=options.get("deadline")
    )
    mb = settings.batchlane_dry_run_survey_mb
    counted = (
        f"its {pages} pages counted from the page tree ({reader.fetched} bytes read), their text not read"
        if pages is not None
        else f"its pages not counted ({reader.stopped} of the file); between 1 and the limit of {settings.batchlane_max_pages}"
    )
    return {
        "dryRun": True,
        "fileId": str(file_row["id"]),
        "name": file_row["name"],
        "sizeBytes": size,
        "modelId": model_id,
        "options": options,
        "pages": {"total": pages, "blank": None, "scans": None, "range": [pages or 1, most]},
        "inspection": {
            "method": "page_tree" if pages is not None else "not_inspected",
            "pagesInspected": 0,
            "note": f"the file is over the {mb} MB a dry run reads: {counted}; the estimate counts every page as a scan",
        },
        "records": pages,
        "lane": {
            "name": money["lane"] if money["lane"] != "depends" else "batch",
            "reason": why,
            "minPages": settings.batch_conversion_min_pages,
            "condition": money["condition"],
        },
        "estimate": {
            **money,
            "rangeUsd": {"low": "0", "high": money["worstCaseUsd"]},
            "basis": f"pages not surveyed: each counted as a page without text; blank pages cost nothing, the most is every page at its worst case. {money['basis']}",
        },
        "turnaround": {
            "onDemandSeconds": round(_on_demand_seconds(most, settings)),
            "onDemandBasis": f"up to {most} requests",
            "batchUpToHours": settings.batch_conversion_timeout_hours if eligible else None,
            "batchBasis": None,
            "expected": f"up to {settings.batch_conversion_timeout_hours} h (batch lane)"
            if eligible
            else f"up to {_human(_on_demand_seconds(most, settings))} (on-demand)",
        },
        "created": False,
    }
