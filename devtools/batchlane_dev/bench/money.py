"""money_paths: what a user is told against what is billed, path by path, on a real PDF (issue 38).

One offline stack; the same real manual (Debian's libtasn1, 36 pages; ``--smoke``: preview-latex-style's 8) converted
on every path: on-demand (the baseline: what all on-demand bills), batch complete, five scanned pages (ImageMagick and
img2pdf, local/scanpdf.py), partial batch (record errors, an
expired job), a bulk job below the pool's minimum (``pool_too_small``), process now before and after the Bedrock job
was submitted, cancel while it runs, a retry of refused pages, Flex. For each path:

* ``estimateErrorPct`` — the API's dry run (asked just before the job was created) against the bill: its figure for the
  lane the job took; a bill mixing lanes (part batch, part on-demand) is held to the range of its two figures (0 inside,
  else the distance to the nearer); none where no estimate can foresee the cost (a cancel, refused pages, Flex's discount);
* ``billedMinusEmulatorUsd`` — the job's ledger less the emulator's own bill for what it served (tokens × price per
  call and per batch job): must be 0;
* ``savingShownUsd`` / ``savingMeasuredUsd`` — the saving the API shows (domain/savings.py) against the one measured:
  the on-demand run's bill less this run's.

``value`` is the largest estimate error (%), ``baseline`` the aim (15 %): ``ratio`` ≤ 1 meets it.
"""

from __future__ import annotations

import io
import json
import os
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from batchlane_dev.bench import figure, size, wanted
from batchlane_dev.local import scanpdf

NAMES = ("money_paths",)
LIBTASN1 = Path("/usr/share/doc/libtasn1-doc/libtasn1.pdf")
PREVIEW = Path("/usr/share/doc/preview-latex-style/preview.pdf")
FAST = "time_scale=36000,job_hours=0.5"
OWNER, USER = "bench", "bench;groups=batchlane-priority"
AIM_PCT = 15.0


def figures(args: Any) -> Iterator[dict[str, Any]]:
    if wanted(args, "money_paths"):
        yield money_paths(size(args, "full", "full", "smoke"))


def _call(stack: Any, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    request = urllib.request.Request(
        stack.env["BATCHLANE_API_URL"] + path,
        data=json.dumps(body or {}).encode() if method == "POST" else None,
        method=method,
        headers={"Authorization": f"Bearer local:{USER}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


class _Paths:
    """The stack and what each path measured."""

    def __init__(self, stack: Any, pdf: bytes, small: bytes) -> None:
        from batchlane.runtime import services

        self.stack, self.svc, self.pdf, self.small = stack, services(), pdf, small
        self.rows: list[dict[str, Any]] = []
        self.on_demand_usd = Decimal(0)

    def job(self, job_id: str) -> Any:
        return self.svc.uow().jobs.get_job(job_id)

    def create(self, data: bytes, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        from batchlane_dev.local.jobs import upload_pdf

        file_id = upload_pdf(self.svc, data, name="manual.pdf", owner_id=OWNER)
        status, dry = _call(self.stack, "POST", f"/api/v1/files/{file_id}/convert?dry_run=true", {"options": options or {}})
        assert status == 202, dry  # an asynchronous estimate (decision 0035): answered by its worker
        from batchlane_dev.local.jobs import wait_until

        wait_until(lambda: (view := _call(self.stack, "GET", dry["poll"])[1])["status"] != "running" and dry.update(view) is None, timeout_s=120, what="the estimate")
        assert dry["status"] == "completed", dry
        dry = dry["result"]
        status, created = _call(self.stack, "POST", f"/api/v1/files/{file_id}/convert", {"options": options or {}})
        assert status == 202, created
        return str(created["jobId"]), dry["estimate"]

    def wait(self, job_id: str, *, until: tuple[str, ...] = ("completed", "failed", "cancelled")) -> None:
        from batchlane_dev.local.jobs import wait_until

        wait_until(lambda: self.job(job_id).status in until, timeout_s=600, poll_s=0.25, what=f"job {job_id}")

    def settled(self, job_id: str) -> None:
        """Wait until nothing more is booked for the job (a stopped batch job's lane, a cancelled chunk)."""
        from batchlane_dev.local.jobs import wait_until

        def quiet() -> bool:
            lanes = self.svc.db.run(
                "SELECT state FROM lanes WHERE id IN (SELECT lane_row_id FROM batch_members WHERE job_id = CAST(:id AS uuid))", id=job_id
            )
            return all(row["state"] == "closed" for row in lanes)

        wait_until(quiet, timeout_s=600, poll_s=0.25, what=f"the lanes of job {job_id} closed")

    def batch_job(self, job_id: str) -> Any:
        row = self.svc.db.one(
            """SELECT bedrock_job_arn FROM lanes WHERE id IN (SELECT lane_row_id FROM batch_members WHERE job_id = CAST(:id AS uuid))
               ORDER BY id DESC LIMIT 1""",
            id=job_id,
        )
        return self.stack.bedrock.jobs.get(row["bedrock_job_arn"]) if row and row["bedrock_job_arn"] else None

    def record(self, path: str, job_id: str, estimate: dict[str, Any] | None, since: Any, *, lane: str, like_for_like: bool = True) -> None:
        """``like_for_like``: False where an on-demand run of the same PDF is no measure of the saving (the job was
        cancelled, pages were refused, Flex's own discount)."""
        money = self.svc.uow().reads.ledger_money(job_id)
        billed = money.total_usd
        emulator = self.stack.bedrock.bill(self.svc.prices, since=since)["total"]
        error = None
        if estimate is not None and billed:
            low, high = Decimal(estimate["batchUsd"]), Decimal(estimate["onDemandUsd"])
            if lane == "mixed":  # part batch, part on-demand: the dry run's two figures bound it; outside, the nearer bound is the error
                nearest = billed if low <= billed <= high else min((low, high), key=lambda bound: abs(bound - billed))
            else:
                nearest = low if lane == "batch" else high
            error = round(float((nearest - billed) / billed * 100), 2)
        measured = self.on_demand_usd - billed if self.on_demand_usd and like_for_like else None
        self.rows.append(
            {
                "path": path,
                "status": self.job(job_id).status,
                "lane": lane,
                "estimateLane": estimate["lane"] if estimate else None,
                "estimateErrorPct": error,
                "billedUsd": str(billed),
                "emulatorBillUsd": str(emulator),
                "billedMinusEmulatorUsd": str(billed - emulator),
                "allOnDemandUsd": str(money.all_on_demand_usd),
                "savingShownUsd": str(money.saving_usd),
                "savingMeasuredUsd": None if measured is None else str(measured),
                "savingGapPct": round(float((money.saving_usd - measured) / self.on_demand_usd * 100), 2) if measured is not None else None,
            }
        )

    # -- the paths ------------------------------------------------------------------------------
    def plain(self, path: str, data: bytes, options: dict[str, Any], *, lane: str, faults: str | None = None, like_for_like: bool = True) -> str:
        from batchlane_dev.local.bedrock.faults import parse_faults

        if faults:
            self.stack.bedrock.set_batch_faults(parse_faults(faults))
        try:
            since = self.stack.bedrock.mark()
            job_id, estimate = self.create(data, options)
            self.wait(job_id)
            self.settled(job_id)
        finally:
            self.stack.bedrock.set_batch_faults(parse_faults(FAST))
        self.record(path, job_id, estimate, since, lane=lane, like_for_like=like_for_like)
        return job_id

    def process_now_before_submit(self) -> None:
        from batchlane_dev.local.lambda_runtime import Invocation

        self.stack.registry.intercept("batch_packer", lambda event, call_real: Invocation(result={"claimed": []}))
        try:
            since = self.stack.bedrock.mark()
            job_id, estimate = self.create(self.pdf, {"batchLane": True})
            self.wait(job_id, until=("waiting_batch", "failed"))
            status, body = _call(self.stack, "POST", f"/api/v1/files/{self.job(job_id).file_id}/process-now")
            assert status == 200, body
        finally:
            self.stack.registry.intercept("batch_packer", None)
        self.wait(job_id)
        self.record("process_now_before_submit", job_id, estimate, since, lane="on_demand")

    def while_batch_runs(self, path: str, action: str) -> None:
        from batchlane_dev.local.bedrock.faults import parse_faults
        from batchlane_dev.local.jobs import wait_until

        self.stack.bedrock.set_batch_faults(parse_faults("record_cost_ms=300"))
        try:
            since = self.stack.bedrock.mark()
            job_id, estimate = self.create(self.pdf, {"batchLane": True})
            wait_until(lambda: (b := self.batch_job(job_id)) is not None and b.processed >= 3, timeout_s=300, poll_s=0.1, what="the Bedrock job part-way")
            status, body = _call(self.stack, "POST", f"/api/v1/files/{self.job(job_id).file_id}/{action}")
            assert status == 200, body
            self.wait(job_id)
            self.settled(job_id)
        finally:
            self.stack.bedrock.set_batch_faults(parse_faults(FAST))
        cancelled = action == "cancel"
        self.record(path, job_id, None if cancelled else estimate, since, lane="mixed", like_for_like=not cancelled)

    def retry(self) -> None:
        from batchlane_dev.local.bedrock.faults import parse_faults
        from batchlane_dev.local.jobs import wait_until

        self.stack.bedrock.set_runtime_faults(parse_faults(f"{FAST},refuse_pages=3"))
        try:
            since = self.stack.bedrock.mark()
            job_id, _ = self.create(self.pdf)
            self.wait(job_id)
        finally:
            self.stack.bedrock.set_runtime_faults(parse_faults(FAST))
        status, body = _call(self.stack, "POST", f"/api/v1/jobs/{job_id}/retry", {})
        assert status == 202, body
        wait_until(lambda: (j := self.job(job_id)).status == "completed" and not j.pages_failed, timeout_s=600, poll_s=0.25, what="the retry")
        self.record("retry_of_failed_pages", job_id, None, since, lane="on_demand", like_for_like=False)

    def flex(self) -> None:
        from batchlane.db.service_tiers import record_probe
        from batchlane_dev.local.bedrock.faults import parse_faults

        model = self.svc.settings.batchlane_model_id
        record_probe(self.svc.db, {"modelId": model, "serviceTier": "flex", "accepted": True})
        self.stack.bedrock.set_runtime_faults(parse_faults(f"{FAST},flex_models=*,flex_served_as_default_rate=0.3,flex_throttle_rate=0.1"))
        try:
            since = self.stack.bedrock.mark()
            job_id, _ = self.create(self.pdf, {"deadline": (datetime.now(UTC) + timedelta(hours=6)).isoformat()})
            self.wait(job_id)
        finally:
            self.stack.bedrock.set_runtime_faults(parse_faults(FAST))
            record_probe(self.svc.db, {"modelId": model, "serviceTier": "flex", "accepted": False})
        self.record("flex", job_id, None, since, lane="on_demand", like_for_like=False)  # the dry run quotes the default tier


def _first_pages(data: bytes, pages: int) -> bytes:
    from pypdf import PdfReader, PdfWriter

    reader, writer = PdfReader(io.BytesIO(data)), PdfWriter()
    for page in reader.pages[:pages]:
        writer.add_page(page)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def money_paths(scale: str) -> dict[str, Any]:
    from batchlane_dev.local.stack import OfflineStack, StackOptions

    smoke = scale == "smoke"
    pdf = (PREVIEW if smoke else LIBTASN1).read_bytes()
    small = _first_pages(pdf, 3)  # below the pool's minimum: pool_too_small
    env = {
        "BATCH_CONVERSION_MIN_RECORDS": "5" if smoke else "10",
        "BATCHLANE_PAGES_PER_CHUNK": "20",
        "BATCH_CONVERSION_GRACE_HOURS": "24",
        "BATCH_POOL_WINDOW_MINUTES": "0",
        "BATCHLANE_FLEX_DISCOUNT": "0.5",
    }
    with tempfile.TemporaryDirectory(prefix="bench-money-") as workdir:
        options = StackOptions(workdir=Path(workdir), faults=FAST, database_url=os.environ.get("DATABASE_URL"), extra_env=env)
        with OfflineStack(options) as stack:
            paths = _Paths(stack, pdf, small)
            baseline = paths.plain("on_demand", pdf, {}, lane="on_demand")
            paths.on_demand_usd = paths.svc.uow().reads.ledger_money(baseline).total_usd
            paths.rows[0]["savingMeasuredUsd"], paths.rows[0]["savingGapPct"] = "0", 0.0
            paths.plain("batch_complete", pdf, {"batchLane": True}, lane="batch")
            if not smoke:  # --smoke: the two paths above prove the figure still runs
                paths.plain("pool_too_small", small, {"batchLane": True}, lane="on_demand")
                if scanpdf.tools_present():  # scanned pages (ImageMagick, img2pdf): five image-only pages, on-demand
                    built = scanpdf.build(Path(workdir) / "scans")
                    scanned = scanpdf.merged([built[kind] for kind in scanpdf.SCANS])
                    paths.plain("scanned_pages_on_demand", scanned, {}, lane="on_demand", like_for_like=False)
                paths.plain("partial_batch_record_errors", pdf, {"batchLane": True}, lane="mixed", faults=f"{FAST},record_error_rate=0.25")
                paths.plain("partial_batch_expired", pdf, {"batchLane": True}, lane="mixed", faults=f"{FAST},job_outcome=expired,records_per_hour=20000")
                paths.process_now_before_submit()
                paths.while_batch_runs("process_now_after_submit", "process-now")
                paths.while_batch_runs("cancel_while_batch_runs", "cancel")
                paths.retry()
                paths.flex()
    rows = paths.rows
    for row in rows:
        if row["path"] == "pool_too_small":  # its first pages only: no on-demand run of the same pages to measure against
            row["savingMeasuredUsd"], row["savingGapPct"] = None, None
    errors = [abs(r["estimateErrorPct"]) for r in rows if r["estimateErrorPct"] is not None]
    return figure(
        "money_paths",
        max(errors) if errors else 0.0,
        "pct",
        AIM_PCT,
        baseline_is="the aim: every estimate within 15 % of its bill",
        pdf=("preview.pdf (8 pages)" if smoke else "libtasn1.pdf (36 pages)"),
        billed_minus_emulator_max_usd=str(max((abs(Decimal(r["billedMinusEmulatorUsd"])) for r in rows), default=Decimal(0))),
        saving_gap_max_pct=max((abs(r["savingGapPct"]) for r in rows if r["savingGapPct"] is not None), default=0.0),
        paths=rows,
    )
