"""run_pages: the bounded pool, results by page number, the abort seam, primed pages stay single."""

from ondemand_fakes import CONFIG, PRICES, ModelTransport, chunk_pages

from batchlane.claude import PrimedResult, PrimedTransport, build_page_request
from batchlane.filejob.chunk import Heartbeat, OnDemandSetup, run_pages
from batchlane.ondemand import CoverageRule, RequestPlan
from batchlane_dev.local.pdfgen import page_phrase

PAGES = chunk_pages(23, blank_every=10)
SETUP = OnDemandSetup(plan=RequestPlan(pages_per_request=5), coverage=CoverageRule(threshold=0))


def _heartbeat(beats_alive: int = 10**6) -> Heartbeat:
    calls = {"n": 0}

    def beat(done: int) -> bool:
        calls["n"] += 1
        return calls["n"] <= beats_alive

    heartbeat = Heartbeat(beat)
    heartbeat.beats = calls  # type: ignore[attr-defined]
    return heartbeat


def test_every_page_has_a_result_in_five_page_requests_and_blank_pages_cost_nothing():
    transport = ModelTransport()
    run = run_pages(PAGES, chunk_index=0, config=CONFIG, transport=transport, prices=PRICES, heartbeat=_heartbeat(), concurrency=4, setup=SETUP)
    assert sorted(run.pages) == list(range(1, 24)) and not run.aborted
    assert {run.pages[n].status for n in (10, 20)} == {"blank"}
    assert all(page_phrase(n, 23) in r.markdown for n, r in run.pages.items() if r.status != "blank")
    assert sorted(len(r.page_numbers) for r in transport.sent) == [1, 5, 5, 5, 5]  # 21 non-blank pages
    assert run.spend.cost > 0


def test_a_cancelled_chunk_starts_no_new_request():
    # Given a chunk whose heartbeat guard stops matching right at the start
    transport = ModelTransport()
    run = run_pages(PAGES, chunk_index=0, config=CONFIG, transport=transport, prices=PRICES, heartbeat=_heartbeat(beats_alive=0), concurrency=2, setup=SETUP)
    assert run.aborted and transport.sent == [] and run.pages == {}


def test_an_abort_noticed_mid_chunk_stops_the_requests_not_yet_started():
    heartbeat = _heartbeat()

    def cancel_after_first(request, n):
        if n == 1:
            heartbeat.stop()  # as if the heartbeat guard had just failed
        return None

    transport = ModelTransport(cancel_after_first)
    run = run_pages(PAGES, chunk_index=0, config=CONFIG, transport=transport, prices=PRICES, heartbeat=heartbeat, concurrency=1, setup=SETUP)
    assert run.aborted and len(transport.sent) == 1
    assert run.spend.cost > 0  # what was spent is still there to book


def test_at_the_deadline_no_new_request_starts_and_what_was_converted_is_kept():
    now = {"t": 0.0}
    heartbeat = Heartbeat(lambda done: True, deadline=1.0, clock=lambda: now["t"])

    def deadline_after_second(request, n):
        if n == 2:
            now["t"] = 1.0  # the clock reaches the deadline while request 2 is out
        return None

    transport = ModelTransport(deadline_after_second)
    run = run_pages(PAGES, chunk_index=0, config=CONFIG, transport=transport, prices=PRICES, heartbeat=heartbeat, concurrency=1, setup=SETUP)
    assert run.out_of_time and not run.aborted and heartbeat.halted() and not heartbeat.stopped()
    assert [r.page_numbers for r in transport.sent] == [(1, 2, 3, 4, 5), (6, 7, 8, 9, 11)]
    assert sorted(run.pages) == [*range(1, 12), 20]  # both answers kept, and the blank pages planning had already passed
    assert run.spend.cost > 0


def test_primed_pages_are_served_one_page_per_request_and_the_rest_go_multi_page():
    batch = {}
    for page in PAGES[:6]:
        request = build_page_request(chunk_index=0, page_number=page.number, pdf_bytes=page.pdf_bytes, config=CONFIG)
        batch[request.record_id] = PrimedResult(request.record_id, CONFIG.model_id, request.prompt_hash, f"batch {page.number}", "end_turn", 1500, 40)
    transport = ModelTransport()
    primed = PrimedTransport(batch, transport)
    run = run_pages(PAGES, chunk_index=0, config=CONFIG, transport=transport, prices=PRICES, heartbeat=_heartbeat(), concurrency=3, setup=SETUP, primed=primed)
    assert [run.pages[n].served_by for n in range(1, 7)] == ["batch"] * 6 and run.pages[1].markdown == "batch 1"
    assert primed.served == 6 and all(7 <= n for r in transport.sent for n in r.page_numbers)
    assert sorted(run.pages) == list(range(1, 24))


def test_a_page_too_large_to_send_fails_at_once_with_no_call_and_its_neighbours_convert():
    from dataclasses import replace

    from batchlane.claude import CaptureTransport, convert_page
    from batchlane.domain.limits import PAGE_TOO_LARGE

    pages = [replace(page, failure=PAGE_TOO_LARGE) if page.number == 3 else page for page in chunk_pages(6)]
    transport = ModelTransport()
    run = run_pages(pages, chunk_index=0, config=CONFIG, transport=transport, prices=PRICES, heartbeat=_heartbeat(), concurrency=2, setup=SETUP)
    assert run.pages[3].status == "failed" and run.pages[3].reason == PAGE_TOO_LARGE and not run.pages[3].retryable
    assert all(run.pages[n].status == "converted" for n in (1, 2, 4, 5, 6))
    assert all(3 not in request.page_numbers for request in transport.sent), "the page never reaches the model"
    capture = CaptureTransport()  # the batch lane's prepare: no record for it either
    assert convert_page(pages[2], CONFIG, capture, PRICES).reason == PAGE_TOO_LARGE and capture.requests == []
