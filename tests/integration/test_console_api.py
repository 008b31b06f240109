"""The API additions the web console needs (issue 25): one /api/v1 prefix, live money and ETA on a job,
a ranged read of the source PDF, the caller's folder jobs. Every one checks the owner (404 for another)."""

from __future__ import annotations

import json
import os
import subprocess
import urllib.request
import uuid
from datetime import datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal

from click.testing import CliRunner

from batchlane.db import folder_jobs as folder_repo
from batchlane.db import ledger
from batchlane.domain.savings import BATCH_SERVED_KEY
from batchlane.folders.spec import parse_spec
from batchlane.runtime import services
from batchlane_dev.cli.main import main
from batchlane_dev.local.api_server import CONSOLE_DIR as CONSOLE_DIST
from tests.integration.test_api import PDF, call, make_job, owner, stack  # the fixtures, with __all__ below

__all__ = ["owner", "stack"]


def _price(tokens_in: int, tokens_out: int, *, half: bool = False) -> Decimal:
    """The model's list price for the tokens, from the deployment's price table (per million tokens)."""
    price = services().settings.batchlane_prices[services().settings.batchlane_model_id]
    usd = (Decimal(str(price["input_per_mtok"])) * tokens_in + Decimal(str(price["output_per_mtok"])) * tokens_out) / Decimal(1_000_000)
    return (usd / 2 if half else usd).quantize(Decimal("0.000001"), rounding=ROUND_HALF_UP)


def test_the_file_list_answers_under_v1_and_the_old_path_alike(stack, owner):
    file_id, _ = make_job(owner, "pending")
    status, v1 = call(stack, "GET", "/api/v1/files", user=owner)
    assert status == 200 and [f["fileId"] for f in v1["files"]] == [file_id]
    assert call(stack, "GET", "/api/files", user=owner)[1]["files"][0]["fileId"] == file_id  # deprecated alias
    assert call(stack, "GET", "/api/v1/files", user=f"intruder-{owner}")[1]["files"] == []


def test_a_job_shows_its_cost_so_far_its_saving_against_on_demand_and_when_the_batch_limit_ends(stack, owner):
    _, job_id = make_job(owner, "waiting_batch", row_state="submitted")
    model = services().settings.batchlane_model_id
    with services().db.transaction() as tx:  # one chunk on demand, 100k/20k tokens of the batch lane at half price
        ledger.PgLedger(tx).add_chunk_cost(
            job_id=job_id, chunk_index=1, model_id=model, input_tokens=9000, output_tokens=3000, cost_usd=_price(9000, 3000), metadata={}
        )
        lane = tx.one("SELECT lane_row_id FROM batch_members WHERE job_id = CAST(:id AS uuid) LIMIT 1", id=job_id)
        ledger.PgLedger(tx).add_batch_share(job_id=job_id, lane_row_id=lane["lane_row_id"], model_id=model, input_tokens=100_000, output_tokens=20_000,
            cost_usd=_price(100_000, 20_000, half=True), metadata={BATCH_SERVED_KEY: str(_price(100_000, 20_000))},
        )  # fmt: skip
    status, body = call(stack, "GET", f"/api/v1/jobs/{job_id}", user=owner)
    assert status == 200
    live = body["live"]
    assert Decimal(live["costSoFarUsd"]) == _price(9000, 3000) + _price(100_000, 20_000, half=True)
    assert Decimal(live["onDemandUsd"]) == _price(9000, 3000) + _price(100_000, 20_000)
    assert Decimal(live["savingUsd"]) == _price(100_000, 20_000) - _price(100_000, 20_000, half=True)
    # waiting for the Bedrock job: it ends by its submission + the lane's limit (scaled offline), then on-demand takes over
    assert live["eta"]["basis"] == "batch_limit" and live["batchTimeoutHours"] == 24
    submitted = datetime.fromisoformat(body["batch"]["submittedAt"])
    hours = 24 / services().settings.batchlane_time_scale
    assert abs(datetime.fromisoformat(live["eta"]["at"]) - (submitted + timedelta(hours=hours))) < timedelta(seconds=1)
    listed = call(stack, "GET", "/api/v1/files", user=owner)[1]["files"][0]["conversion"]["live"]
    assert listed["costSoFarUsd"] == live["costSoFarUsd"]
    assert call(stack, "GET", f"/api/v1/jobs/{job_id}", user=f"intruder-{owner}")[0] == 404


def test_the_source_pdf_is_read_a_range_at_a_time_through_a_presigned_url(stack, owner):
    _, job_id = make_job(owner, "processing")
    status, body = call(stack, "GET", f"/api/v1/jobs/{job_id}/source", user=owner)
    assert status == 200 and body["sizeBytes"] == len(PDF)
    request = urllib.request.Request(body["url"], headers={"Range": "bytes=0-99"})
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 206 and response.read() == PDF[:100]
    assert call(stack, "GET", f"/api/v1/jobs/{job_id}/source", user=f"intruder-{owner}")[0] == 404
    assert call(stack, "GET", f"/api/v1/jobs/{uuid.uuid4()}/source", user=owner)[0] == 404


def test_the_folder_job_list_holds_the_callers_jobs_only(stack, owner):
    job_id = f"fj-{uuid.uuid4().hex[:24]}"
    spec = parse_spec({"input": {"folder": "s3://in/x/"}, "output": {"layout": "mirror", "folder": "s3://out/y/"}}).model_dump(mode="json")
    folder_repo.PgFolderJobs(services().db).add(job_id=job_id, owner_id=owner, name="invoices", spec=spec, source=("in", "x/"), target=("out", "y/"))
    try:
        status, body = call(stack, "GET", "/api/v1/folder-jobs", user=owner)
        assert status == 200 and [j["id"] for j in body["folderJobs"]] == [job_id] and body["folderJobs"][0]["name"] == "invoices"
        assert call(stack, "GET", "/api/v1/folder-jobs", user=f"intruder-{owner}")[1]["folderJobs"] == []
    finally:
        services().db.run("DELETE FROM folder_jobs WHERE id = :id", id=job_id)


def test_the_offline_stack_serves_the_console_on_the_api_origin_with_its_csp_and_status_prints_its_url(stack, tmp_path):
    console_url = stack.env["BATCHLANE_CONSOLE_URL"]
    assert console_url == stack.env["BATCHLANE_API_URL"] + "/"  # same origin as /api: no CORS
    if not (CONSOLE_DIST / "index.html").is_file():
        subprocess.run(["make", "console"], cwd=CONSOLE_DIST.parents[1], check=True)
    with urllib.request.urlopen(console_url, timeout=30) as response:
        csp = response.headers["Content-Security-Policy"]
        assert response.status == 200 and '<div id="app">' in response.read().decode()
    assert "default-src 'self'" in csp and "frame-ancestors 'none'" in csp and "unsafe-inline" not in csp
    # `batchlane local status --json` reads what `local up` published (daemon.publish: state.json)
    (tmp_path / "state.json").write_text(json.dumps({"pid": os.getpid(), "status": "ready", "started_at": "now", "env": stack.env}))
    result = CliRunner().invoke(main, ["local", "status", "--workdir", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["consoleUrl"] == console_url
