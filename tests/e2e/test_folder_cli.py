"""Folder jobs from a terminal, against `batchlane local up` (a real daemon on a tmp workdir)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from batchlane_dev.cli.main import main
from batchlane_dev.local.daemon import start_daemon, stop_daemon
from batchlane_dev.local.pdfgen import make_pdf


@pytest.fixture(scope="module")
def local_stack(tmp_path_factory):  # type: ignore[no-untyped-def]
    workdir = tmp_path_factory.mktemp("local")
    mp = pytest.MonkeyPatch()
    mp.delenv("DATABASE_URL", raising=False)
    mp.delenv("BATCHLANE_API_URL", raising=False)
    try:
        start_daemon(workdir, faults="")
        yield workdir
    finally:
        stop_daemon(workdir)
        mp.undo()


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
    assert estimate["created"] is False and estimate["files"]["to_convert"] == 3

    converted = run(local_stack, "convert", f"{folder}/", "--json")
    assert converted.exit_code == 3, converted.output  # completed with failures
    job = json.loads(converted.stdout.splitlines()[-1])
    assert job["status"] == "completed_with_failures" and job["files"]["completed"] == 2 and job["files"]["failed"] == 1

    failed = run(local_stack, "jobs", "files", job["id"], "--status", "failed", "--json")
    assert [(f["key"], f["error_id"]) for f in json.loads(failed.stdout)["files"]] == [("folders/papers/broken.pdf", "PDF_CORRUPT")]
    report = run(local_stack, "jobs", "report", job["id"])
    assert sorted(json.loads(line)["key"] for line in report.stdout.splitlines()) == [
        "folders/papers/2024/b.pdf",
        "folders/papers/a.pdf",
        "folders/papers/broken.pdf",
    ]
    status = run(local_stack, "jobs", "status", job["id"], "--watch", "--json")
    assert status.exit_code == 3 and json.loads(status.stdout.splitlines()[-1])["id"] == job["id"]

    again = run(local_stack, "convert", f"{folder}/", "--json")  # the same spec: the same job, nothing converted again
    assert json.loads(again.stdout.splitlines()[-1])["id"] == job["id"]
    retried = run(local_stack, "retry", job["id"], "--error-id", "PDF_CORRUPT", "--json")
    assert retried.exit_code == 3, retried.output  # the broken file fails again; the two good ones were not touched
    files = json.loads(run(local_stack, "jobs", "files", job["id"], "--json").stdout)["files"]
    assert {f["key"]: f["attempts"] for f in files} == {"folders/papers/2024/b.pdf": 1, "folders/papers/a.pdf": 1, "folders/papers/broken.pdf": 2}
