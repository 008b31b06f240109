"""The operator flow from a terminal, against `batchlane local up` (a real daemon on a tmp workdir).

convert --detach → jobs status (waiting for its batch) → process-now → jobs status --watch
(completed); convert --detach → cancel → the file is back to uploaded, the hold released;
and the exit codes and error lines a script relies on.
"""

from __future__ import annotations

import json
import uuid

import pytest
from click.testing import CliRunner

from batchlane_dev.cli.main import main
from batchlane_dev.local.daemon import start_daemon, stop_daemon
from batchlane_dev.local.jobs import wait_until
from batchlane_dev.local.pdfgen import make_pdf


@pytest.fixture(scope="module")
def local_stack(tmp_path_factory):  # type: ignore[no-untyped-def]
    workdir = tmp_path_factory.mktemp("local")
    mp = pytest.MonkeyPatch()
    for key, value in {"BATCH_CONVERSION_MIN_PAGES": "40", "BATCH_CONVERSION_MIN_RECORDS": "10", "BATCHLANE_PAGES_PER_CHUNK": "20", "BATCH_POOL_WINDOW_MINUTES": "0"}.items():
        mp.setenv(key, value)  # inherited by the daemon
    mp.delenv("DATABASE_URL", raising=False)
    mp.delenv("BATCHLANE_API_URL", raising=False)
    try:
        start_daemon(workdir, faults="")  # the daemon's default: a batch job takes minutes
        yield workdir
    finally:
        stop_daemon(workdir)
        mp.undo()


PRIORITY_OPERATOR = "operator;groups=batchlane-priority"  # a local token with the group process-now needs


def run(workdir, *args: str, user: str = "operator"):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(main, [*args, "--workdir", str(workdir), "--user", user], catch_exceptions=False)


def status(workdir, job_id: str) -> dict:  # type: ignore[no-untyped-def]
    result = run(workdir, "jobs", "status", job_id, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_convert_wait_process_now_and_cancel(local_stack, tmp_path):
    pdf = tmp_path / "big.pdf"
    pdf.write_bytes(make_pdf(60, blank_every=15))

    converted = run(local_stack, "convert", str(pdf), "--detach")
    assert converted.exit_code == 0, converted.output
    job_id = converted.stdout.strip()
    uuid.UUID(job_id)
    # creation is asynchronous: the job shows splitting until the intake has split it
    waiting = wait_until(lambda: (s := status(local_stack, job_id))["status"] != "splitting" and s, what="the split")
    assert waiting["status"] == "waiting_batch" and waiting["batchWaiting"] is True

    listed = run(local_stack, "jobs", "list", "--status", "waiting_batch")
    assert listed.exit_code == 0 and job_id in listed.stdout

    moved = run(local_stack, "process-now", job_id, user=PRIORITY_OPERATOR)
    assert moved.exit_code == 0, moved.output
    assert "on-demand" in moved.stdout
    watched = run(local_stack, "jobs", "status", job_id, "--watch", "--json", "--interval", "0.2")
    assert watched.exit_code == 0, watched.output
    done = json.loads(watched.stdout)
    assert done["status"] == "completed" and done["pages"]["done"] == 60 and done["hold"]["outcome"] == "settled"

    again = run(local_stack, "process-now", job_id, user=PRIORITY_OPERATOR)
    assert again.exit_code == 6 and "error: NOT_BATCH_WAITING:" in again.stderr

    second = run(local_stack, "convert", str(pdf), "--detach", "--json")
    assert second.exit_code == 0, second.output
    detached = json.loads(second.stdout)
    second_id = detached["jobId"]
    assert set(detached) == set(status(local_stack, second_id)), "convert --detach --json and jobs status --json: one shape"
    assert detached["status"] in ("splitting", "waiting_batch") and "pages" in detached and "errorId" not in detached and "error" in detached
    wait_until(lambda: status(local_stack, second_id)["status"] != "splitting", what="the split")  # so the hold exists
    cancelled = run(local_stack, "cancel", second_id)
    assert cancelled.exit_code == 0, cancelled.output
    assert "file back to uploaded" in cancelled.stdout
    after = status(local_stack, second_id)
    assert after["status"] == "cancelled" and after["hold"]["outcome"] == "cancelled"
    files = json.loads(run(local_stack, "jobs", "list", "--json").stdout)["jobs"]
    assert {f["conversion"]["jobId"]: f["status"] for f in files}[second_id] == "uploaded"
    assert run(local_stack, "jobs", "status", second_id, "--watch").exit_code == 1  # ended cancelled


def test_exit_codes_for_unknown_foreign_and_unreachable(local_stack, tmp_path):
    missing = run(local_stack, "jobs", "status", str(uuid.uuid4()))
    assert missing.exit_code == 5 and "error: JOB_NOT_FOUND:" in missing.stderr
    pdf = tmp_path / "small.pdf"
    pdf.write_bytes(make_pdf(3))
    job_id = run(local_stack, "convert", str(pdf), "--detach").stdout.strip()
    foreign = run(local_stack, "cancel", job_id, user="somebody-else")
    assert foreign.exit_code == 5
    nowhere = CliRunner().invoke(main, ["jobs", "list", "--workdir", str(tmp_path / "no-stack")])
    assert nowhere.exit_code == 4 and "batchlane local up" in nowhere.stderr


def test_a_bad_pdf_ends_failed_with_its_error_id_in_the_cli(local_stack, tmp_path):
    pdf = tmp_path / "cut.pdf"
    data = make_pdf(5)
    pdf.write_bytes(data[: len(data) // 2])
    watched = run(local_stack, "convert", str(pdf), "--interval", "0.2")
    assert watched.exit_code == 2, watched.output  # the user's input, found by the split: exit 2 as before upload (issue 41.4)
    assert "splitting" in watched.stderr  # the convert answered at once, before the split
    assert "error   PDF_CORRUPT:" in watched.stdout
    job_id = json.loads(run(local_stack, "jobs", "list", "--json").stdout)["jobs"][0]["conversion"]["jobId"]
    assert status(local_stack, job_id)["error"]["code"] == "PDF_CORRUPT"


def test_convert_with_a_webhook_and_read_its_deliveries(local_stack, tmp_path):
    from tests.webhook_receiver import Receiver, readme_verify

    hook = Receiver()
    try:
        # The user's own signing secret: created by their first `webhooks config`, which shows it (once)
        config = run(local_stack, "webhooks", "config", "--json")
        assert config.exit_code == 0, config.output
        shown = json.loads(config.stdout)
        assert shown["shownOnce"] is True and shown["version"] == 1
        secret = shown["secret"]
        again = json.loads(run(local_stack, "webhooks", "config", "--json").stdout)
        assert "secret" not in again and again["version"] == 1
        pdf = tmp_path / "hooked.pdf"
        pdf.write_bytes(make_pdf(3))
        bad = run(local_stack, "convert", str(pdf), "--callback-url", "ftp://example.com/hook")
        assert bad.exit_code == 2 and "error: CALLBACK_INVALID:" in bad.stderr
        converted = run(local_stack, "convert", str(pdf), "--callback-url", hook.url, "--callback-events", "job.completed,file.completed", "--json")
        assert converted.exit_code == 0, converted.output
        job_id = json.loads(converted.stdout)["jobId"]
        got = hook.wait_for(2)
        assert sorted(r.json["event"] for r in got) == ["file.completed", "job.completed"]
        assert all(readme_verify()(secret, hook.url, r.body, r.headers["Batchlane-Signature"]) for r in got)
        listed = wait_until(
            lambda: (
                (d := json.loads(run(local_stack, "webhooks", "deliveries", "--job", job_id, "--json").stdout)["deliveries"])
                and all(x["status"] == "delivered" for x in d)
                and d
            ),
            what="the deliveries to be recorded",
        )
        assert len(listed) == 2 and {x["responseCode"] for x in listed} == {200}
        rotated = run(local_stack, "webhooks", "rotate", "--json")  # their own: no group needed
        assert rotated.exit_code == 0, rotated.output
        new = json.loads(rotated.stdout)
        assert new["version"] == 2 and new["secret"] != secret and new["previousValidUntil"]
    finally:
        hook.stop()


def test_jobs_list_keeps_its_columns_in_line_when_a_job_waits_for_its_batch(local_stack, tmp_path):
    """Issue 24.9: the batch column of a waiting job used to push its file name out of line."""
    user = f"lister-{uuid.uuid4().hex[:6]}"
    big, small = tmp_path / "big.pdf", tmp_path / "small.pdf"
    big.write_bytes(make_pdf(60, blank_every=15))
    small.write_bytes(make_pdf(3))
    waiting = run(local_stack, "convert", str(big), "--detach", user=user).stdout.strip()
    assert run(local_stack, "convert", str(small), "--interval", "0.2", user=user).exit_code == 0
    wait_until(lambda: status_of(local_stack, waiting, user)["batch"], what="the lane")
    header, *lines = run(local_stack, "jobs", "list", user=user).stdout.splitlines()
    assert header.startswith("CREATED") and len(lines) == 2 and any("batch " in line for line in lines)
    assert len({line.index(".pdf") - len(name) for line, name in zip(lines, ("small", "big"), strict=True)}) == 1, lines
    run(local_stack, "cancel", waiting, user=user)


def status_of(workdir, job_id: str, user: str) -> dict:  # type: ignore[no-untyped-def]
    result = run(workdir, "jobs", "status", job_id, "--json", user=user)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)
