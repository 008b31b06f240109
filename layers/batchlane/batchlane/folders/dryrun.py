"""A folder job's dry run: list the folder, count what would be converted, estimate pages, cost and time.

Nothing is created or billed. Listing stops after ``MAX_DRY_RUN_PAGES`` ListObjectsV2 pages
(the API answers within 29 s) and says so. Pages are counted exactly when the folder holds at
most ``SAMPLE_FILES`` PDFs, else from a sample of them scaled by size (``pages.method``).
"""

from __future__ import annotations

import math
import posixpath
import tempfile
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from batchlane.conversion.dryrun import INPUT_TOKENS_PER_PAGE, MARKDOWN_OVERHEAD, PROMPT_TOKENS_PER_REQUEST, _on_demand_seconds
from batchlane.domain.cost import Usage
from batchlane.domain.errors import InputError
from batchlane.folders import layout
from batchlane.folders.enumerate import classify
from batchlane.folders.usecases import prepare
from batchlane.pdf.survey import survey_pdf
from batchlane.runtime import Services

MAX_DRY_RUN_PAGES = 10  # 10,000 objects
SAMPLE_FILES = 5
MAX_OUTPUT_CHECKS = 200  # HeadObject calls for outputs outside the listed folder (29 s behind the API)


def estimate(svc: Services, body: Any, *, owner_id: str, groups: Iterable[str] = ()) -> dict[str, Any]:
    """The caller's grants are checked before anything is listed (usecases.prepare)."""
    spec = prepare(svc, body, owner_id=owner_id, groups=groups)
    settings = svc.settings
    buckets = svc.folder_buckets()
    source = spec.input_uri
    objects: list[tuple[str, int]] = []
    token: str | None = None
    complete = False
    for _ in range(MAX_DRY_RUN_PAGES):
        if spec.input.files is not None:
            objects = [(u.split("/", 3)[3], buckets.size(source.bucket, u.split("/", 3)[3]) or 0) for u in spec.input.files[: MAX_DRY_RUN_PAGES * 1000]]
            complete = len(spec.input.files) <= MAX_DRY_RUN_PAGES * 1000
            break
        page = buckets.list_page(source.bucket, source.key, token=token, recursive=spec.input.recursive, max_keys=1000)
        objects.extend(page.objects)
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
    pages, chars, method, sampled, refused = _pages(svc, source.bucket, to_convert, settings.batchlane_max_pages)
    model_id = str(spec.options.get("modelId") or settings.batchlane_model_id)
    if model_id not in settings.batchlane_prices:
        raise InputError(f"Model {model_id} has no price configured.", error_id="MODEL_UNKNOWN")
    output_tokens = math.ceil(chars / 4 * MARKDOWN_OVERHEAD)
    per_request = max(1, min(settings.batchlane_pages_per_request, settings.batchlane_max_documents_per_request))
    requests = math.ceil(pages / per_request) if pages else 0
    on_demand = Usage(pages * INPUT_TOKENS_PER_PAGE + requests * PROMPT_TOKENS_PER_REQUEST, output_tokens)
    batch = Usage(pages * (INPUT_TOKENS_PER_PAGE + PROMPT_TOKENS_PER_REQUEST), output_tokens)
    lane_possible = settings.batch_lane_configured and spec.policy.priority != "high"
    return {
        "dryRun": True,
        "created": False,
        "spec": spec.model_dump(mode="json"),
        "listing": {"objects": len(objects), "complete": complete, "note": None if complete else f"listed the first {len(objects)} objects only"},
        "files": {
            "to_convert": len(to_convert),
            "already_processed": len(already),
            "excluded": found.excluded,
            "failing": {**{f.source_key: f.error_id for f in found.files if f.status == "failed"}, **refused},
            "by_type": dict(sorted(by_type.items())),
        },
        "pages": {"total": pages, "method": method, "files_inspected": sampled},
        "records": pages,
        "estimate": {
            "onDemandUsd": str(svc.prices.cost(model_id, on_demand)),
            "batchUsd": str(svc.prices.cost(model_id, batch, batch=True)),
            "basis": f"{INPUT_TOKENS_PER_PAGE} input tokens a page; output from the pages' text; priority normal and low files wait in the batch pool whatever their size; it forms a Bedrock job of at least {settings.batch_conversion_min_records} records, else they go on-demand after {settings.batch_pool_window_minutes:g} minutes",
        },
        "turnaround": {
            "onDemandSeconds": round(_on_demand_seconds(requests, settings)),
            "batchUpToHours": settings.batch_conversion_timeout_hours if lane_possible else None,
        },
        "lane": _lane(settings, spec, lane_possible),
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


def _pages(svc: Services, bucket: str, files: list[Any], max_pages: int) -> tuple[int, int, str, int, dict[str, str]]:
    """(pages, text chars, method, files inspected, {key: error id} of inspected files that will fail): every
    file when few, else a sample scaled by bytes."""
    refused: dict[str, str] = {}
    if not files:
        return 0, 0, "exact", 0, refused
    sample = files if len(files) <= SAMPLE_FILES else [files[int(i * len(files) / SAMPLE_FILES)] for i in range(SAMPLE_FILES)]
    store = svc.store.in_bucket(bucket)
    pages = chars = sampled_bytes = 0
    with tempfile.TemporaryDirectory(prefix="folder-dryrun-") as tmp:
        for i, f in enumerate(sample):
            path = Path(tmp) / f"{i}.pdf"
            store.download_to(f.source_key, path)
            try:
                survey = survey_pdf(path, max_pages=max_pages)
            except InputError as exc:
                refused[f.source_key] = exc.error_id  # it fails on its own when converted; it adds no pages
                continue
            pages += survey.pages
            chars += survey.text_chars_nonblank
            sampled_bytes += max(f.size_bytes, path.stat().st_size)
    if len(sample) == len(files):
        return pages, chars, "exact", len(sample), refused
    total_bytes = sum(f.size_bytes for f in files)
    scale = total_bytes / sampled_bytes if sampled_bytes else len(files) / len(sample)
    return round(pages * scale), round(chars * scale), "sampled", len(sample), refused
