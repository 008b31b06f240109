"""Folder jobs from a terminal, against `batchlane local up` (a real daemon on a tmp workdir)."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from click.testing import CliRunner

from batchlane_dev.cli.main import main
from batchlane_dev.contract import component_errors
from batchlane_dev.local.daemon import start_daemon, stop_daemon
from batchlane_dev.local.pdfgen import VECTOR_CHART_PAGE, make_pdf, make_vector_chart_pdf


@pytest.fixture(scope="module")
def local_stack(tmp_path_factory):  # type: ignore[no-untyped-def]
    workdir = tmp_path_factory.mktemp("local")
    mp = pytest.MonkeyPatch()
    # A folder of a few pages does not wait out the pool's 15-minute window (30 s of this daemon's clock) for a
    # fuller Bedrock job: on-demand at once. The window has its own tests (tests/e2e/test_batch_pool.py).
    mp.setenv("BATCH_POOL_WINDOW_MINUTES", "0")  # inherited by the daemon
    mp.delenv("DATABASE_URL", raising=False)
    mp.delenv("BATCHLANE_API_URL", raising=False)
    try:
        start_daemon(workdir, faults="")
        yield workdir
    finally:
        stop_daemon(workdir)
        mp.undo()


@pytest.fixture(autouse=True)
def _own_environment():  # type: ignore[no-untyped-def]
    """The demo points this process at the running stack (os.environ): put it back for the tests after."""
    import os

    from batchlane.runtime import reset_services

    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)
    reset_services()


def run(workdir, *args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(main, [*args, "--workdir", str(workdir), "--user", "operator"], catch_exceptions=False)


def test_a_local_folder_converts_and_its_report_and_failures_are_listed(local_stack, tmp_path):  # type: ignore[no-untyped-def]
    folder = tmp_path / "papers"
    (folder / "2024").mkdir(parents=True)
    (folder / "a.pdf").write_bytes(make_pdf(2))
    (folder / "2024" / "b.pdf").write_bytes(make_pdf(3))
    (folder / "broken.pdf").write_bytes(b"%PDF-1.4 not really")

    dry = run(local_stack, "convert", f"{folder}/", "--dry-run", "--json")
    assert dry.exit_code == 0, dry.output
    estimate = json.loads(dry.stdout.splitlines()[-1])
    assert estimate["created"] is False and estimate["files"]["toConvert"] == 3

    converted = run(local_stack, "convert", f"{folder}/", "--json")
    assert converted.exit_code == 3, converted.output  # completed with failures
    job = json.loads(converted.stdout.splitlines()[-1])
    assert job["status"] == "completed_with_failures" and job["files"]["completed"] == 2 and job["files"]["failed"] == 1

    failed = run(local_stack, "jobs", "files", job["id"], "--status", "failed", "--json")
    assert [(f["key"], (f["error"] or {}).get("code")) for f in json.loads(failed.stdout)["files"]] == [("users/operator/folders/papers/broken.pdf", "PDF_CORRUPT")]
    report = run(local_stack, "jobs", "report", job["id"])
    assert sorted(json.loads(line)["key"] for line in report.stdout.splitlines()) == [
        "users/operator/folders/papers/2024/b.pdf",
        "users/operator/folders/papers/a.pdf",
        "users/operator/folders/papers/broken.pdf",
    ]
    status = run(local_stack, "jobs", "status", job["id"], "--watch", "--json")
    assert status.exit_code == 3 and json.loads(status.stdout.splitlines()[-1])["id"] == job["id"]

    kept = run(local_stack, "convert", f"{folder}/", "--json")  # its Markdown is on the disk now: kept without --force
    assert kept.exit_code == 2 and json.loads(kept.stdout)["error"]["code"] == "USAGE"
    again = run(local_stack, "convert", f"{folder}/", "--json", "--force")  # the same spec: the same job, nothing converted again
    assert json.loads(again.stdout.splitlines()[-1])["id"] == job["id"]
    retried = run(local_stack, "retry", job["id"], "--error-id", "PDF_CORRUPT", "--json")
    assert retried.exit_code == 3, retried.output  # the broken file fails again; the two good ones were not touched
    files = json.loads(run(local_stack, "jobs", "files", job["id"], "--json").stdout)["files"]
    assert {f["key"]: f["attempts"] for f in files} == {
        "users/operator/folders/papers/2024/b.pdf": 1,
        "users/operator/folders/papers/a.pdf": 1,
        "users/operator/folders/papers/broken.pdf": 2,
    }


def test_demo_folder_twice_on_a_running_stack_converts_once(local_stack, tmp_path):  # type: ignore[no-untyped-def]
    folder = tmp_path / "reports"
    (folder / "a").mkdir(parents=True)
    (folder / "a" / "b.pdf").write_bytes(make_pdf(2))
    (folder / "c.pdf").write_bytes(make_pdf(3))

    def demo() -> dict:  # type: ignore[type-arg]
        from batchlane_dev.local.folder_demo import run_folder_demo

        return run_folder_demo(folder, out_dir=tmp_path / "out", workdir=local_stack)

    first = demo()
    assert first["status"] == "completed" and first["files"]["completed"] == 2 and first["pages"]["total"] == 5
    out = tmp_path / "out" / "reports"
    assert (out / "a" / "b.md").is_file() and (out / "c.md").is_file() and first["output_dir"] == str(out)
    assert (tmp_path / "out" / "reports" / "_batchlane" / first["job_id"] / "report.jsonl").is_file()
    assert first["total_cost_usd"] > 0 and first["all_on_demand_cost_usd"] >= first["total_cost_usd"]
    second = demo()
    assert second["job_id"] == first["job_id"] and second["total_cost_usd"] == first["total_cost_usd"]  # the same job: nothing converted or billed again


def test_demo_folder_json_from_the_command_line(local_stack, tmp_path):  # type: ignore[no-untyped-def]
    folder = tmp_path / "one"
    folder.mkdir()
    (folder / "x.pdf").write_bytes(make_pdf(2))
    result = CliRunner().invoke(
        main,
        ["demo", "--folder", str(folder), "--json", "--out", str(tmp_path / "out")],
        catch_exceptions=False,
        env={"BATCHLANE_LOCAL_WORKDIR": str(local_stack)},
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout.splitlines()[-1])
    assert component_errors(report, "FolderDemoReport") == []  # camelCase, amounts as decimal strings (docs/api/openapi.yaml)
    assert report["status"] == "completed" and Decimal(report["totalCostUsd"]) > 0


def test_a_local_folder_s_markdown_and_report_come_back_next_to_its_pdfs(local_stack, tmp_path):  # type: ignore[no-untyped-def]
    """Issue 24.2: `convert DIR/` leaves the results on the user's disk, as a single-file convert does; issue 39.4: each
    Markdown with its pages.jsonl and the figures it links beside it."""
    folder = tmp_path / "letters"
    (folder / "2025").mkdir(parents=True)
    (folder / "a.pdf").write_bytes(make_pdf(2))
    (folder / "2025" / "b.pdf").write_bytes(make_vector_chart_pdf())

    converted = run(local_stack, "convert", f"{folder}/", "--json", "--interval", "0.2")
    assert converted.exit_code == 0, converted.output
    job = json.loads(converted.stdout.splitlines()[-1])
    assert (folder / "a.md").read_text().startswith("<!-- Page 1 -->")
    assert [json.loads(line)["page"] for line in (folder / "a.pages.jsonl").read_text().splitlines()] == [1, 2]
    assert f"](b.images/p{VECTOR_CHART_PAGE}-1.png)" in (folder / "2025" / "b.md").read_text()
    assert (folder / "2025" / "b.images" / f"p{VECTOR_CHART_PAGE}-1.png").stat().st_size > 1000
    report = folder / "_batchlane" / job["id"] / "report.jsonl"
    assert len(report.read_text().splitlines()) == 2 and job["localOutput"]["reportPath"] == str(report)

    again = run(local_stack, "convert", f"{folder}/")
    assert again.exit_code == 2 and "pass --force" in again.stderr  # refused before upload: the Markdown on disk is kept
    elsewhere = tmp_path / "results"
    moved = run(local_stack, "convert", f"{folder}/", "-o", str(elsewhere), "--interval", "0.2")
    assert moved.exit_code == 0, moved.output
    assert (elsewhere / "a.md").is_file() and (elsewhere / "2025" / "b.md").is_file()


def test_the_folder_dry_run_says_its_lane_names_the_user_s_folder_and_the_files_that_will_fail(local_stack, tmp_path):  # type: ignore[no-untyped-def]
    """Issue 24.5: no `time on-demand ~30 s` for files that go through the batch lane, no Python dict, no s3:// URI."""
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "good.pdf").write_bytes(make_pdf(3))
    (folder / "notes.pdf").write_bytes(b"plain text saved with a .pdf name\n")
    (folder / "readme.txt").write_text("not converted")

    dry = run(local_stack, "convert", f"{folder}/", "--dry-run")
    assert dry.exit_code == 0, dry.output
    text = dry.stdout
    assert f"dry run of {folder}/" in text and "s3://" not in text and "{" not in text
    assert "lane      batch: priority normal" in text and "up to 24 h" in text
    assert "1 .pdf" not in text and "2 .pdf, 1 .txt" in text
    assert f"{folder}/notes.pdf: PDF_NOT_PDF" in text
    estimate = json.loads(run(local_stack, "convert", f"{folder}/", "--dry-run", "--json").stdout)
    assert estimate["files"]["toConvert"] == 2 and estimate["lane"]["name"] == "batch"


def test_demo_folder_on_a_running_stack_prints_a_table_and_the_job_is_the_caller_s(local_stack, tmp_path):  # type: ignore[no-untyped-def]
    """Issue 24.6: a table, not reprs; `jobs status fj-…` and `jobs list` find the job as the default user."""
    folder = tmp_path / "table"
    folder.mkdir()
    (folder / "x.pdf").write_bytes(make_pdf(2))
    shown = CliRunner().invoke(
        main, ["demo", "--folder", str(folder), "--out", str(tmp_path / "out")], catch_exceptions=False, env={"BATCHLANE_LOCAL_WORKDIR": str(local_stack)}
    )
    assert shown.exit_code == 0, shown.output
    assert "folder job fj-" in shown.stdout and "│ status" in shown.stdout and "{" not in shown.stdout
    job_id = shown.stdout.split("folder job ", 1)[1].split()[0]
    as_default_user = CliRunner().invoke(main, ["jobs", "status", job_id, "--workdir", str(local_stack)], catch_exceptions=False)
    assert as_default_user.exit_code == 0, as_default_user.output
    listed = CliRunner().invoke(main, ["jobs", "list", "--workdir", str(local_stack)], catch_exceptions=False)
    assert job_id in listed.stdout and "folder job" in listed.stdout
    assert "x.pdf" not in listed.stdout  # the folder file's own conversion is not mixed in …
    everything = CliRunner().invoke(main, ["jobs", "list", "--all", "--workdir", str(local_stack)], catch_exceptions=False)
    assert f"x.pdf  (in {job_id})" in everything.stdout  # … unless asked for, marked with its folder job

