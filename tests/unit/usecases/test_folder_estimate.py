"""A folder's dry run (folders/dryrun.estimate) on the fakes: the in-memory buckets, real PDFs and pictures counted by the
real page-tree reader. What the answer says, field by field: what is listed, what would be converted, skipped, failed or
excluded, the pages per type (exact, or a sample scaled by bytes), the money and the lane. Until issue 44.6 the dry run
ran only on the offline stack (tests/e2e/test_folder_dry_run.py): no fast test reached it (684 mutants)."""

from __future__ import annotations

import io
import tempfile
from pathlib import Path
from typing import Any

import pytest
from folder_fakes import MemoryBuckets, on_folders
from PIL import Image

from batchlane.domain import describe
from batchlane.domain.errors import InputError
from batchlane.domain.vision import CLAUDE_MAX_LONG_EDGE_PX
from batchlane.filejob import page_form_choice
from batchlane.filejob.estimate import PageCounts, expected_usage
from batchlane.folders import dryrun
from batchlane.pdf.survey import SURVEY_BOUND, survey_pdf
from batchlane.ports import Services
from batchlane_dev.local.pdfgen import make_pdf

OWNER = "alice"


def _png(width: int = 40, height: int = 30) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), "white").save(out, format="PNG")
    return out.getvalue()


def _cost(svc: Services, pages: int, chars: int, *, options: dict[str, Any] | None = None) -> tuple[str, str, str]:
    """A single file's figures over these pages and text (filejob/estimate.py): what a folder's must equal."""
    settings = svc.settings
    model = settings.batchlane_model_id
    expected = expected_usage(
        PageCounts(pages, 0, 0, chars), config=page_form_choice.converter_config(svc.uow().page_forms, settings, options or {}), settings=settings
    )
    return (
        str(svc.prices.cost(model, expected.on_demand)),
        str(svc.prices.cost(model, expected.batch, batch=True)),
        str(svc.prices.cost(model, expected.worst)),
    )


def _text(pdf: bytes) -> int:
    """The text a survey finds in a whole PDF (the output estimate's basis), read by pdf/survey.py itself."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "one.pdf"
        path.write_bytes(pdf)
        return survey_pdf(path, max_pages=1000, sample=dryrun.TEXT_PAGES, bound=SURVEY_BOUND).text_chars_nonblank


def test_a_small_folder_is_counted_page_by_page_and_priced_as_one_file_of_its_pages(svc: Services) -> None:
    buckets = MemoryBuckets()
    for name, pages in (("a.pdf", 1), ("b.pdf", 2), ("sub/c.PDF", 3)):
        buckets.put("folders", f"in/{name}", make_pdf(pages, lines_per_page=4))
    buckets.put("folders", "in/notes.docx", b"PK\x03\x04 a born-digital file")
    buckets.put("folders", "in/photo.png", _png())  # not in the default include: excluded
    buckets.put("folders", "in/readme.txt", b"plain text")
    buckets.put("folders", "in/sub/", b"")  # a folder marker: neither counted nor excluded
    buckets.put("folders", "in/broken.pdf", b"%PDF-1.7 no page tree")
    buckets.put("folders", "out/b.md", b"# B", owner=OWNER)  # b.pdf's output, already there (onExisting: skip)
    svc = on_folders(svc, buckets)
    heard: list[dict[str, Any]] = []

    answer = dryrun.estimate(
        svc, {"input": {"folder": "s3://folders/in/", "include": ["*.pdf", "*.PDF", "*.docx", "*.txt"]}, "output": {"folder": "s3://folders/out/", "layout": "mirror"}},
        owner_id=OWNER, progress=heard.append,
    )  # fmt: skip

    assert (answer["dryRun"], answer["created"]) == (True, False)
    assert answer["listing"] == {"objects": 8, "complete": True, "note": None}
    files = answer["files"]
    assert (files["to_convert"], files["already_processed"], files["excluded"]) == (4, 1, 1)  # a, c, broken, notes; b skipped; photo excluded
    assert files["failing"] == {"in/readme.txt": "FILE_TYPE_UNSUPPORTED", "in/broken.pdf": "PDF_CORRUPT"}
    assert files["by_type"] == {".docx": 1, ".pdf": 4, ".png": 1, ".txt": 1}  # every listed object but the marker, c.PDF folded
    pdf = files["estimateByType"]["pdf"]
    assert (pdf["files"], pdf["pages"], pdf["method"]) == (3, 4, "exact")  # a's 1 and c's 3; the broken file adds none
    assert files["estimateByType"]["docx"] == {"files": 1, "pages": None, "method": "converter", "onDemandUsd": "0", "batchUsd": "0"}
    pages = answer["pages"]
    assert (pages["total"], pages["low"], pages["high"], pages["method"], pages["files_inspected"]) == (4, 4, 4, "exact", 3)
    assert pages["filesSurveyedForText"] == 2 and answer["records"] == 4  # the broken file has no text to survey
    on_demand, batch, worst = _cost(svc, 4, _text(make_pdf(1, lines_per_page=4)) + _text(make_pdf(3, lines_per_page=4)))
    assert answer["estimate"] == {"onDemandUsd": on_demand, "batchUsd": batch, "worstCaseUsd": worst, "basis": answer["estimate"]["basis"]}
    basis = answer["estimate"]["basis"]
    assert f"at least {svc.settings.batch_conversion_min_records} records" in basis and "on-demand after 15 minutes" in basis
    assert (pdf["onDemandUsd"], pdf["batchUsd"]) == (answer["estimate"]["onDemandUsd"], answer["estimate"]["batchUsd"])  # one type: its share is all
    assert answer["turnaround"]["batchUpToHours"] == svc.settings.batch_conversion_timeout_hours
    assert answer["lane"]["name"] == "batch" and "priority normal" in answer["lane"]["reason"]
    assert "figures" not in answer
    assert heard[0] == {"step": "listing", "done": 8, "total": None}
    assert heard[1] == {"step": "counting", "done": 0, "total": 3} and heard[-1] == {"step": "counting", "done": 3, "total": 3}


def test_past_the_exact_limit_a_sample_spread_over_the_sizes_is_counted_and_the_rest_scaled_by_bytes(svc: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    """Six files, four counted (the smallest, the largest and two between), the two left scaled by their bytes."""
    monkeypatch.setattr(dryrun, "EXACT_FILES", 5)
    monkeypatch.setattr(dryrun, "SAMPLE_FILES", 4)
    monkeypatch.setattr(dryrun, "TEXT_FILES", 2)
    buckets = MemoryBuckets()
    sizes = {}
    for i, pages in enumerate((1, 2, 3, 4, 5, 6)):
        data = make_pdf(pages, lines_per_page=2)
        buckets.put("folders", f"in/{i}.pdf", data)
        sizes[i] = len(data)
    svc = on_folders(svc, buckets)
    heard: list[dict[str, Any]] = []

    answer = dryrun.estimate(
        svc, {"input": {"folder": "s3://folders/in/"}, "output": {"folder": "s3://folders/out/", "layout": "mirror"}}, owner_id=OWNER, progress=heard.append
    )

    pages = answer["pages"]
    assert (pages["method"], pages["files_inspected"], pages["filesSurveyedForText"]) == ("extrapolated", 4, 2)
    assert {"step": "counting", "done": 0, "total": 4} in heard
    # sizes grow with pages: the sample is 0, 2, 3 and 5 (round(k * 5 / 3)), the uncounted 1 and 4 are scaled
    counted = [dryrun.Counted(sizes[i], i + 1) for i in (0, 2, 3, 5)]
    expected = dryrun.extrapolate(counted, [sizes[1], sizes[4]], max_pages=svc.settings.batchlane_max_pages)
    assert (pages["total"], pages["low"], pages["high"]) == (expected.total, expected.low, expected.high)
    assert answer["files"]["estimateByType"]["pdf"]["method"] == "extrapolated"


def test_an_explicit_file_list_is_headed_and_a_missing_file_is_said_to_fail_not_a_dry_run_error(svc: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    buckets = MemoryBuckets()
    buckets.put("folders", "in/a.pdf", make_pdf(2, lines_per_page=2))
    buckets.put("folders", "in/b.pdf", make_pdf(1, lines_per_page=2))
    buckets.put("folders", "in/c.pdf", make_pdf(1, lines_per_page=2))
    svc = on_folders(svc, buckets)
    body = {"input": {"files": ["s3://folders/in/a.pdf", "s3://folders/in/gone.pdf"]}, "output": {"folder": "s3://folders/out/", "layout": "mirror"}}

    answer = dryrun.estimate(svc, body, owner_id=OWNER)

    assert answer["listing"] == {"objects": 2, "complete": True, "note": None}  # c.pdf, not in the list, is not looked at
    assert answer["files"]["to_convert"] == 2 and answer["pages"]["total"] == 2  # the missing file: no pages
    assert answer["files"]["failing"] == {"in/gone.pdf": "FILE_MISSING"}  # as the job will fail it (advance.start_file)
    monkeypatch.setattr(dryrun, "MAX_FILE_HEADS", 1)
    capped = dryrun.estimate(svc, body, owner_id=OWNER)
    assert capped["listing"] == {"objects": 1, "complete": False, "note": "looked at the first 1 objects only"}


def test_a_listing_stops_after_its_pages_and_says_so(svc: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dryrun, "MAX_DRY_RUN_PAGES", 2)
    buckets = MemoryBuckets()
    for i in range(2001):
        buckets.put("folders", f"in/{i:05d}.docx", b"PK")
    answer = dryrun.estimate(on_folders(svc, buckets), {"input": {"folder": "s3://folders/in/"}}, owner_id=OWNER)
    assert answer["listing"] == {"objects": 2000, "complete": False, "note": "looked at the first 2000 objects only"}
    assert answer["files"]["estimateByType"] == {"docx": {"files": 2000, "pages": None, "method": "converter", "onDemandUsd": "0", "batchUsd": "0"}}
    assert answer["pages"] == {"total": 0, "low": 0, "high": 0, "method": "exact", "files_inspected": 0, "filesSurveyedForText": 0}
    assert answer["turnaround"]["onDemandSeconds"] == 0


def test_an_output_outside_the_folder_is_asked_for_only_while_few_files_convert(svc: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    """mirror: b.pdf's output sits in another bucket, asked for by HEAD; past MAX_OUTPUT_CHECKS files nothing is asked."""
    buckets = MemoryBuckets()
    buckets.put("folders", "in/a.pdf", make_pdf(1, lines_per_page=2))
    buckets.put("folders", "in/b.pdf", make_pdf(1, lines_per_page=2))
    buckets.put("outs", "md/b.md", b"# B", owner=OWNER)
    svc = on_folders(svc, buckets, batchlane_folder_sources="folders,outs")
    body = {"input": {"folder": "s3://folders/in/"}, "output": {"folder": "s3://outs/md/", "layout": "mirror"}}
    assert dryrun.estimate(svc, body, owner_id=OWNER)["files"]["already_processed"] == 1
    replace = {**body, "output": {**body["output"], "onExisting": "replace"}}
    assert dryrun.estimate(svc, replace, owner_id=OWNER)["files"]["already_processed"] == 0
    monkeypatch.setattr(dryrun, "MAX_OUTPUT_CHECKS", 1)
    assert dryrun.estimate(svc, body, owner_id=OWNER)["files"]["already_processed"] == 0


def test_an_output_beside_its_source_is_seen_in_the_listing_itself(svc: Services) -> None:
    buckets = MemoryBuckets()
    buckets.put("folders", "in/a.pdf", make_pdf(1, lines_per_page=2))
    buckets.put("folders", "in/b.pdf", make_pdf(1, lines_per_page=2))
    buckets.put("folders", "in/b.md", b"# B", owner=OWNER)
    answer = dryrun.estimate(on_folders(svc, buckets), {"input": {"folder": "s3://folders/in/"}}, owner_id=OWNER)  # alongside
    assert (answer["files"]["to_convert"], answer["files"]["already_processed"]) == (1, 1)
    assert answer["files"]["by_type"] == {".pdf": 2}  # our own .md output is not a type to convert


def test_pictures_are_counted_as_the_split_sends_them_each_type_on_its_own(svc: Services) -> None:
    buckets = MemoryBuckets()
    buckets.put("folders", "in/a.pdf", make_pdf(2, lines_per_page=2))
    buckets.put("folders", "in/p.png", _png())
    buckets.put("folders", "in/q.png", _png(20, 20))
    buckets.put("folders", "in/bad.png", b"\x89PNG not a picture")
    answer = dryrun.estimate(on_folders(svc, buckets), {"input": {"folder": "s3://folders/in/", "include": ["*.pdf", "*.png"]}}, owner_id=OWNER)
    by_type = answer["files"]["estimateByType"]
    assert (by_type["pdf"]["files"], by_type["pdf"]["pages"]) == (1, 2)
    assert (by_type["png"]["files"], by_type["png"]["pages"], by_type["png"]["method"]) == (3, 2, "exact")  # a page a picture; the bad one none
    assert answer["files"]["failing"] == {"in/bad.png": "IMAGE_CORRUPT"}
    assert answer["pages"]["total"] == 4 and answer["records"] == 4


def test_priority_high_and_a_lane_turned_off_go_on_demand_and_say_why(svc: Services) -> None:
    buckets = MemoryBuckets()
    buckets.put("folders", "in/a.pdf", make_pdf(1, lines_per_page=2))
    body = {"input": {"folder": "s3://folders/in/"}, "policy": {"priority": "high"}}
    high = dryrun.estimate(on_folders(svc, buckets), body, owner_id=OWNER)
    assert high["lane"] == {"name": "on_demand", "reason": "priority high: the files skip the batch lane"}
    assert high["turnaround"] == {"onDemandSeconds": high["turnaround"]["onDemandSeconds"], "batchUpToHours": None}
    assert high["turnaround"]["onDemandSeconds"] > 0
    off = dryrun.estimate(
        on_folders(svc, buckets, batch_conversion_enabled=False), {"input": {"folder": "s3://folders/in/"}, "policy": {"priority": "low"}}, owner_id=OWNER
    )
    assert off["lane"] == {"name": "on_demand", "reason": "the batch lane is off in this deployment"}
    low = dryrun.estimate(on_folders(svc, buckets), {"input": {"folder": "s3://folders/in/"}, "policy": {"priority": "low"}}, owner_id=OWNER)
    assert low["lane"]["reason"] == (
        f"priority low: folder files wait in the half-price batch pool whatever their size; a pool short of "
        f"{svc.settings.batch_conversion_min_records} records goes on-demand after 15 minutes"
    )


def test_one_request_takes_as_many_pages_as_the_smaller_of_its_two_limits(svc: Services) -> None:
    buckets = MemoryBuckets()
    buckets.put("folders", "in/a.pdf", make_pdf(6, lines_per_page=2))
    body = {"input": {"folder": "s3://folders/in/"}}
    one_rpm = {"batchlane_ondemand_rpm": 1, "batchlane_pages_per_request": 4}
    assert (
        dryrun.estimate(on_folders(svc, buckets, **one_rpm, batchlane_max_documents_per_request=2), body, owner_id=OWNER)["turnaround"]["onDemandSeconds"]
        == 180
    )
    assert (
        dryrun.estimate(on_folders(svc, buckets, **one_rpm, batchlane_max_documents_per_request=10), body, owner_id=OWNER)["turnaround"]["onDemandSeconds"]
        == 120
    )


def test_describe_figures_prices_the_largest_picture_at_the_files_lane(svc: Services) -> None:
    buckets = MemoryBuckets()
    buckets.put("folders", "in/a.docx", b"PK")
    buckets.put("folders", "in/b.docx", b"PK")
    svc = on_folders(svc, buckets)
    body = {"input": {"folder": "s3://folders/in/"}, "options": {"describeFigures": True}}
    model = svc.settings.batchlane_model_id
    largest = describe.expected_usage(CLAUDE_MAX_LONG_EDGE_PX, CLAUDE_MAX_LONG_EDGE_PX)
    figures = dryrun.estimate(svc, body, owner_id=OWNER)["figures"]
    assert figures["documents"] == 2 and figures["pictures"] is None
    assert (figures["lane"], figures["perPictureUpToUsd"]) == ("batch", str(svc.prices.cost(model, largest, batch=True)))
    high = dryrun.estimate(svc, {**body, "policy": {"priority": "high"}}, owner_id=OWNER)["figures"]
    assert (high["lane"], high["perPictureUpToUsd"]) == ("on_demand", str(svc.prices.cost(model, largest)))
    assert svc.prices.cost(model, largest) > svc.prices.cost(model, largest, batch=True)


def test_a_model_without_a_price_is_refused_before_anything_is_counted(svc: Services) -> None:
    buckets = MemoryBuckets()
    buckets.put("folders", "in/a.pdf", make_pdf(1, lines_per_page=2))
    svc = on_folders(svc, buckets, batchlane_model_ids=f"{svc.settings.batchlane_model_id},unpriced.model-v1")
    with pytest.raises(InputError) as refused:
        dryrun.estimate(svc, {"input": {"folder": "s3://folders/in/"}, "options": {"modelId": "unpriced.model-v1"}}, owner_id=OWNER)
    assert refused.value.error_id == "MODEL_UNKNOWN" and str(refused.value) == "Model unpriced.model-v1 has no price configured."


def test_the_text_is_surveyed_in_five_files_spread_over_the_sizes_and_scaled_to_every_page(svc: Services) -> None:
    """Seven files of a page each, of growing size: five are surveyed for text (the output estimate), and their text a
    page prices all seven pages."""
    buckets = MemoryBuckets()
    pdfs = [make_pdf(1, lines_per_page=2 + i) for i in range(7)]
    for i, pdf in enumerate(pdfs):
        buckets.put("folders", f"in/{i}.pdf", pdf)
    answer = dryrun.estimate(on_folders(svc, buckets), {"input": {"folder": "s3://folders/in/"}}, owner_id=OWNER)
    assert (answer["pages"]["total"], answer["pages"]["files_inspected"], answer["pages"]["filesSurveyedForText"]) == (7, 7, 5)
    surveyed = [pdfs[i] for i in (0, 2, 3, 4, 6)]  # round(k * 6 / 4) for k in 0..4: the smallest, the largest and three between
    chars = round(sum(_text(p) for p in surveyed) / 5 * 7)
    on_demand, batch, worst = _cost(svc, 7, chars)
    assert (answer["estimate"]["onDemandUsd"], answer["estimate"]["batchUsd"], answer["estimate"]["worstCaseUsd"]) == (on_demand, batch, worst)
