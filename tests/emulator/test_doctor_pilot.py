"""`batchlane doctor --live` pieces against the emulator: the pilot batch job's outcomes, and the
visual test page (its code word is only in the picture, so text extraction cannot pass)."""

from __future__ import annotations

import io
import json

import boto3
from pypdf import PdfReader

from batchlane.claude import ConverterConfig
from batchlane.domain.cost import PriceTable
from batchlane.domain.records import BEDROCK_RECORD_ID, pooled_record_id, record_id
from batchlane_dev.cli.doctor.live import PilotPlan, mentions_picture, run_pilot, visual_test_page
from batchlane_dev.local.bedrock import BatchQuotas, BedrockEmulator, parse_faults

CREDS = {"region_name": "us-east-1", "aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
BUCKET = "doctor-pilot"
PRICES = PriceTable({MODEL: {"input_per_mtok": 3.0, "output_per_mtok": 15.0}})


def _pilot(s3_endpoint: str, faults: str, **plan_overrides):  # type: ignore[no-untyped-def]
    s3 = boto3.client("s3", endpoint_url=s3_endpoint, **CREDS)
    emulator = BedrockEmulator(
        s3_client_factory=lambda: boto3.client("s3", endpoint_url=s3_endpoint, **CREDS), faults=parse_faults(faults), quotas=BatchQuotas(min_records=3)
    )
    url = emulator.start()
    bedrock = boto3.client("bedrock", endpoint_url=url, **CREDS)
    plan = PilotPlan(
        bucket=BUCKET,
        role_arn="arn:aws:iam::123456789012:role/svc",
        model_id=MODEL,
        records=plan_overrides.pop("records", 3),
        config=ConverterConfig(model_id=MODEL, max_tokens=2048, temperature=0.0),
        prices=PRICES,
        timeout_s=600,
        poll_s=0.05,
        **plan_overrides,
    )
    try:
        return run_pilot(bedrock, s3, plan), emulator
    finally:
        emulator.stop()


def test_a_completed_pilot_reports_time_accepted_records_and_cost(s3_endpoint):
    check, _ = _pilot(s3_endpoint, "time_scale=200000")
    assert check.ok, check.detail
    assert "Completed in" in check.detail and "3/3 records accepted from 3 input files; $0.0" in check.detail


def test_the_pilot_sends_production_record_ids_in_several_input_files(s3_endpoint):
    # What a real lane sends: ids m<k>c<chunk>p<page> (alphanumeric, as Bedrock documents recordId) over
    # one input file per chunk, so the pilot proves the format and the multi-file input AWS will see.
    check, _ = _pilot(s3_endpoint, "time_scale=200000", stamp="ids", records=6)
    assert check.ok, check.detail
    assert "6/6 records accepted from 3 input files" in check.detail
    s3 = boto3.client("s3", endpoint_url=s3_endpoint, **CREDS)
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix="batch/doctor-ids/input/")["Contents"]]
    assert len(keys) == 3
    ids = [json.loads(line)["recordId"] for key in keys for line in s3.get_object(Bucket=BUCKET, Key=key)["Body"].read().splitlines()]
    assert sorted(ids) == sorted(pooled_record_id("m0", record_id(c, p)) for c, p in ((0, 1), (0, 2), (1, 3), (1, 4), (2, 5), (2, 6)))
    assert all(BEDROCK_RECORD_ID.match(i) for i in ids)


def test_a_partially_completed_pilot_warns_with_what_was_rejected(s3_endpoint):
    check, _ = _pilot(s3_endpoint, "time_scale=200000,job_outcome=partially_completed", stamp="partial")
    assert not check.ok and check.severity == "warning"
    assert "PartiallyCompleted" in check.detail and "2/3 records accepted" in check.detail and "error_record" in check.detail


def test_a_pilot_past_its_timeout_is_stopped_not_left_running(s3_endpoint):
    ticks = iter([0.0, 0.0, 10_000.0, 10_000.0])  # start, first poll, after one sleep: past the timeout
    check, emulator = _pilot(s3_endpoint, "time_scale=1", stamp="slow", clock=lambda: next(ticks), sleep=lambda _s: None)
    assert not check.ok and check.severity == "warning" and "stopped it" in check.detail
    (job,) = emulator.jobs.values()
    assert job.status in ("Stopping", "Stopped")


def test_the_code_word_is_only_in_the_picture():
    reader = PdfReader(io.BytesIO(visual_test_page()))
    (page,) = reader.pages
    text = page.extract_text()
    assert not mentions_picture(text)  # an answer from the text layer alone cannot pass
    assert mentions_picture("*[Figure: 480x240 image at (72, 442)]*") and mentions_picture("CODE 4729")
    assert len(page.images) == 1


# Issue 42.1: the doctor records a form only from records that succeeded, whatever an error says.
UNWORDED = "Malformed input request: #/messages/0/content/0: extraneous key [source] is not permitted"


def test_a_pdf_form_refused_in_words_without_document_is_not_accepted_and_images_are(s3_endpoint):
    accepted: dict[str, bool] = {}
    faults = f"time_scale=200000,invoke_model_documents=refused,document_refusal_message={UNWORDED}"
    check, _ = _pilot(s3_endpoint, faults, stamp="unworded", records=4, page_forms=("pdf", "image"), accepted_forms=accepted)
    assert accepted == {"pdf": False, "image": True}
    assert check.ok, check.detail  # a refused form is the probe's finding
    assert "refused for their page form: pdf (2)" in check.detail


def test_one_corrupt_pdf_page_whose_error_says_document_leaves_the_pdf_form_accepted(s3_endpoint):
    accepted: dict[str, bool] = {}
    check, _ = _pilot(s3_endpoint, "time_scale=200000,corrupt_pdf_pages=1", stamp="corrupt", records=4, page_forms=("pdf", "image"), accepted_forms=accepted)
    assert accepted == {"pdf": True, "image": True}
    assert not check.ok and "3/4 records accepted" in check.detail  # the corrupt record is a lost page, reported as such


def test_a_form_none_of_whose_records_came_back_is_not_accepted(s3_endpoint):
    # Every record errors for another reason (emulated ModelErrorException): nothing was refused, nothing succeeded.
    accepted: dict[str, bool] = {}
    _pilot(s3_endpoint, "time_scale=200000,record_error_rate=1", stamp="lost", records=4, page_forms=("pdf", "image"), accepted_forms=accepted)
    assert accepted == {"pdf": False, "image": False}


def test_the_visual_call_refused_in_any_words_is_a_refusal_finding(s3_endpoint):
    from batchlane_dev.cli.doctor.live import check_visual_call

    emulator = BedrockEmulator(
        s3_client_factory=lambda: boto3.client("s3", endpoint_url=s3_endpoint, **CREDS),
        faults=parse_faults(f"invoke_model_documents=refused,document_refusal_message={UNWORDED}"),
    )
    url = emulator.start()
    try:
        runtime = boto3.client("bedrock-runtime", endpoint_url=url, **CREDS)
        pdf = check_visual_call(runtime, ConverterConfig(model_id=MODEL, max_tokens=2048, temperature=0.0, page_form="pdf"), PRICES)
        image = check_visual_call(runtime, ConverterConfig(model_id=MODEL, max_tokens=2048, temperature=0.0, page_form="image"), PRICES)
    finally:
        emulator.stop()
    assert pdf.ok and pdf.data == {"refused": True} and "refuses the pdf form" in pdf.detail
    assert image.ok and image.data == {"answered": True}, image.detail
