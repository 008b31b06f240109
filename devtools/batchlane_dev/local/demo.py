"""The main job, offline: start the stack, convert a PDF end to end, report, stop.

Everything runs on this machine: real PostgreSQL, moto's S3 / Step Functions /
EventBridge executing the real state-machine files with the real handlers, and the
Bedrock emulator, whose "model" reads each page's own text layer (labelled as emulated
in the report: it is not Claude).
"""

from __future__ import annotations

import io
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from batchlane.pdf.bounded import Bound, OverBudget, run_bounded
from batchlane.pdf.survey import SURVEY_BOUND
from batchlane.runtime import services
from batchlane_dev.local.bedrock import parse_faults
from batchlane_dev.local.bedrock.clock import scale_for_job
from batchlane_dev.local.bedrock.model import EMULATED_MODEL_LABEL, ModelInputError, page_markdown
from batchlane_dev.local.jobs import TERMINAL, submit_pdf, wait_for_job
from batchlane_dev.local.outputs import write_job_outputs
from batchlane_dev.local.pdfgen import make_pdf
from batchlane_dev.local.stack import OfflineStack, StackOptions
from batchlane_dev.report import job_report

# Without a time_scale fault the clock is sized to the document (clock.scale_for_job,
# docs/offline.md "Time offline"): a fixed 7200 was too fast for 10,000 pages (the emulator
# fell behind, our wait timed out first and half the records went on-demand).


# A user's own PDF (``--pdf``): the emulator's cost of one of its records is timed on a few of its pages before the
# stack starts, since a real book's page (drawings, fonts) costs the emulator far more than the calibrated 10 ms of a
# generated one: the PGF manual at the generated pages' scale (×726) fell hours behind, its job was stopped overdue
# and hundreds of pages went on-demand. The sample runs on an idle process; the job's records run beside the
# handlers, hence the headroom.
SAMPLE_PAGES = 8
SAMPLE_HEADROOM = 2.0


def sampled_record_cost_ms(data: bytes, *, bound: Bound = SURVEY_BOUND, model: Callable[..., str] = page_markdown) -> float | None:
    """The sampled cost of :func:`sample_pdf`."""
    return sample_pdf(data, bound=bound, model=model)[0]


def sample_pdf(data: bytes, *, bound: Bound = SURVEY_BOUND, model: Callable[..., str] = page_markdown) -> tuple[float | None, int]:
    """(ms a record, pages): the emulator's model (visual mode, the dearer) timed on up to ``SAMPLE_PAGES`` pages spread over ``data``,
    mean × ``SAMPLE_HEADROOM``, in ms a record (None when ``data`` is a PDF the product would refuse or cannot
    be read within ``bound``), and its page count (1 when unknown). A user's PDF is opened only in a child bounded like the product's own survey
    (pdf/bounded.py): a page tree nested thousands deep or a content bomb ends the sampling, never the demo. ``model`` runs in
    that child, so it must be picklable (a module-level function)."""
    try:
        return run_bounded(_sample_in_process, data, model, bound=bound)
    except OverBudget:  # the product's survey stops at the same bound: the job will say PDF_TOO_COMPLEX
        return None, 1


def _sample_in_process(data: bytes, model: Callable[..., str]) -> tuple[float | None, int]:
    """What the bounded child runs: cut the sample pages, then time the model on each."""
    import pypdfium2 as pdfium

    from batchlane.pdf.split import PDFIUM_LOCK

    pages: list[bytes] = []
    with PDFIUM_LOCK:  # cut at C speed (a real book's page through pypdf's writer took seconds); the model below locks itself
        try:
            source = pdfium.PdfDocument(data)
        except pdfium.PdfiumError:  # not a PDF: the job will say so with its error id
            return None, 1
        count = 1
        try:
            count = len(source)
            for index in sorted({round(i * (count - 1) / (SAMPLE_PAGES - 1)) for i in range(SAMPLE_PAGES)}) if count else []:
                one = pdfium.PdfDocument.new()
                try:
                    one.import_pages(source, [index])
                except pdfium.PdfiumError:  # a page tree pdfium cannot walk (nested thousands deep): the job says why
                    return None, max(count, 1)
                buffer = io.BytesIO()
                one.save(buffer)
                one.close()
                pages.append(buffer.getvalue())
        finally:
            source.close()
    if not pages:
        return None, max(count, 1)
    spent: list[float] = []
    for page in pages:
        started = time.perf_counter()
        try:
            model(page, visual=True)  # a batch record is a Messages body: always visual (model._read_messages)
        except ModelInputError:  # the emulator answers such a record with an error: cheap, but it still counts
            pass
        spent.append(time.perf_counter() - started)
    return 1000.0 * SAMPLE_HEADROOM * sum(spent) / len(spent), count


def page_count(path: Path, *, bound: Bound = SURVEY_BOUND) -> int:
    """A user's PDF's pages, read in a child bounded like the product's survey; 0 when it cannot be read in it
    (the job reports why, with its error id)."""
    try:
        return run_bounded(_count_in_process, path, bound=bound)
    except OverBudget:
        return 0


def _count_in_process(path: Path) -> int:
    import pypdfium2 as pdfium

    from batchlane.pdf.split import PDFIUM_LOCK

    with PDFIUM_LOCK:
        try:
            document = pdfium.PdfDocument(str(path))
        except pdfium.PdfiumError:
            return 0
        try:
            return len(document)
        finally:
            document.close()


def _job_scale(pages: int, faults: str, record_cost_ms: float | None) -> str:
    """``time_scale=<S>`` for this document: as fast as its records allow on one clock."""
    parsed = parse_faults(faults)
    cost_ms = max(parsed.record_cost_ms, record_cost_ms or 0.0)
    return f"time_scale={scale_for_job(pages, parsed.records_per_hour, cost_ms):.0f}"


def _batch_clock(stack: OfflineStack, sampled_ms: float | None) -> dict[str, Any]:
    """The one clock the run used, and whether the emulator kept up with it."""
    faults = stack.faults
    jobs = list(stack.bedrock.jobs.values()) if stack.bedrock else []
    return {
        "time_scale": round(faults.time_scale, 2),
        "sampled_record_ms": None if sampled_ms is None else round(sampled_ms, 2),  # --pdf: the clock was sized with it
        "records_per_hour": faults.records_per_hour,
        "emulated_in_progress_h": [round(faults.in_progress_s(j.total or 0) / 3600, 2) for j in jobs],
        "emulator_behind_h": max((round(j.behind_s / 3600, 2) for j in jobs), default=0.0),
    }


def job_repo_get(svc: Any, job_id: str) -> str | None:
    """The job's error message (why it paused), read once the demo stopped watching it."""
    job = svc.uow().jobs.get_job(job_id)
    return job.error_message if job is not None else None


def run_demo(
    *,
    pages: int = 1200,
    pdf: Path | None = None,
    out_dir: Path = Path("out"),
    faults: str = "",
    database_url: str | None = None,
    batch_lane: bool = True,
    console: Console | None = None,
    verbose: bool = False,
    prepare_workers: int = 0,
) -> dict[str, Any]:
    """``verbose``: handler logs on stderr too; they always go to ``<out_dir>/logs/handlers.log`` (the stack's
    workdir is temporary), so stdout carries only the report."""
    console = console or Console(stderr=True)
    started = time.monotonic()
    data = pdf.read_bytes() if pdf else make_pdf(pages, blank_every=25)
    name = pdf.name if pdf else f"demo-{pages}-pages.pdf"
    sampled_ms, page_count = sample_pdf(data) if pdf and "time_scale" not in faults else (None, pages)
    if "time_scale" not in faults:
        faults = ",".join(f for f in (_job_scale(page_count, faults, sampled_ms), faults) if f)
    with tempfile.TemporaryDirectory(prefix="batchlane-demo-") as workdir:
        log_file = out_dir / "logs" / "handlers.log"
        stack = OfflineStack(
            StackOptions(
                workdir=Path(workdir),
                faults=faults,
                database_url=database_url,
                batch_lane=batch_lane,
                verbose=verbose,
                log_file=log_file,
                # batch_prepare in warm worker processes (Lambda environments), as many as its Map may use at
                # once here: moto and the emulator then no longer share its CPU and GIL (docs/benchmarks.md).
                process_functions=frozenset({"batch_prepare"}) if prepare_workers else frozenset(),
                max_workers=max(prepare_workers, 1),
                warm_workers=prepare_workers,
            )
        )
        with stack:
            svc = services()
            console.print(
                f"[bold]batchlane demo[/] · offline stack up in {time.monotonic() - started:.1f} s · model: {EMULATED_MODEL_LABEL}"
                f" · batch clock ×{stack.faults.time_scale:.0f}"
            )
            console.print(f"handler logs: {log_file}")
            created = submit_pdf(svc, data, name=name, owner_id="demo-user")
            job_id = created["jobId"]
            console.print(
                f"job {job_id}: {created['totalPages']} pages, {created['chunkCount']} chunks, {created['status']} ({created['laneDecision'] or created['errorId']})"
            )
            with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console, transient=False) as bar:
                task = bar.add_task("pages", total=max(created["totalPages"], 1))

                def show(p: Any) -> None:
                    phase = p.status if not p.batch_state or p.status != "waiting_batch" else f"batch {p.batch_status or p.batch_state}"
                    bar.update(task, completed=p.pages_done, description=f"{phase:>22}")

                final = wait_for_job(svc, job_id, on_progress=show, until=(*TERMINAL, "paused_budget"))
            if final.status == "paused_budget":
                why = (job_repo_get(svc, job_id) or "its next request does not fit this month's budget").removeprefix("Paused: ")
                console.print(
                    f"[yellow]job {job_id} paused[/]: {why} It waits for its owner (exit 8): resume it with "
                    f"`batchlane resume {job_id}` against a running stack (`batchlane local up`)."
                )
            report = job_report(svc, job_id)
            markdown_path = None
            beside: dict[str, Any] = {"pagesPath": None, "imagePaths": []}
            if report["markdown_key"]:
                markdown_path = out_dir / f"{Path(name).stem}.md"
                beside = write_job_outputs(svc.store, job_id, report["markdown_key"], name, markdown_path)  # with pages.jsonl and figures
            report.update({"pagesPath": beside["pagesPath"], "imagePaths": beside["imagePaths"]})  # camelCase only: new fields
            report.update(
                markdown_path=str(markdown_path) if markdown_path else None,
                emulated_model=EMULATED_MODEL_LABEL,
                timings={**report["timings"], "total_s": round(time.monotonic() - started, 2)},
                final_status=final.status,
                batch_clock=_batch_clock(stack, sampled_ms),
            )
    return report
