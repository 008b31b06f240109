"""How many pages go in one request."""

from dataclasses import replace

from ondemand_fakes import chunk_pages

from batchlane.ondemand import planner
from batchlane.ondemand.planner import RequestPlan


def _planned(plan, sizes):
    """Pages whose text is ``sizes`` characters long."""
    pages = chunk_pages(len(sizes))
    return [plan.plan(replace(page, text_chars=size)) for page, size in zip(pages, sizes, strict=True)]


def test_count_is_the_smallest_of_setting_api_limit_and_token_budget():
    size = 400  # ~125 output tokens a page
    assert [len(g) for g in RequestPlan(pages_per_request=20, max_documents=5).groups(_planned(RequestPlan(), [size] * 12))] == [5, 5, 2]
    assert [len(g) for g in RequestPlan(pages_per_request=3).groups(_planned(RequestPlan(), [size] * 7))] == [3, 3, 1]
    # 256 tokens * 0.75 = 192: one ~125-token page per request
    tight = RequestPlan(max_tokens=256)
    assert [len(g) for g in tight.groups(_planned(tight, [size] * 3))] == [1, 1, 1]


def test_a_dense_page_goes_alone_and_a_scan_counts_the_default_estimate():
    plan = RequestPlan(max_tokens=4000, fill=0.75, default_estimate=1200)  # budget 3000
    planned = _planned(plan, [400, 12000, 400, 0, 0])
    assert planned[3].estimate == 1200
    assert [[p.number for p in g] for g in plan.groups(planned)] == [[1], [2], [3, 4, 5]]


def test_planning_reads_no_text_layer_the_coverage_check_extracts_it_once(monkeypatch):
    extracted = []
    real = planner.text_layer
    monkeypatch.setattr(planner, "text_layer", lambda pdf: extracted.append(pdf) or real(pdf))
    plan = RequestPlan(max_tokens=2000)  # a 1,500-token budget
    planned = [plan.plan(page) for page in chunk_pages(6, lines_per_page=30)]
    assert all(600 < p.estimate < 720 for p in planned)  # ~2,100 characters a page
    assert [len(g) for g in plan.groups(planned)] == [2, 2, 2]
    assert extracted == []  # the estimate came from the content stream
    assert "page 2 of 6" in planned[1].layer and planned[1].layer is planned[1].layer
    assert extracted == [planned[1].page.pdf_bytes]
    # The estimate from the content stream is within a few percent of the one the text layer gives
    from_layer = [plan.estimate(len(p.layer.strip())) for p in planned]
    assert all(abs(p.estimate - e) <= 0.05 * e for p, e in zip(planned, from_layer, strict=True))


def test_heavy_pages_share_a_request_only_while_the_body_stays_under_the_request_size_limit():
    from batchlane.domain.limits import MAX_PAGE_BYTES, MAX_REQUEST_BYTES

    plan = RequestPlan(pages_per_request=5, max_documents=5)
    heavy = [plan.plan(replace(page, pdf_bytes=b"%" * MAX_PAGE_BYTES)) for page in chunk_pages(5)]
    groups = plan.groups(heavy)
    assert [len(g) for g in groups] == [3, 2]  # 4.5 MB raw is 6 MB in base64: three make 18 MB of a 20 MB body
    assert all(sum(p.size for p in g) <= MAX_REQUEST_BYTES for g in groups)
    light = _planned(plan, [400] * 5)
    assert [len(g) for g in plan.groups(light)] == [5]
