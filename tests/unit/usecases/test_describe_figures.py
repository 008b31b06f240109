"""describeFigures through the use cases on fakes (issue 43.2): a born-digital document's pictures are records of their
chunks, held at their worst case, described on-demand or from the batch lane's answers, written as their alt text at
their place; a picture whose description failed keeps its file and says so, and the job is not failed.

Real files (tests/data/formats: docling's word_sample.docx, one picture; docx_rich_cells.docx, two in an HTML table),
the real converter and sizing in the bounded child; the model is a fake runtime that answers like Claude's
InvokeModel and counts what it served.
"""

from __future__ import annotations

import base64
import io
import json
from dataclasses import dataclass, field, replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from usecase_fakes import MODEL, packed_lane

from batchlane import keys
from batchlane.batch.prepare import prepare_chunk
from batchlane.claude import PrimedResult
from batchlane.claude.figure import FIGURE_INSTRUCTION, FIGURE_REQUEST_FORMAT, FIGURE_SYSTEM
from batchlane.domain import status as st
from batchlane.domain.cost import Usage
from batchlane.domain.describe import FIGURE_MAX_TOKENS, image_tokens, worst_usage
from batchlane.domain.errors import InputError
from batchlane.domain.prompt import prompt_hash
from batchlane.filejob.assemble import assemble_job
from batchlane.filejob.chunk import ChunkRetryLater, process_chunk
from batchlane.filejob.create import create_job
from batchlane.filejob.split import split_job
from batchlane.ports import ModelCallFailed, ModelResponse, Services
from fakes import FakeUnitOfWork

DATA = Path(__file__).resolve().parents[2] / "data" / "formats"
OWNER = "owner-figures"
DESCRIBE = {"describeFigures": True}


@dataclass
class DescribingRuntime:
    """InvokeModel as Claude answers a picture's request (Anthropic Messages body): a description naming the picture's
    size; ``refuse`` answers a refusal, ``throttle`` refuses that many calls first. Counts the tokens it served."""

    refuse: bool = False
    throttle: int = 0
    calls: list[dict[str, Any]] = field(default_factory=list)
    served: Usage = field(default_factory=Usage)

    def invoke_model(self, request: Any, *, read_timeout: float) -> ModelResponse:
        if self.throttle:
            self.throttle -= 1
            raise ModelCallFailed("ThrottlingException", "Too many requests", transient=True)
        body = json.loads(request["body"])
        self.calls.append(body)
        image, text = body["messages"][0]["content"]
        with Image.open(io.BytesIO(base64.b64decode(image["source"]["data"]))) as picture:
            width, height = picture.size
        usage = Usage(image_tokens(width, height) + (len(body["system"]) + len(text["text"])) // 4, 12)
        self.served = self.served + usage
        answer = "" if self.refuse else f"A {width} by {height} [cartoon] picture.\nSecond line."
        reply = {
            "content": [{"type": "text", "text": answer}],
            "stop_reason": "refusal" if self.refuse else "end_turn",
            "usage": {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens},
        }
        return ModelResponse(json.dumps(reply).encode())


def _job(svc: Services, uow: FakeUnitOfWork, name: str, options: dict[str, Any] | None = None) -> str:
    data = (DATA / name).read_bytes()
    key = f"uploads/{OWNER}/{name}"
    svc.store.put_bytes(key, data)
    file_id = uow.jobs.insert_file(owner_id=OWNER, name=name, s3_key=key, size_bytes=len(data)).id
    return create_job(svc, file_id=file_id, options={**DESCRIBE, **(options or {})}).job_id


def _described(svc: Services, runtime: DescribingRuntime) -> Services:
    return replace(svc, model_runtime=runtime)  # type: ignore[type-var]


def test_the_option_is_true_or_false_and_refused_otherwise(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    file_id = fake_uow.jobs.insert_file(owner_id=OWNER, name="a.docx", s3_key="uploads/a.docx", size_bytes=1).id
    with pytest.raises(InputError) as refused:
        create_job(svc_on_fakes, file_id=file_id, options={"describeFigures": "yes"})
    assert refused.value.error_id == "OPTIONS_INVALID" and "describeFigures" in str(refused.value)


def test_the_split_holds_each_pictures_worst_case_and_counts_them_as_their_chunks_records(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    job_id = _job(svc_on_fakes, fake_uow, "docx_rich_cells.docx")  # 7 pages; the 3rd holds two 48×48 pictures
    split = split_job(svc_on_fakes, job_id)
    assert (split.status, split.total_pages, split.lane_decision) == ("pending", 7, "too_few_pages")  # not bulk: on-demand
    chunks = fake_uow.jobs.get_chunks(job_id)
    assert [(c.first_page, c.last_page, c.records) for c in chunks] == [(1, 7, 2)]
    hold = fake_uow.ledger.get_hold(job_id)
    assert hold is not None and hold.amount_usd == 2 * svc_on_fakes.prices.cost(MODEL, worst_usage(48, 48)) > 0
    stored = svc_on_fakes.store.list_keys(f"jobs/{job_id}/source/figures/")
    assert stored == [keys.figure_source_key(job_id, "p3-1.png"), keys.figure_source_key(job_id, "p3-2.png")]


def test_without_the_option_a_document_costs_nothing_and_has_no_records(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    data = (DATA / "word_sample.docx").read_bytes()
    svc_on_fakes.store.put_bytes("uploads/w.docx", data)
    file_id = fake_uow.jobs.insert_file(owner_id=OWNER, name="word_sample.docx", s3_key="uploads/w.docx", size_bytes=len(data)).id
    job_id = create_job(svc_on_fakes, file_id=file_id, options={"batchLane": True}).job_id
    split = split_job(svc_on_fakes, job_id)
    assert (split.status, split.lane_decision) == ("pending", "converter")  # bulk or not: nothing to send
    assert [c.records for c in fake_uow.jobs.get_chunks(job_id)] == [None]
    assert fake_uow.ledger.get_hold(job_id).amount_usd == 0  # type: ignore[union-attr]


def test_on_demand_each_picture_is_one_request_and_its_answer_its_alt_text(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    runtime = DescribingRuntime()
    svc = _described(svc_on_fakes, runtime)
    job_id = _job(svc, fake_uow, "word_sample.docx")
    split_job(svc, job_id)
    assert fake_uow.jobs.move_job(job_id, st.start()) is not None
    done = process_chunk(svc, job_id, 0, worker_id="w")
    assert done["status"] == "completed" and done["pagesFailed"] == 0

    [call] = runtime.calls  # one picture, one request: the picture, then the instruction
    assert (call["system"], call["max_tokens"]) == (FIGURE_SYSTEM, FIGURE_MAX_TOKENS)
    assert [b["type"] for b in call["messages"][0]["content"]] == ["image", "text"] and call["messages"][0]["content"][1]["text"] == FIGURE_INSTRUCTION
    [row] = fake_uow.ledger.ledger_rows(job_id)  # the chunk's one row books what the model served
    assert (row.input_tokens, row.output_tokens) == (runtime.served.input_tokens, runtime.served.output_tokens)
    assert row.cost_usd == svc.prices.cost(MODEL, runtime.served) > 0 and row.metadata["figuresOnDemand"] == 1
    budget = fake_uow.budgets.job_money(job_id)
    assert budget is not None and budget.spent_usd == row.cost_usd  # the reservation gave way to the real cost

    assemble_job(svc, job_id)
    markdown = svc.store.get_bytes(keys.markdown_key(job_id)).decode()
    assert "![A 397 by 397 \\[cartoon\\] picture. Second line.](word_sample.images/p1-1.png)" in markdown  # at its place, on one line
    assert markdown.index("<!-- Page 1 -->") < markdown.index("(word_sample.images/p1-1.png)") < markdown.index("<!-- Page 2 -->")
    assert "Description automatically generated" not in markdown  # the document's own alt text gave way to the description
    pages = svc.store.get_json(keys.chunk_result_key(job_id, 0))
    assert [(f["name"], f["status"], f["servedBy"]) for f in pages["figures"]] == [("p1-1.png", "described", "on_demand")]
    assert sum(Decimal(p["costUsd"]) for p in pages["pages"]) == row.cost_usd  # each page carries what its pictures cost


def test_pictures_in_an_html_table_get_their_alt_attribute(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    svc = _described(svc_on_fakes, DescribingRuntime())
    job_id = _job(svc, fake_uow, "docx_rich_cells.docx")
    split_job(svc, job_id)
    fake_uow.jobs.move_job(job_id, st.start())
    process_chunk(svc, job_id, 0, worker_id="w")
    page3 = svc.store.get_json(keys.chunk_result_key(job_id, 0))["pages"][2]["markdown"]
    assert page3.count('alt="A 48 by 48 [cartoon] picture. Second line."') == 2, page3


def test_a_picture_whose_description_failed_keeps_its_file_and_says_so_and_the_job_goes_on(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    runtime = DescribingRuntime(refuse=True)
    svc = _described(svc_on_fakes, runtime)
    job_id = _job(svc, fake_uow, "word_sample.docx")
    split_job(svc, job_id)
    fake_uow.jobs.move_job(job_id, st.start())
    done = process_chunk(svc, job_id, 0, worker_id="w")
    assert (done["status"], done["pagesFailed"]) == ("completed", 0)  # the page is converted: only its picture is not described
    result = svc.store.get_json(keys.chunk_result_key(job_id, 0))
    assert [(f["status"], f["reason"]) for f in result["figures"]] == [("failed", "stop_reason=refusal")]
    alt = "![A cartoon duck holding a paper Description automatically generated (not described: stop_reason=refusal)](word_sample.images/p1-1.png)"
    assert alt in result["pages"][0]["markdown"]
    assert svc.store.list_keys(keys.images_prefix(job_id)) == [keys.images_prefix(job_id) + "p1-1.png"]  # the file is still there
    assert fake_uow.ledger.ledger_rows(job_id)[0].cost_usd == svc.prices.cost(MODEL, runtime.served)  # a refusal is billed, as AWS does


def test_a_throttled_picture_retries_the_chunk_later_and_is_described_then(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    runtime = DescribingRuntime(throttle=1000)
    svc = _described(replace(svc_on_fakes, settings=svc_on_fakes.settings.model_copy(update={"batchlane_throttle_max_attempts": 1})), runtime)  # type: ignore[type-var]
    job_id = _job(svc, fake_uow, "word_sample.docx")
    split_job(svc, job_id)
    fake_uow.jobs.move_job(job_id, st.start())
    with pytest.raises(ChunkRetryLater):
        process_chunk(svc, job_id, 0, worker_id="w")
    runtime.throttle = 0
    done = process_chunk(svc, job_id, 0, worker_id="w2")  # Step Functions' retry of the chunk
    assert done["status"] == "completed"
    [figure] = svc.store.get_json(keys.chunk_result_key(job_id, 0))["figures"]
    assert (figure["status"], len(runtime.calls)) == ("described", 1)


def test_bulk_parks_the_job_and_prepare_writes_one_record_per_picture(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    job_id = _job(svc_on_fakes, fake_uow, "docx_rich_cells.docx", {"batchLane": True})
    split = split_job(svc_on_fakes, job_id)
    assert (split.status, split.lane_decision) == ("waiting_batch", "bulk_opt_in")
    assert fake_uow.jobs.get_job(job_id).status == "waiting_batch"  # type: ignore[union-attr]
    [(_, parked)] = [e for e in svc_on_fakes.bus.events if e[0] == "Conversion Job Parked"]  # type: ignore[attr-defined]
    assert parked["pages"] == 2  # what the pool counts: its records
    pool = fake_uow.lanes.read_pool()
    assert [(c.job_id, c.pages) for c in pool.chunks] == [(job_id, 2)]  # the chunk's records, not its 7 pages

    lane_id = packed_lane(svc_on_fakes, [(job_id, 0)])
    assert prepare_chunk(svc_on_fakes, lane_id, job_id, 0, "m0")["records"] == 2
    [shard] = svc_on_fakes.store.list_keys(keys.batch_input_prefix(lane_id))
    lines = [json.loads(line) for line in svc_on_fakes.store.iter_lines(shard)]
    assert [line["recordId"] for line in lines] == ["m0c0p3f1", "m0c0p3f2"]  # alphanumeric, a picture pinned by chunk, page, figure
    image = lines[0]["modelInput"]["messages"][0]["content"][0]
    assert image["type"] == "image" and base64.b64decode(image["source"]["data"]) == svc_on_fakes.store.get_bytes(keys.figure_source_key(job_id, "p3-1.png"))
    summary = svc_on_fakes.store.get_json(f"batch/{lane_id}/prepare/m0-chunk-0.json")
    expected = prompt_hash(
        model_id=MODEL, system=FIGURE_SYSTEM, text=FIGURE_INSTRUCTION, max_tokens=FIGURE_MAX_TOKENS, temperature=0.0, request_format=FIGURE_REQUEST_FORMAT
    )
    assert {r["promptHash"] for r in summary["records"]} == {expected}


def test_a_primed_picture_is_answered_from_its_batch_result_and_costs_the_chunk_nothing(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    runtime = DescribingRuntime()
    svc = _described(svc_on_fakes, runtime)
    job_id = _job(svc, fake_uow, "docx_rich_cells.docx", {"batchLane": True})
    split_job(svc, job_id)
    lane_id = packed_lane(svc, [(job_id, 0)])
    prepare_chunk(svc, lane_id, job_id, 0, "m0")
    [hashed, _] = svc.store.get_json(f"batch/{lane_id}/prepare/m0-chunk-0.json")["records"]
    answer = PrimedResult(hashed["recordId"], MODEL, hashed["promptHash"], "Two blue squares, from the batch lane.", "end_turn", 40, 9)
    svc.store.put_json(keys.batch_results_key(job_id, 0), {"jobId": job_id, "chunkIndex": 0, "results": [answer.to_json()]})  # collect's file
    fake_uow.jobs.move_job(job_id, st.leave_batch_lane())
    fake_uow.jobs.move_job(job_id, st.start(), batch_primed=True)
    fake_uow.jobs.move_chunks(job_id, st.start(st.Entity.CHUNK))
    done = process_chunk(svc, job_id, 0, worker_id="w")
    assert (done["status"], done["pagesBatch"]) == ("completed", 1)  # page 3 was served by the batch lane
    figures = svc.store.get_json(keys.chunk_result_key(job_id, 0))["figures"]
    assert [(f["name"], f["servedBy"], f["costUsd"]) for f in figures] == [("p3-1.png", "batch", "0"), ("p3-2.png", "on_demand", figures[1]["costUsd"])]
    assert len(runtime.calls) == 1  # only the picture the lane did not answer went on-demand
    [row] = fake_uow.ledger.ledger_rows(job_id)
    assert row.cost_usd == svc.prices.cost(MODEL, runtime.served) and row.metadata["figuresBatchServed"] == 1
