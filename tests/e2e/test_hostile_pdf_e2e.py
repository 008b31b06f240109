"""Hostile PDFs on the offline stack (issue 15): uploaded with the CLI through the API, each ends with
a clear outcome, never a traceback or a hang, and leaves no chunk PDF of a failed job in the bucket.

* 40,000 unbalanced ``(`` in a 620-byte file: converts (both lanes), its one page read at once;
* a page tree 5,000 levels deep after two ordinary pages: the job fails PDF_TOO_COMPLEX and the two
  chunk PDFs its split had written are deleted;
* an xref declaring 50 million entries: pdfium repairs the table, the job converts;
* issue 21: 300 pages sharing one stream of 5 MB of drawing operators, and one page inflating to 30 MB
  (57-72 KB each): each fails PDF_TOO_COMPLEX at its split's bounded survey (deadline, memory), split once;
  a page inflating to 20 MB after two ordinary ones: that page fails PAGE_TOO_COMPLEX, the two convert.

``wait_for_job``'s timeout is a hang guard only (a bad outcome would be a job that never ends).
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from batchlib import lanes, wait_until
from click.testing import CliRunner

from batchlane.runtime import services
from batchlane_dev.cli.main import main
from batchlane_dev.local.jobs import wait_for_job
from batchlane_dev.local.pdfgen import deep_page_tree_pdf, huge_xref_pdf, inflating_page_pdf, shared_drawing_stream_pdf, unbalanced_parentheses_pdf


@pytest.fixture(scope="module")
def stack(migrated_url, stack_starter):  # type: ignore[no-untyped-def]
    # One page a chunk, so a split failing on its third page has already written two chunk PDFs.
    # The batch lane takes a small file only with --bulk (BATCH_CONVERSION_MIN_PAGES stays 600).
    env = {"BATCH_CONVERSION_MIN_RECORDS": "1", "BATCHLANE_PAGES_PER_CHUNK": "1"}
    started = stack_starter(migrated_url, faults="time_scale=36000,job_hours=0.5", batch_lane=True, schedules=False, extra_env=env)
    yield started
    started.stop()


def cli(stack: Any, user: str, *args: str) -> Any:
    result = CliRunner().invoke(main, [*args, "--api-url", stack.env["BATCHLANE_API_URL"], "--user", user], catch_exceptions=False)
    assert "Traceback" not in result.output
    return result


def convert(stack: Any, tmp_path: Path, name: str, data: bytes, *extra: str) -> tuple[str, dict[str, Any]]:
    """Upload and convert with the CLI (detached), wait for the end, answer (job id, the job as the API shows it)."""
    user = f"hostile-{uuid.uuid4().hex[:8]}"
    pdf = tmp_path / name
    pdf.write_bytes(data)
    started = cli(stack, user, "convert", str(pdf), "--detach", "--json", *extra)
    assert started.exit_code == 0, started.output
    job_id = json.loads(started.stdout)["jobId"]
    if "--bulk" in extra:
        pack_until_packed(stack, job_id)
    wait_for_job(services(), job_id, timeout_s=120)
    shown = cli(stack, user, "jobs", "status", job_id, "--json")
    assert shown.exit_code == 0, shown.output
    return job_id, json.loads(shown.stdout)


def pack_until_packed(stack: Any, job_id: str) -> None:
    """Schedules are off: the packer's first look starts the job's pool window and a later look packs it,
    as the packer's one-minute schedule does (a job that failed its split never parks: nothing to pack)."""

    def packed_or_gone() -> bool:
        stack.registry.invoke("batch_packer", {})
        status = services().db.one("SELECT status FROM large_conversion_jobs WHERE id = CAST(:id AS uuid)", id=job_id)["status"]
        return bool(lanes(job_id)) or status not in ("splitting", "waiting_batch")

    wait_until(packed_or_gone, timeout_s=60, poll_s=0.2, what="the packer to take the job")


@pytest.mark.parametrize("lane", ["on-demand", "batch"])
def test_a_page_tree_5000_levels_deep_fails_the_job_as_too_complex_and_leaves_no_chunk_behind(stack, tmp_path, lane):
    """The split fails before any lane is chosen; --bulk (the batch lane's opt-in) changes nothing."""
    job_id, job = convert(stack, tmp_path, "deep.pdf", deep_page_tree_pdf(5_000, shallow_pages=2), *(["--bulk"] if lane == "batch" else []))
    assert job["status"] == "failed"
    assert job["error"]["code"] == "PDF_TOO_COMPLEX"
    assert job["batch"] is None and job["pages"]["total"] == 0
    assert services().store.list_keys(f"jobs/{job_id}/") == [], "the chunk PDFs of the failed split are deleted"


@pytest.mark.parametrize("lane", ["on-demand", "batch"])
def test_forty_thousand_unbalanced_parentheses_end_at_once_with_the_page_marked_in_both_lanes(stack, tmp_path, lane):
    """The page is read at once at the split, in prepare and in the chunk processor; it is not blank
    ("Hi" is shown), so it is sent. The emulated model, like a strict PDF reader, cannot parse the
    never-closed strings and answers ValidationException: the page is marked failed, the job completes."""
    data = unbalanced_parentheses_pdf(40_000)
    assert len(data) < 1_000
    job_id, job = convert(stack, tmp_path, "parens.pdf", data, *(["--bulk"] if lane == "batch" else []))
    assert (job["status"], job["pages"]["total"], job["pages"]["done"]) == ("completed", 1, 1), job
    if lane == "batch":
        assert job["batch"]["records"] == 1, "prepare read the page and wrote its record"
    else:
        assert job["batch"] is None
    markdown = services().store.get_bytes(
        services().db.one("SELECT markdown_key FROM large_conversion_jobs WHERE id = CAST(:id AS uuid)", id=job_id)["markdown_key"]
    )
    assert markdown.decode().startswith("<!-- Page 1")
    assert job["pages"]["failed"] == (1 if b"failed" in markdown else 0)


def test_an_xref_declaring_50_million_entries_converts(stack, tmp_path):
    data = huge_xref_pdf()
    assert len(data) < 1_000
    _, job = convert(stack, tmp_path, "xref.pdf", data)
    assert job["status"] == "completed", job
    assert job["pages"]["total"] == 1


@pytest.mark.parametrize("name", ["shared_stream", "inflating_page"])
def test_a_small_pdf_of_huge_drawings_fails_too_complex_at_its_split_and_is_split_once(stack, tmp_path, name):
    """Not a job_split held to its 900 s timeout and retried: the survey's child is stopped at its bound
    (15 s, or +384 MB), the job fails with a clear id, and the split ran once (no retry of the same work)."""
    data = shared_drawing_stream_pdf() if name == "shared_stream" else inflating_page_pdf()
    assert len(data) < 75_000
    splits = stack.registry.calls.get("job_split", 0)
    job_id, job = convert(stack, tmp_path, f"{name}.pdf", data)
    assert job["status"] == "failed", job
    assert job["error"]["code"] == "PDF_TOO_COMPLEX"
    assert stack.registry.calls.get("job_split", 0) - splits == 1, "the split is not retried"
    assert services().store.list_keys(f"jobs/{job_id}/") == []


def test_a_page_inflating_past_the_content_cap_fails_alone_and_the_rest_converts(stack, tmp_path):
    from batchlane.filejob.retry import failed_pages

    job_id, job = convert(stack, tmp_path, "one-bad-page.pdf", inflating_page_pdf(20_000_000, ordinary_pages=2))
    assert (job["status"], job["pages"]["total"], job["pages"]["failed"]) == ("completed", 3, 1), job
    assert [(p.page, p.reason, p.lane) for p in failed_pages(services(), job_id)] == [(3, "PAGE_TOO_COMPLEX", None)], "never sent"
    markdown = (
        services()
        .store.get_bytes(services().db.one("SELECT markdown_key FROM large_conversion_jobs WHERE id = CAST(:id AS uuid)", id=job_id)["markdown_key"])
        .decode()
    )
    assert "Ordinary page 1" in markdown and "Ordinary page 2" in markdown
