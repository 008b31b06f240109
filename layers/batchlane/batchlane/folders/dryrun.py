"""A folder job's dry run: list the folder, count what would be converted, estimate pages, cost and time.

Nothing is created or billed, and the work is bounded to answer within the API's 29 s: listing
stops after ``MAX_DRY_RUN_PAGES`` ListObjectsV2 pages, an explicit file list is HEADed in
parallel up to ``MAX_FILE_HEADS`` files, and page counts are read in parallel within
``COUNT_DEADLINE_S`` (each says so when it stops short). Pages: every file's page count (the
page tree, not the pages) when the folder is small, else a spread sample extrapolated by bytes,
with the range the sample allows (``pages.low`` / ``pages.high``); the text (the output estimate)
comes from surveying a few of the files counted.
"""

from __future__ import annotations

import math
import posixpath
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from batchlane.domain import describe
from batchlane.domain import file_types as ft
from batchlane.domain.errors import InputError, NotFound
from batchlane.domain.vision import CLAUDE_MAX_LONG_EDGE_PX
from batchlane.filejob import page_form_choice
from batchlane.filejob.dryrun import _on_demand_seconds
from batchlane.filejob.estimate import PageCounts, expected_usage
from batchlane.folders import layout
from batchlane.folders.enumerate import classify
from batchlane.folders.finish import redacted_spec
from batchlane.folders.usecases import prepare
from batchlane.formats import detect as formats
from batchlane.pdf.bounded import Bound
from batchlane.pdf.split import open_pdf_file
from batchlane.pdf.survey import SURVEY_BOUND, survey_pdf
from batchlane.ports import Services

MAX_DRY_RUN_PAGES = 10  # 10,000 objects
MAX_OUTPUT_CHECKS = 200  # HeadObject calls for outputs outside the listed folder (29 s behind the API)
MAX_FILE_HEADS = 1000  # an explicit input.files list: HEADed in parallel up to this many
PARALLEL_S3_CALLS = 16
EXACT_FILES = 100  # every file's pages are counted up to this many files ...
EXACT_BYTES = 256 * 1024 * 1024  # ... and this many bytes in all (each downloaded to /tmp, counted, deleted)
SAMPLE_FILES = 24  # past that: this many files, spread over the folder by size, are counted
TEXT_FILES = 5  # of the files counted, this many are surveyed for text (the output estimate)
TEXT_PAGES = 100  # pages a text survey looks at in one file (a seeded sample past it)
COUNT_DEADLINE_S = 15.0  # page counting stops here, counts still running are not waited for; files not counted by then are extrapolated


@dataclass(frozen=True)
class Counted:
    """One file's page count (0: unreadable, it fails on its own when converted) and, if surveyed, its text."""

    size_bytes: int
    pages: int
    text_chars: int | None = None
    error_id: str | None = None  # why the split will refuse it (PDF_NOT_PDF, PDF_ENCRYPTED, ...)


@dataclass(frozen=True)
class PageEstimate:
    total: int
    low: int
    high: int
    text_chars: int
    method: str  # "exact" (every file counted) or "extrapolated" (a sample, scaled by bytes)
    files_counted: int
    files_surveyed: int


def extrapolate(counted: Sequence[Counted], uncounted_bytes: Sequence[int], *, max_pages: int) -> PageEstimate:
    """Pages of the whole set from the files counted: exact when none is left, else scaled by bytes,
    with the range the counted files' pages-per-byte allow (every PDF has at least one page)."""
    pages = sum(c.pages for c in counted)
    readable = [c for c in counted if c.pages > 0]
    surveyed = [c for c in readable if c.text_chars is not None]
    surveyed_pages = sum(c.pages for c in surveyed)
    chars_per_page = sum(c.text_chars or 0 for c in surveyed) / surveyed_pages if surveyed_pages else 0.0
    if not uncounted_bytes:
        return PageEstimate(pages, pages, pages, round(chars_per_page * pages), "exact", len(counted), len(surveyed))
    rest_bytes, rest_files = sum(uncounted_bytes), len(uncounted_bytes)
    ceiling = rest_files * max_pages
    if readable:
        ratios = [c.pages / max(1, c.size_bytes) for c in readable]
        mean = sum(c.pages for c in readable) / max(1, sum(c.size_bytes for c in readable))
        guess = min(ceiling, max(rest_files, round(rest_bytes * mean)))
        low = min(ceiling, max(rest_files, math.floor(rest_bytes * min(ratios))))
        high = min(ceiling, max(rest_files, math.ceil(rest_bytes * max(ratios))))
    else:  # nothing could be counted in time: at least a page a file, at most the page limit
        guess, low, high = rest_files, rest_files, ceiling
    total = pages + guess
    return PageEstimate(total, pages + low, pages + high, round(chars_per_page * total), "extrapolated", len(counted), len(surveyed))


def estimate(
    svc: Services, body: Any, *, owner_id: str, groups: Iterable[str] = (), progress: Callable[[dict[str, Any]], None] | None = None
) -> dict[str, Any]:
    """The caller's grants are checked before anything is listed (usecases.prepare); the folder is read as its
    owner (the folder-access role, as the job's own reads). ``progress`` hears each listing page and count."""
    spec = prepare(svc, body, owner_id=owner_id, groups=groups)
    settings = svc.settings
    report = progress or (lambda step: None)
    buckets = svc.folder_buckets(owner_id)
    source = spec.input_uri
    objects: list[tuple[str, int]] = []
    token: str | None = None
    complete = False
    for _ in range(MAX_DRY_RUN_PAGES):
        if spec.input.files is not None:
            objects = _head_files(buckets, source.bucket, [u.split("/", 3)[3] for u in spec.input.files[:MAX_FILE_HEADS]])
            complete = len(spec.input.files) <= MAX_FILE_HEADS
            break
        page = buckets.list_page(source.bucket, source.key, token=token, recursive=spec.input.recursive, max_keys=1000)
        objects.extend(page.objects)
        report({"step": "listing", "done": len(objects), "total": None})
        token = page.next_token
        if token is None:
            complete = True
            break
    found = classify(spec, "fj-dry-run", objects, done_sources=set())
    listed = {key for key, _ in objects}
    to_convert = [f for f in found.files if f.status == "queued"]
    ask = len(to_convert) <= MAX_OUTPUT_CHECKS  # outputs outside the listed folder are asked for one by one: a few only
    already = [f for f in to_convert if spec.output.on_existing == "skip" and _exists(buckets, spec, f.output_key, listed, ask=ask)]
    to_convert = [f for f in to_convert if f not in already]
    by_type = Counter((posixpath.splitext(k)[1].lower() or "(none)") for k, _ in objects if not k.endswith("/") and not layout.is_own_output(k))
    model_id = str(spec.options.get("modelId") or settings.batchlane_model_id)
    if model_id not in settings.batchlane_prices:
        raise InputError(f"Model {model_id} has no price configured.", error_id="MODEL_UNKNOWN")
    # By type (issue 43): born-digital files cost no model call; PDFs and pictures are counted per type, in
    # parallel, the count deadline shared between the types.
    kinds = {f.source_key: ft.by_extension(f.source_key) or ft.PDF for f in to_convert}
    documents = [f for f in to_convert if kinds[f.source_key].kind == ft.DOCUMENT]
    vision: dict[str, list[Any]] = {}
    for f in to_convert:
        if kinds[f.source_key].kind == ft.PAGES:
            vision.setdefault(kinds[f.source_key].name, []).append(f)
    per_type: dict[str, dict[str, Any]] = {}
    estimates: list[PageEstimate] = []
    refused: dict[str, str] = {}
    for name, files in sorted(vision.items()):
        part, part_refused = _pages(
            svc,
            source.bucket,
            files,
            settings.batchlane_max_pages,
            owner_id=owner_id,
            report=report,
            deadline_s=COUNT_DEADLINE_S / len(vision),
            images=name != "pdf",
        )
        estimates.append(part)
        refused.update(part_refused)
        per_type[name] = {"files": len(files), "pages": part.total, "method": part.method, **_type_cost(svc, settings, model_id, part)}
    for f in documents:
        entry = per_type.setdefault(kinds[f.source_key].name, {"files": 0, "pages": None, "method": "converter", "onDemandUsd": "0", "batchUsd": "0"})
        entry["files"] += 1
    counted = _sum_estimates(estimates)
    pages, chars = counted.total, counted.text_chars
    per_request = max(1, min(settings.batchlane_pages_per_request, settings.batchlane_max_documents_per_request))
    requests = math.ceil(pages / per_request) if pages else 0
    # the same figures as a single file's dry run (filejob/estimate.py), over the folder's pages and text
    expected = expected_usage(
        PageCounts(pages, 0, 0, chars), config=page_form_choice.converter_config(svc.uow().page_forms, settings, spec.options), settings=settings
    )
    on_demand, batch = expected.on_demand, expected.batch
    lane_possible = settings.batch_lane_configured and spec.policy.priority != "high"
    return {
        "dryRun": True,
        "created": False,
        "spec": redacted_spec(spec.model_dump(mode="json")),  # no callback header value comes back
        "listing": {"objects": len(objects), "complete": complete, "note": None if complete else f"looked at the first {len(objects)} objects only"},
        "files": {
            "to_convert": len(to_convert),
            "already_processed": len(already),
            "excluded": found.excluded,
            "failing": {**{f.source_key: f.error_id for f in found.files if f.status == "failed"}, **refused},
            "by_type": dict(sorted(by_type.items())),
            "estimateByType": per_type,  # pdf / png / tiff …: pages and model cost; docx, pptx …: $0 (converted, no model call)
        },
        "pages": {
            "total": pages,
            "low": counted.low,
            "high": counted.high,
            "method": counted.method,
            "files_inspected": counted.files_counted,
            "filesSurveyedForText": counted.files_surveyed,
        },
        "records": pages,
        "estimate": {
            "onDemandUsd": str(svc.prices.cost(model_id, on_demand)),
            "batchUsd": str(svc.prices.cost(model_id, batch, batch=True)),
            "worstCaseUsd": str(svc.prices.cost(model_id, expected.worst)),
            "basis": f"born-digital files (DOCX, PPTX, XLSX, HTML, EPUB, ODT) cost no model call; PDF and picture pages: each page's image and text (at least 1,500 tokens a PDF page) in, its text as Markdown out (filejob/estimate.py); priority normal and low files wait in the batch pool whatever their size; it forms a Bedrock job of at least {settings.batch_conversion_min_records} records, else they go on-demand after {settings.batch_pool_window_minutes:g} minutes",
        },
        "turnaround": {
            "onDemandSeconds": round(_on_demand_seconds(requests, settings)),
            "batchUpToHours": settings.batch_conversion_timeout_hours if lane_possible else None,
        },
        "lane": _lane(settings, spec, lane_possible),
        **({"figures": _figures(svc, model_id, lane_possible, len(documents))} if spec.options.get(describe.OPTION) else {}),
    }


def _figures(svc: Services, model_id: str, lane_possible: bool, documents: int) -> dict[str, Any]:
    """describeFigures on a folder: the born-digital files' pictures are counted when each is converted; what one costs."""
    largest = describe.expected_usage(CLAUDE_MAX_LONG_EDGE_PX, CLAUDE_MAX_LONG_EDGE_PX)
    return {
        "documents": documents,
        "pictures": None,
        "perPictureUpToUsd": str(svc.prices.cost(model_id, largest, batch=lane_possible)),
        "lane": "batch" if lane_possible else "on_demand",
        "basis": "each born-digital file's pictures are counted when it is converted (a file's own dry run lists them); a picture costs its "
        "image tokens (at most ~1,600, for one Claude scales down) and the prompt in, a few sentences out, at the files' lane",
    }


def _lane(settings: Any, spec: Any, lane_possible: bool) -> dict[str, Any]:
    """Which lane the files take and why, in the words the CLI prints (issue 24.5: say it, and a turnaround to match)."""
    if not settings.batch_lane_configured:
        return {"name": "on_demand", "reason": "the batch lane is off in this deployment"}
    if not lane_possible:
        return {"name": "on_demand", "reason": "priority high: the files skip the batch lane"}
    return {
        "name": "batch",
        "reason": (
            f"priority {spec.policy.priority}: folder files wait in the half-price batch pool whatever their size; a pool "
            f"short of {settings.batch_conversion_min_records} records goes on-demand after {settings.batch_pool_window_minutes:g} minutes"
        ),
    }


def _exists(buckets: Any, spec: Any, key: str | None, listed: set[str], *, ask: bool) -> bool:
    """An output in the listed folder is seen in the listing; one elsewhere (mirror, flat) is asked for when ``ask``."""
    if key is None:
        return False
    inside = spec.output_uri.bucket == spec.input_uri.bucket and key.startswith(spec.input_uri.key)
    if key in listed or inside or not ask:
        return key in listed
    return bool(buckets.size(spec.output_uri.bucket, key) is not None)


def _head_files(buckets: Any, bucket: str, keys: list[str]) -> list[tuple[str, int]]:
    """(key, size) of each listed file, HEADed in parallel (a missing one: size 0, refused when converted)."""
    with ThreadPoolExecutor(max_workers=PARALLEL_S3_CALLS) as pool:
        sizes = list(pool.map(lambda key: buckets.size(bucket, key) or 0, keys))
    return list(zip(keys, sizes, strict=True))


def _type_cost(svc: Services, settings: Any, model_id: str, part: PageEstimate) -> dict[str, str]:
    """One type's share of the estimate, with a single file's figures (filejob/estimate.py) over its pages and text."""
    config = page_form_choice.converter_config(svc.uow().page_forms, settings, {"modelId": model_id})
    expected = expected_usage(PageCounts(part.total, 0, 0, part.text_chars), config=config, settings=settings)
    return {"onDemandUsd": str(svc.prices.cost(model_id, expected.on_demand)), "batchUsd": str(svc.prices.cost(model_id, expected.batch, batch=True))}


def _sum_estimates(parts: list[PageEstimate]) -> PageEstimate:
    """The folder's pages: the types' estimates added up (exact only when every type was)."""
    if not parts:
        return PageEstimate(0, 0, 0, 0, "exact", 0, 0)
    method = "exact" if all(p.method == "exact" for p in parts) else "extrapolated"
    return PageEstimate(
        sum(p.total for p in parts),
        sum(p.low for p in parts),
        sum(p.high for p in parts),
        sum(p.text_chars for p in parts),
        method,
        sum(p.files_counted for p in parts),
        sum(p.files_surveyed for p in parts),
    )


def _pages(
    svc: Services,
    bucket: str,
    files: list[Any],
    max_pages: int,
    *,
    owner_id: str,
    report: Callable[[dict[str, Any]], None] = lambda step: None,
    deadline_s: float = COUNT_DEADLINE_S,
    images: bool = False,
) -> tuple[PageEstimate, dict[str, str]]:
    """Every file's pages counted when the set is small, else a sample spread over the sizes; both in
    parallel and within ``COUNT_DEADLINE_S``; what was not counted is extrapolated by bytes. Also
    {key: error id} of the counted files that will fail."""
    small = len(files) <= EXACT_FILES and sum(f.size_bytes for f in files) <= EXACT_BYTES
    by_size = sorted(range(len(files)), key=lambda i: (files[i].size_bytes, i))
    chosen = by_size if small else sorted({by_size[round(k * (len(files) - 1) / (SAMPLE_FILES - 1))] for k in range(SAMPLE_FILES)})
    surveyed = min(TEXT_FILES, len(chosen))
    text_at = {chosen[round(k * (len(chosen) - 1) / max(1, surveyed - 1))] for k in range(surveyed)}  # spread over the sizes
    store = svc.folder_source(bucket, owner_id)
    report({"step": "counting", "done": 0, "total": len(chosen)})
    deadline = time.monotonic() + deadline_s
    # Counts still running at the deadline are left behind (each ends within its own bound): the directory
    # may go before they do, so its removal ignores what they still hold.
    with tempfile.TemporaryDirectory(prefix="folder-dryrun-", ignore_cleanup_errors=True) as tmp:

        def count(i: int) -> Counted | None:
            path = Path(tmp) / f"{i}.pdf"
            try:
                if time.monotonic() >= deadline:
                    return None
                try:
                    store.download_to(files[i].source_key, path)
                except NotFound:  # a listed file gone (an explicit list names it): the job fails it FILE_MISSING, so does this
                    return Counted(files[i].size_bytes, 0, error_id="FILE_MISSING")
                size = max(files[i].size_bytes, path.stat().st_size)
                if images:  # a picture is counted as the split will send it: a PDF of a page per frame
                    try:
                        path.write_bytes(formats.wrap_image(path, max_pages=max_pages))
                    except InputError as exc:
                        return Counted(size, 0, error_id=exc.error_id)
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                return _count(path, size, max_pages=max_pages, survey_text=i in text_at, seconds=left)
            finally:
                path.unlink(missing_ok=True)

        done = _within(count, chosen, deadline_s=deadline - time.monotonic(), on_done=lambda n: report({"step": "counting", "done": n, "total": len(chosen)}))
    uncounted = [files[i].size_bytes for i in range(len(files)) if i not in done]
    refused = {files[i].source_key: c.error_id for i, c in sorted(done.items()) if c.error_id}
    return extrapolate(list(done.values()), uncounted, max_pages=max_pages), refused


def _count(path: Path, size: int, *, max_pages: int, survey_text: bool, seconds: float = SURVEY_BOUND.seconds) -> Counted:
    """A file's page count from its page tree (and its text when ``survey_text``, surveyed within ``seconds``);
    0 pages when unreadable."""
    try:
        with path.open("rb") as stream:
            document = open_pdf_file(stream, max_pages=max_pages)
            pages = document.page_count
            document.close()
        bound = Bound(min(seconds, SURVEY_BOUND.seconds), SURVEY_BOUND.memory_mb)
        chars = survey_pdf(path, max_pages=max_pages, sample=TEXT_PAGES, bound=bound).text_chars_nonblank if survey_text else None
    except InputError as exc:
        return Counted(size, 0, error_id=exc.error_id)  # a bad file fails on its own when converted; it adds no pages
    return Counted(size, pages, chars)


def _within(
    work: Callable[[int], Counted | None], indexes: list[int], *, deadline_s: float, on_done: Callable[[int], None] = lambda n: None
) -> dict[int, Counted]:
    """``work`` on each index, a few at a time, for ``deadline_s``: what finished by then, by index.
    Work still running at the deadline is not waited for (issue 40: a 15 s promise once took 119 s); what is queued is dropped."""
    results: dict[int, Counted] = {}
    deadline = time.monotonic() + deadline_s
    pool = ThreadPoolExecutor(max_workers=min(8, PARALLEL_S3_CALLS))
    try:
        pending: dict[Future[Counted | None], int] = {pool.submit(work, i): i for i in indexes}
        while pending and (left := deadline - time.monotonic()) > 0:
            finished, _ = wait(pending, timeout=left, return_when=FIRST_COMPLETED)
            for future in finished:
                index = pending.pop(future)
                if (counted := future.result()) is not None:
                    results[index] = counted
            on_done(len(results))
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    return results
