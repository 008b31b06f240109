"""`batchlane doctor --live`: what only a real call can settle (it costs a few cents on AWS).

* One on-demand call on a one-page PDF whose only picture carries a code word: an answer
  that mentions the picture (or reads the word) proves the request gets visual
  understanding, not text extraction.
* A pilot batch job of the account's minimum record count on generated pages, built by
  the real converter with a capture transport (as the lane's prepare does), parsed and
  judged by the lane's own collect code: time to completion, accepted records, cost.
"""

from __future__ import annotations

import io
import json
import re
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from batchlane import keys
from batchlane.aws.bedrock_runtime import BedrockRuntime
from batchlane.aws.s3 import S3Store
from batchlane.batch.collect import LaneManifest, tally_outputs
from batchlane.claude import CaptureTransport, ConverterConfig, ModelCallError, OnDemandTransport, build_page_request, convert_page
from batchlane.domain.cost import PriceTable
from batchlane.domain.page_form import FormTally, form_of_body, invalid_input
from batchlane.domain.records import member_tag, parse_record_id, pooled_record_id
from batchlane_dev.cli.doctor.checks import error_text
from batchlane_dev.cli.doctor.results import Check, failed, passed, warned

CODE_WORD = "4729"
_MENTIONS_PICTURE = re.compile(r"\b(figure|image|picture|photo\w*|diagram|illustration|drawing|graphic|chart|logo)s?\b", re.IGNORECASE)


def mentions_picture(text: str) -> bool:
    """What only a model that saw the page's picture writes: the picture itself, or the word drawn in it."""
    return CODE_WORD in text or bool(_MENTIONS_PICTURE.search(text))


TERMINAL = ("Completed", "PartiallyCompleted", "Failed", "Stopped", "Expired")


def visual_test_page() -> bytes:
    """A one-page PDF: a short text line, and a raster image that shows CODE_WORD (no text layer for it)."""
    from PIL import Image, ImageDraw
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.utils import ImageReader
    from reportlab.pdfgen import canvas

    image = Image.new("RGB", (480, 240), "white")
    draw = ImageDraw.Draw(image)
    draw.rectangle((10, 10, 470, 230), outline="black", width=4)
    draw.ellipse((40, 60, 160, 180), fill="navy")
    draw.text((200, 100), f"CODE {CODE_WORD}", fill="black", font_size=48)
    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=A4, invariant=True)
    _, height = A4
    pdf.setFont("Helvetica", 12)
    pdf.drawString(72, height - 72, "batchlane doctor: visual check page.")
    pdf.drawImage(ImageReader(image), 72, height - 400, width=360, height=180)
    pdf.showPage()
    pdf.save()
    return buffer.getvalue()


def check_visual_call(runtime_client: Any, config: ConverterConfig, prices: PriceTable) -> Check:
    """One on-demand request from the package's own builder and transport (what a chunk sends), in ``config.page_form``."""
    name = f"live: visual on-demand call ({config.page_form})"
    request = build_page_request(chunk_index=0, page_number=1, pdf_bytes=visual_test_page(), config=config)
    started = time.monotonic()
    try:
        answer = OnDemandTransport(BedrockRuntime(lambda seconds: runtime_client)).send(request)
    except ModelCallError as exc:
        if invalid_input(exc.code):  # our own known-good page, refused as input however worded: the form is refused
            return refused(name, f"{config.model_id} refuses the {config.page_form} form on-demand: {exc}")
        return failed(name, f"{config.model_id}: {exc}")
    seconds = time.monotonic() - started
    cost = _price(prices, config.model_id, answer.usage, batch=False)
    excerpt = " ".join(answer.text.split())[:120]
    answered = {"answered": True}  # the form is taken on-demand: an answer came back (settle_page_form reads it)
    if mentions_picture(answer.text):
        return Check(name, True, f"the answer describes the picture ({seconds:.1f} s, {cost}): {excerpt!r}", data=answered)
    return Check(name, False, f"the answer does not mention the page's picture (text-extraction mode?): {excerpt!r}", data=answered)


def _price(prices: PriceTable, model_id: str, usage: Any, *, batch: bool) -> str:
    try:
        return f"${prices.cost(model_id, usage, batch=batch)}"
    except KeyError:
        return "cost unknown: no price for the model in BATCHLANE_PRICES"


@dataclass
class PilotPlan:
    bucket: str
    role_arn: str
    model_id: str
    records: int
    config: ConverterConfig
    prices: PriceTable
    timeout_s: float
    poll_s: float
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic
    stamp: str = field(default_factory=lambda: time.strftime("%Y%m%d%H%M%S", time.gmtime()))
    page_forms: tuple[str, ...] = ()  # the forms the pilot's records alternate between (default: the config's)
    # Filled by run_pilot: per form, whether Bedrock answered at least one of its records (never from the
    # absence of a refusal: a form none of whose records came back is not accepted).
    accepted_forms: dict[str, bool] = field(default_factory=dict)


PILOT_FILES = 3  # a real lane sends one input file (or more) per member chunk: the pilot sends several too


def pilot_records(records: int, config: ConverterConfig, page_forms: tuple[str, ...] = ()) -> list[Any]:
    """``records`` generated pages through the real converter with a capture transport (prepare's path),
    spread over up to PILOT_FILES chunks so the pilot, like a lane, has several input files; with
    ``page_forms``, record i goes in form i mod len (the doctor tries every form in one job)."""
    from batchlane.pdf.split import open_pdf, plan_chunks
    from batchlane_dev.local.pdfgen import make_pdf

    document = open_pdf(make_pdf(records, title="batchlane doctor pilot"), max_pages=records)
    capture = CaptureTransport()
    for span in plan_chunks(records, -(-records // PILOT_FILES)):
        for page in document.pages(span):
            convert_page(page, config, capture, PriceTable({}))
    if page_forms:
        return [r.with_form(page_forms[i % len(page_forms)]) for i, r in enumerate(capture.requests)]
    return capture.requests


def pilot_input_files(requests: list[Any], prefix: str) -> dict[str, bytes]:
    """The pilot's input as prepare writes a lane's: one JSONL file per chunk, named like prepare's
    shards, each record under the id Bedrock sees in production (``m0c<chunk>p<page>``)."""
    files: dict[str, list[str]] = {}
    for r in requests:
        chunk_index, _ = parse_record_id(r.record_id)
        key = f"{prefix}input/{member_tag(0)}-chunk-{chunk_index:05d}-0.jsonl"
        files.setdefault(key, []).append(
            json.dumps({"recordId": pooled_record_id(member_tag(0), r.record_id), "modelInput": r.model_input()}, separators=(",", ":"))
        )
    return {key: ("\n".join(lines) + "\n").encode() for key, lines in files.items()}


def record_invocation_type(request: Any) -> str:
    """The job's modelInvocationType for the builder's records: an Anthropic Messages body is InvokeModel's."""
    declared = getattr(request, "invocation_type", None)
    if declared:
        return str(declared)
    return "InvokeModel" if "anthropic_version" in request.model_input() else "Converse"


@dataclass(frozen=True)
class BatchRun:
    """A doctor batch job that reached a terminal status (``stopped_late``: stopped by us past the timeout)."""

    arn: str
    job: dict[str, Any]
    elapsed_s: float
    input_files: int
    output_keys: list[str]
    stopped_late: bool = False


def run_batch_job(bedrock: Any, store: S3Store, plan: PilotPlan, requests: list[Any], prefix: str, *, component: str) -> BatchRun:
    """The records as a lane's input files under ``prefix``, one Bedrock batch job, waited for until a terminal
    status (stopped past ``plan.timeout_s``: records it processed are billed). Shared by the pilot and the quality probe."""
    invocation_type = record_invocation_type(requests[0])
    job_name = f"batchlane-{component}-{plan.stamp}"
    inputs = pilot_input_files(requests, prefix)
    for key, data in inputs.items():
        store.put_bytes(key, data, "application/jsonl")
    started = plan.clock()
    arn = bedrock.create_model_invocation_job(
        jobName=job_name,
        roleArn=plan.role_arn,
        clientRequestToken=job_name,
        modelId=plan.model_id,
        modelInvocationType=invocation_type,
        inputDataConfig={"s3InputDataConfig": {"s3Uri": store.uri(f"{prefix}input/"), "s3InputFormat": "JSONL"}},
        outputDataConfig={"s3OutputDataConfig": {"s3Uri": store.uri(f"{prefix}output/")}},
        timeoutDurationInHours=24,
        tags=[{"key": "batchlane:component", "value": component}],
    )["jobArn"]
    job = bedrock.get_model_invocation_job(jobIdentifier=arn)
    while job["status"] not in TERMINAL:
        if plan.clock() - started > plan.timeout_s:
            bedrock.stop_model_invocation_job(jobIdentifier=arn)
            return BatchRun(arn, job, plan.clock() - started, len(inputs), [], stopped_late=True)
        plan.sleep(plan.poll_s)
        job = bedrock.get_model_invocation_job(jobIdentifier=arn)
    output_keys = sorted(k for k in store.list_keys(f"{prefix}output/{arn.rsplit('/', 1)[-1]}/") if k.endswith(".jsonl.out"))
    return BatchRun(arn, job, plan.clock() - started, len(inputs), output_keys)


def run_pilot(bedrock: Any, s3: Any, plan: PilotPlan) -> Check:
    """Submit, wait for a terminal status (stop it past the timeout), collect with the lane's code."""
    name = "live: pilot batch job"
    requests = pilot_records(plan.records, plan.config, plan.page_forms)
    prefix = f"{keys.BATCH_PREFIX}doctor-{plan.stamp}/"
    store = S3Store(s3, plan.bucket)
    invocation_type = record_invocation_type(requests[0])
    try:
        run = run_batch_job(bedrock, store, plan, requests, prefix, component="doctor-pilot")
        if run.stopped_late:
            return warned(name, f"{run.arn} still {run.job['status']} after {plan.timeout_s / 60:.0f} min: stopped it (records it processed are billed)")
        job, arn, elapsed, output_keys = run.job, run.arn, run.elapsed_s, run.output_keys
        with tempfile.TemporaryDirectory(prefix="doctor-pilot-") as spool:
            hashes = {pooled_record_id(member_tag(0), r.record_id): r.prompt_hash for r in requests}
            manifest = LaneManifest(plan.model_id, {member_tag(0): "doctor-pilot"}, {}, hashes)
            tally = tally_outputs(store, output_keys, manifest=manifest, spool_dir=Path(spool))
        by_form = form_outcomes(store, output_keys)
    except Exception as exc:
        return failed(name, f"{plan.model_id}, {len(requests)} records ({invocation_type}): {error_text(exc)}")
    sent = {r.page_form for r in requests}
    plan.accepted_forms.update({form: by_form.get(form, FormTally()).succeeded > 0 for form in sent})
    refusals = {form: by_form[form].failed for form in sent if form in by_form and by_form[form].succeeded == 0 and by_form[form].failed}
    accepted = tally.counts["accepted"] + sum(refusals.values())  # a form refused is the probe's answer, not a broken lane
    cost = _price(plan.prices, plan.model_id, tally.billed, batch=True)
    summary = f"{job['status']} in {elapsed:.0f} s; {tally.counts['accepted']}/{len(requests)} records accepted from {run.input_files} input files; {cost} ({invocation_type} records, {arn})"
    if refusals:
        summary += f"; refused for their page form: {', '.join(f'{form} ({n})' for form, n in sorted(refusals.items()))}"
    if job["status"] not in ("Completed", "PartiallyCompleted"):
        return failed(name, f"{summary}: {job.get('message') or 'no message'}")
    if accepted < len(requests) or len(refusals) == len({r.page_form for r in requests}):
        outcomes = {k: v for k, v in tally.counts.items() if k != "accepted"}
        return warned(name, f"{summary}; others: {outcomes}")
    return passed(name, summary)


def refused(name: str, detail: str) -> Check:
    """A page form the account refuses: the probe's finding, not a failure (``auto`` takes the other form)."""
    return Check(name, True, detail, data={"refused": True})


def form_outcomes(store: S3Store, output_keys: list[str]) -> dict[str, FormTally]:
    """Per page form (read from each record's echoed modelInput), the pilot's records Bedrock answered and
    those it refused as invalid input, whatever the error's wording (domain/page_form.py)."""
    by_form: dict[str, FormTally] = {}
    for key in output_keys:
        for line in store.get_bytes(key).splitlines():
            if not line.strip():
                continue
            record = json.loads(line)
            form = form_of_body(record.get("modelInput"))
            if form is None:
                continue
            tally = by_form.setdefault(form, FormTally())
            if isinstance(record.get("modelOutput"), dict):
                tally.succeeded += 1
            elif invalid_input((record.get("error") or {}).get("errorCode")):
                tally.failed += 1
    return by_form
