"""A dry run for one uploaded file: what a conversion would do and cost, with nothing created or billed.

How it stays within the API's 29 s, and the estimates' basis: docs/architecture.md "Module notes".
"""

from __future__ import annotations

import math
import tempfile
from pathlib import Path
from typing import Any

from batchlane.conversion.create import normalise_options
from batchlane.domain.budget import worst_case_usage
from batchlane.domain.cost import Usage
from batchlane.domain.eligibility import batch_eligible
from batchlane.domain.errors import InputError
from batchlane.pdf.split import open_pdf_file
from batchlane.pdf.survey import PageSurvey, survey_pdf
from batchlane.runtime import Services

INPUT_TOKENS_PER_PAGE = 3000  # text + the page image; prompt tokens come on top per request
PROMPT_TOKENS_PER_REQUEST = 400
SECONDS_PER_REQUEST = 30.0
MARKDOWN_OVERHEAD = 1.25


def worst_case_survey_usage(survey: PageSurvey, settings: Any) -> Usage:
    """The most a surveyed PDF's pages may use (domain/budget.py): what the funds hold and the dry run's holdUsd price."""
    return worst_case_usage(
        pages=survey.pages,
        blank=survey.blank,
        scans=survey.scans,
        text_chars=survey.text_chars_nonblank,
        max_tokens=settings.batchlane_max_tokens,
        reask=settings.batchlane_coverage_threshold > 0,
    )


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
    with tempfile.TemporaryDirectory(prefix="dryrun-", dir=scratch_dir) as tmp:
        path = Path(tmp) / "upload.pdf"
        svc.store.download_to(file_row["s3_key"], path)
        with path.open("rb") as stream:  # the same refusals (and page limit) as the split of a real conversion
            open_pdf_file(stream, max_pages=settings.batchlane_max_pages)
        survey = survey_pdf(path, max_pages=settings.batchlane_max_pages)
    records = survey.pages - survey.blank
    eligible, why = batch_eligible(options, survey.pages, lane_configured=settings.batch_lane_configured, min_pages=settings.batch_conversion_min_pages)
    per_request = max(1, min(settings.batchlane_pages_per_request, settings.batchlane_max_documents_per_request))
    requests = math.ceil(records / per_request) if records else 0
    output = math.ceil(survey.text_chars_nonblank / 4 * MARKDOWN_OVERHEAD) + survey.scans * settings.batchlane_output_tokens_per_page
    on_demand_usage = Usage(records * INPUT_TOKENS_PER_PAGE + requests * PROMPT_TOKENS_PER_REQUEST, output)
    batch_usage = Usage(records * (INPUT_TOKENS_PER_PAGE + PROMPT_TOKENS_PER_REQUEST), output)  # one record per page
    on_demand_s = _on_demand_seconds(requests, settings)
    hold_usage = worst_case_survey_usage(survey, settings)  # the funds hold a real conversion places (conversion/budget.py)
    batch_hours = settings.batch_conversion_timeout_hours
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
        "lane": {"name": "batch" if eligible else "on_demand", "reason": why, "minPages": settings.batch_conversion_min_pages},
        "estimate": {
            "inputTokens": on_demand_usage.input_tokens,
            "outputTokens": on_demand_usage.output_tokens,
            "onDemandUsd": str(svc.prices.cost(model_id, on_demand_usage)),
            "batchUsd": str(svc.prices.cost(model_id, batch_usage, batch=True)),
            "costUsd": str(svc.prices.cost(model_id, batch_usage, batch=True) if eligible else svc.prices.cost(model_id, on_demand_usage)),
            "holdUsd": str(svc.prices.cost(model_id, hold_usage)),
            "basis": f"{INPUT_TOKENS_PER_PAGE} input tokens a page (text + image), output from the page's text (scans {settings.batchlane_output_tokens_per_page})",
        },
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
