"""Issue 42.1 in the batch lane: collect judges a page form by the lane's records that succeeded, read per form
from the modelInput Bedrock echoes beside each output or error ("View the results of a batch inference job"),
never by words in an error: a refusal worded any way is caught, one corrupt page whose error says "document" is not."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from usecase_fakes import MODEL, batch_jobs_of, lane_row, parked_job

from batchlane.batch.collect import collect
from batchlane.batch.submit import submit_batch_job
from batchlane.domain.page_form import IMAGE, MIN_FAILED
from batchlane.ports import Services

PDF_INPUT = {
    "messages": [{"role": "user", "content": [{"type": "document", "source": {"type": "base64", "data": "JVBERi0="}}, {"type": "text", "text": "Convert"}]}]
}
IMAGE_INPUT = {
    "messages": [{"role": "user", "content": [{"type": "image", "source": {"type": "base64", "data": "iVBORw0="}}, {"type": "text", "text": "Convert"}]}]
}
UNWORDED = "Malformed input request: #/messages/0/content/0: extraneous key [source] is not permitted, please reformat your input and try again."
CORRUPT = "The PDF document page-2 could not be processed: its data is corrupted."
RECORDS = ["m0c0p1", "m0c0p2", "m0c0p3", "m0c1p51", "m0c1p52", "m0c1p53", "m0c2p101", "m0c2p102", "m0c2p103"]


def _ok(record_id: str, model_input: dict[str, Any]) -> dict[str, Any]:
    answer = {"content": [{"type": "text", "text": f"# {record_id}"}], "stop_reason": "end_turn", "usage": {"input_tokens": 10, "output_tokens": 5}}
    return {"recordId": record_id, "modelInput": model_input, "modelOutput": answer}


def _error(record_id: str, model_input: dict[str, Any], message: str, code: int = 400) -> dict[str, Any]:
    return {"recordId": record_id, "modelInput": model_input, "error": {"errorCode": code, "errorMessage": message}}


def _collect(svc: Services, lines: list[dict[str, Any]]) -> str:
    svc = dataclasses.replace(svc, settings=svc.settings.model_copy(update={"batchlane_page_form": "auto"}))
    parked = parked_job(svc, records=3)
    arn = str(submit_batch_job(svc, parked.lane_id)["jobArn"])
    row = lane_row(svc, parked.lane_id)
    assert row.output_uri is not None
    prefix = row.output_uri.removeprefix(f"s3://{svc.store.bucket}/").rstrip("/") + "/" + arn.rsplit("/", 1)[-1] + "/"
    svc.store.put_bytes(prefix + "input-0.jsonl.out", "\n".join(json.dumps(x) for x in lines).encode())
    batch_jobs_of(svc).jobs[arn].status = "PartiallyCompleted"
    collect(svc, parked.lane_id)
    return parked.lane_id


def test_a_lane_whose_pdf_records_all_fail_however_worded_records_the_image_form(svc: Services) -> None:
    lane_id = _collect(svc, [_error(rid, PDF_INPUT, UNWORDED) for rid in RECORDS])

    form = svc.uow().page_forms.get(MODEL)
    assert form is not None and (form.page_form, form.source) == (IMAGE, "refusal")
    assert form.detail == f"{len(RECORDS)} pdf-form batch records of lane {lane_id} failed as invalid input, none succeeded"


def test_one_corrupt_pdf_record_whose_error_says_document_records_nothing(svc: Services) -> None:
    _collect(svc, [_error(rid, PDF_INPUT, CORRUPT) if rid == "m0c0p2" else _ok(rid, PDF_INPUT) for rid in RECORDS])
    assert svc.uow().page_forms.get(MODEL) is None


def test_many_pdf_failures_beside_one_pdf_success_record_nothing(svc: Services) -> None:
    _collect(svc, [_ok(rid, PDF_INPUT) if rid == "m0c0p1" else _error(rid, PDF_INPUT, "documents are not supported") for rid in RECORDS])
    assert svc.uow().page_forms.get(MODEL) is None


def test_fewer_failures_than_the_rule_needs_and_throttles_record_nothing(svc: Services) -> None:
    few = RECORDS[: MIN_FAILED - 1]
    lines = [_error(rid, PDF_INPUT, UNWORDED) for rid in few] + [_error(rid, PDF_INPUT, "ThrottlingException: slow down", 429) for rid in RECORDS[len(few) :]]
    _collect(svc, lines)
    assert svc.uow().page_forms.get(MODEL) is None


def test_image_records_that_fail_never_switch_anything(svc: Services) -> None:
    _collect(svc, [_error(rid, IMAGE_INPUT, UNWORDED) for rid in RECORDS])
    assert svc.uow().page_forms.get(MODEL) is None
