"""describeFigures end to end on the offline stack (issue 43.2), through the REAL state-machine files: real DOCX files
we did not make (tests/data/formats, docling's: word_sample.docx holds one picture, docx_rich_cells.docx two inside an
HTML table) have their pictures described by the emulated model, which answers with what it sees in the picture.

Bulk (``batchLane``): both documents wait in the pool, their three pictures ride one Bedrock batch job as records of
their chunks, billed at the batch price; the lane's row bills Bedrock's manifest, the members' shares add up to it, the
ledger equals what the emulator served, no on-demand call is made, and each picture's answer is its alt text at its
place in the Markdown. Not bulk: the picture goes on-demand and the chunk's row is what the runtime served.
One stack for the module (schedules off: the test drives the packer).
"""

from __future__ import annotations

import time
from decimal import Decimal
from typing import Any

import pytest
from batchlib import wait_until
from formatscount import DATA
from moneylib import assert_lane_bills_its_manifest, assert_total_is_the_ledger, lanes_of, ledger_tokens
from test_cancel_process_now import Gate

from batchlane import keys
from batchlane.db import jobs as job_repo
from batchlane.db import ledger
from batchlane.domain.cost import Usage
from batchlane.domain.describe import Described
from batchlane.runtime import services
from batchlane_dev.local.bedrock.model import see_image
from batchlane_dev.local.jobs import submit_pdf, wait_for_job

SCALE = 36000
WINDOW_S = 1.0  # the pool window, in real seconds
ENV = {
    "BATCH_CONVERSION_MIN_PAGES": "1000",  # a document reaches the lane only by the bulk opt-in
    "BATCH_CONVERSION_MIN_RECORDS": "3",  # the two documents' three pictures make one Bedrock job; one alone does not
    "BATCH_POOL_WINDOW_MINUTES": str(WINDOW_S * SCALE / 60),
    "BATCH_CONVERSION_GRACE_HOURS": "24",
}
OWNER = "describer"


@pytest.fixture(scope="module")
def stack(migrated_url, stack_starter):  # type: ignore[no-untyped-def]
    started = stack_starter(migrated_url, faults=f"time_scale={SCALE},job_hours=0.5", extra_env=ENV, schedules=False)
    yield started
    started.stop()
    refused = started.grants.denials if started.grants else []
    assert not refused, f"handlers were refused AWS calls their topology grants do not cover: {refused}"


def _submit(name: str, options: dict[str, Any]) -> str:
    created = submit_pdf(services(), (DATA / name).read_bytes(), name=name, owner_id=OWNER, options={"describeFigures": True, **options})
    return str(created["jobId"])


def _figures(job_id: str) -> list[dict[str, Any]]:
    store = services().store
    chunks = job_repo.PgJobs(services().db).get_chunks(job_id)
    return [f for c in chunks for f in store.get_json(str(c.result_key)).get("figures", [])]


def _expected_alt(job_id: str, sent_name: str, original: str = "") -> str:
    """The alt text the emulated model's answer makes: what it sees in the picture as it was sent (see_image)."""
    seen = see_image(services().store.get_bytes(keys.figure_source_key(job_id, sent_name)))
    assert seen.figure, "the emulator answers with the picture area it finds"
    return Described("described", seen.figure).alt_text(original)


def _escaped(alt: str) -> str:
    return alt.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")


def test_bulk_pictures_ride_one_batch_job_at_the_batch_price_and_become_their_alt_text(stack) -> None:  # type: ignore[no-untyped-def]
    before = stack.bedrock.tokens_served()
    gate = Gate(stack, "batch_packer", skip_with={"claimed": []})  # both documents join the pool before its window starts
    sample = _submit("word_sample.docx", {"batchLane": True})
    cells = _submit("docx_rich_cells.docx", {"batchLane": True})
    jobs = job_repo.PgJobs(services().db)
    assert [jobs.get_job(j).status for j in (sample, cells)] == ["waiting_batch", "waiting_batch"]  # type: ignore[union-attr]
    assert [c.records for j in (sample, cells) for c in jobs.get_chunks(j)] == [1, 2]  # a chunk's records: its pictures
    wait_until(lambda: gate.calls >= 2, timeout_s=60, what="both parked events to reach the held packer")
    gate.release()
    assert stack.registry.invoke("batch_packer", {}).result["letGo"] == []  # the first look starts the window
    time.sleep(WINDOW_S * 1.3)
    packed = stack.registry.invoke("batch_packer", {}).result
    assert [sorted(lane["jobs"]) for lane in packed["lanes"]] == [sorted([sample, cells])], packed  # one Bedrock job for both
    for job_id in (sample, cells):
        assert wait_for_job(services(), job_id, timeout_s=240).status == "completed"

    [lane] = lanes_of(sample)
    assert lanes_of(cells) == [lane] and lane["record_count"] == 3
    row = assert_lane_bills_its_manifest(lane)  # Bedrock's manifest, at the batch price; the shares add up to it
    assert Decimal(row["cost_usd"]) > 0
    after = stack.bedrock.tokens_served()
    served = (after["batch"][0] - before["batch"][0], after["batch"][1] - before["batch"][1])
    assert (row["input_tokens"], row["output_tokens"]) == served  # the ledger is the emulator's bill for what it served
    assert after["runtime"] == before["runtime"]  # not one on-demand call
    assert [ledger_tokens(j, "chunk") for j in (sample, cells)] == [(0, 0), (0, 0)]
    shares = [r.cost_usd for j in (sample, cells) for r in ledger.PgLedger(services().db).ledger_rows(j) if r.source == "batch_share"]
    assert sum(shares, Decimal(0)) == Decimal(row["cost_usd"])
    for job_id in (sample, cells):
        assert assert_total_is_the_ledger(job_id) > 0

    assert [(f["name"], f["status"], f["servedBy"]) for f in _figures(sample)] == [("p1-1.png", "described", "batch")]
    assert [(f["name"], f["servedBy"]) for f in _figures(cells)] == [("p3-1.png", "batch"), ("p3-2.png", "batch")]
    store = services().store
    markdown = store.get_bytes(keys.markdown_key(sample)).decode()
    alt = _escaped(_expected_alt(sample, "p1-1.png"))
    assert f"![{alt}](word_sample.images/p1-1.png)" in markdown
    assert markdown.index("<!-- Page 1 -->") < markdown.index("(word_sample.images/p1-1.png)") < markdown.index("<!-- Page 2 -->")
    cells_md = store.get_bytes(keys.markdown_key(cells)).decode()
    for name in ("p3-1.png", "p3-2.png"):
        assert f'src="docx_rich_cells.images/{name}"' in cells_md and 'alt="*[Figure: picture area 48×48 px' in cells_md
    page3 = cells_md.split("<!-- Page 3 -->", 1)[1].split("<!-- Page 4 -->", 1)[0]
    assert page3.count("alt=\"*[Figure: picture area") == 2  # each at its place, in its page's table


def test_without_bulk_the_picture_goes_on_demand_and_the_chunk_books_what_the_runtime_served(stack) -> None:  # type: ignore[no-untyped-def]
    before = stack.bedrock.tokens_served()
    job_id = _submit("word_sample.docx", {})
    assert wait_for_job(services(), job_id, timeout_s=120).status == "completed"
    after = stack.bedrock.tokens_served()
    served = (after["runtime"][0] - before["runtime"][0], after["runtime"][1] - before["runtime"][1])
    assert served[0] > 0 and ledger_tokens(job_id, "chunk") == served and ledger_tokens(job_id, "batch") == (0, 0)
    assert after["batch"] == before["batch"] and lanes_of(job_id) == []
    [row] = [r for r in ledger.PgLedger(services().db).ledger_rows(job_id) if r.source == "chunk"]
    assert row.cost_usd == services().prices.cost(row.model_id, Usage(*served)) > 0  # the on-demand price
    assert assert_total_is_the_ledger(job_id) == row.cost_usd
    assert [(f["status"], f["servedBy"]) for f in _figures(job_id)] == [("described", "on_demand")]
    markdown = services().store.get_bytes(keys.markdown_key(job_id)).decode()
    assert f"![{_escaped(_expected_alt(job_id, 'p1-1.png'))}](word_sample.images/p1-1.png)" in markdown
