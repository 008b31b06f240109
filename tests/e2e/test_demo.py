"""`batchlane demo --json`, the README's main command, run as a user runs it (a subprocess)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

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
    return result.returncode, json.loads(lines[-1]), result.stderr


@pytest.mark.parametrize("outcome", ["completed", "partially_completed", "failed", "expired", "stopped"])
def test_demo_completes_every_page_under_each_bedrock_outcome(tmp_path, outcome):
    code, report, stderr = run_demo(tmp_path, "--pages", OUTCOME_PAGES, "--faults", f"job_outcome={outcome}", env_extra=OUTCOME_ENV)
    assert code == 0, stderr[-2000:]
    assert (report["status"], report["error_id"], report["pages_failed"]) == ("completed", None, 0)
    assert report["batch"]["ledger_rows"] == 1
    assert report["batch"]["records"] == report["batch"]["accepted"] + report["batch"]["fallback"] > 0
    for key in ("job_id", "pages", "pages_converted", "markdown_path", "total_cost_usd", "all_on_demand_cost_usd", "saving_pct", "on_demand"):
        assert key in report
    assert set(report["timings"]) >= {"total_s", "prepare_s", "collect_s", "event_to_resume_s"}
    markdown = Path(report["markdown_path"]).read_text()
    assert report["pages"] == int(OUTCOME_PAGES) and report["batch"]["records"] > 0, "the job took the batch lane"
    assert all(f"<!-- Page {n} -->" in markdown for n in range(1, int(OUTCOME_PAGES) + 1))
    pages = Path(report["pagesPath"]).read_text().splitlines()  # issue 39.4: pages.jsonl beside the Markdown
    assert Path(report["pagesPath"]).parent == Path(report["markdown_path"]).parent and len(pages) == int(OUTCOME_PAGES)
    assert report["total_cost_usd"] == pytest.approx(report["ledger_total_usd"])


def test_demo_saves_at_least_48_percent_with_two_percent_record_errors(tmp_path):
    code, report, stderr = run_demo(tmp_path, "--pages", PAGES, "--faults", "record_error_rate=0.02")
    assert code == 0, stderr[-2000:]
    assert report["status"] == "completed" and report["pages_failed"] == 0
    assert report["batch"]["job_status"] == "PartiallyCompleted" and report["batch"]["fallback"] > 0
    assert report["saving_pct"] >= 48


def test_demo_of_a_bad_pdf_fails_with_a_stable_error_id_and_no_traceback(tmp_path):
    bad = tmp_path / "notes.pdf"
    bad.write_bytes(b"this is not a pdf")
    code, report, stderr = run_demo(tmp_path, "--pdf", str(bad))
    assert code == 1
    assert (report["status"], report["error_id"]) == ("failed", "PDF_NOT_PDF")
    assert "Traceback" not in stderr


def test_unknown_fault_is_a_usage_error(tmp_path):
    result = subprocess.run([str(BATCHLANE), "demo", "--faults", "job_outcom=failed"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert "unknown emulator fault 'job_outcom'" in result.stderr
