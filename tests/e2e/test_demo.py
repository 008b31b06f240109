"""`batchlane demo --json`, the README's main command, run as a user runs it (a subprocess)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest

from batchlane_dev.contract import component_errors
from batchlane_dev.local.pdfgen import deep_page_tree_pdf

BATCHLANE = Path(sys.executable).with_name("batchlane")
PAGES = "650"  # just over BATCH_CONVERSION_MIN_PAGES (600): the job takes the batch lane
# Each Bedrock outcome is a path through the lane whatever the job's size: those cases run 150 pages with the
# threshold at 100 (the default threshold's own path is the 650-page case below and README's 1,200-page demo).
OUTCOME_PAGES, OUTCOME_ENV = "150", {"BATCH_CONVERSION_MIN_PAGES": "100"}


def run_demo(tmp_path: Path, *args: str, env_extra: dict[str, str] | None = None) -> tuple[int, dict, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "BATCH", "DATABASE_URL", "CONVERSION_"))} | (env_extra or {})
    result = subprocess.run([str(BATCHLANE), "demo", "--json", "--out", str(tmp_path), *args], capture_output=True, text=True, env=env, timeout=600)
    lines = result.stdout.strip().splitlines()
    # What a person sees is the progress and the report: the handlers' INFO logs stay out of the terminal.
    assert not [line for line in lines[:-1] + result.stderr.splitlines() if line.startswith('{"level":"INFO"')], "handler INFO logs on the terminal"
    report = json.loads(lines[-1])
    assert component_errors(report, "DemoReport") == [], "the --json report is DemoReport (docs/api/openapi.yaml)"
    return result.returncode, report, result.stderr


@pytest.mark.parametrize("outcome", ["completed", "partially_completed", "failed", "expired", "stopped"])
def test_demo_completes_every_page_under_each_bedrock_outcome(tmp_path, outcome):
    code, report, stderr = run_demo(tmp_path, "--pages", OUTCOME_PAGES, "--faults", f"job_outcome={outcome}", env_extra=OUTCOME_ENV)
    assert code == 0, stderr[-2000:]
    assert (report["status"], (report["error"] or {}).get("code"), report["pagesFailed"]) == ("completed", None, 0)
    assert report["batch"]["ledgerRows"] == 1
    assert report["batch"]["records"] == report["batch"]["accepted"] + report["batch"]["fallback"] > 0
    markdown = Path(report["markdownPath"]).read_text()
    assert report["pages"] == int(OUTCOME_PAGES) and report["batch"]["records"] > 0, "the job took the batch lane"
    assert all(f"<!-- Page {n} -->" in markdown for n in range(1, int(OUTCOME_PAGES) + 1))
    pages = Path(report["pagesPath"]).read_text().splitlines()  # issue 39.4: pages.jsonl beside the Markdown
    assert Path(report["pagesPath"]).parent == Path(report["markdownPath"]).parent and len(pages) == int(OUTCOME_PAGES)
    assert Decimal(report["totalCostUsd"]) == Decimal(report["ledgerTotalUsd"])


def test_demo_saves_at_least_48_percent_with_two_percent_record_errors(tmp_path):
    code, report, stderr = run_demo(tmp_path, "--pages", PAGES, "--faults", "record_error_rate=0.02")
    assert code == 0, stderr[-2000:]
    assert report["status"] == "completed" and report["pagesFailed"] == 0
    assert report["batch"]["jobStatus"] == "PartiallyCompleted" and report["batch"]["fallback"] > 0
    assert report["savingPct"] >= 48


@pytest.mark.parametrize(
    ("content", "error_id"),
    [
        (b"this is not a pdf", "PDF_NOT_PDF"),
        # issue 41.4: the demo's own batch-clock sampling once let pypdfium2's PdfiumError escape on it
        (deep_page_tree_pdf(), "PDF_TOO_COMPLEX"),
    ],
    ids=["not-a-pdf", "page-tree-5000-deep"],
)
def test_demo_of_a_bad_pdf_fails_with_a_stable_error_id_exit_2_and_no_traceback(tmp_path, content, error_id):
    bad = tmp_path / "notes.pdf"
    bad.write_bytes(content)
    code, report, stderr = run_demo(tmp_path, "--pdf", str(bad))
    assert code == 2, stderr[-2000:]  # the user's input: the exit code of a file refused before upload (issue 41.4)
    assert (report["status"], (report["error"] or {}).get("code")) == ("failed", error_id)
    assert "Traceback" not in stderr


def test_unknown_fault_is_a_usage_error(tmp_path):
    result = subprocess.run([str(BATCHLANE), "demo", "--faults", "job_outcom=failed"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert "unknown emulator fault 'job_outcom'" in result.stderr
