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


def _sizes(plan, pages):
    return [len(g) for g in plan.groups(_planned(plan, [400] * pages))]


def test_with_starts_free_a_small_chunk_goes_in_smaller_groups_in_parallel():
    # 20 pages, 20 requests could start now: one page each, all at once (not 4 × 5 pages)
    plan, units = RequestPlan().for_chunk(20, 20, concurrency=4, most_parallel=20)
    assert (_sizes(plan, 20), units) == ([1] * 20, 20)
    # 10 starts free: pairs, ten at once
    plan, units = RequestPlan().for_chunk(20, 10, concurrency=4, most_parallel=20)
    assert (_sizes(plan, 20), units) == ([2] * 10, 10)
    # the chunk's own cap bounds it however much is free
    plan, units = RequestPlan().for_chunk(20, 32, concurrency=4, most_parallel=8)
    assert (_sizes(plan, 20), units) == ([3] * 6 + [2], 7)


def test_under_a_busy_quota_groups_stay_full():
    # nothing can start now, or the pace is off (unknown): five pages a request, as before
    for free in (0, None):
        plan, units = RequestPlan().for_chunk(20, free, concurrency=4, most_parallel=20)
        assert (_sizes(plan, 20), units) == ([5] * 4, 4)
    # three starts free for a 100-page chunk: still full groups
    plan, units = RequestPlan().for_chunk(100, 3, concurrency=4, most_parallel=20)
    assert (_sizes(plan, 100), units) == ([5] * 20, 4)
    # switched off (most_parallel 0): as before whatever is free
    plan, units = RequestPlan().for_chunk(20, 20, concurrency=4, most_parallel=0)
    assert (_sizes(plan, 20), units) == ([5] * 4, 4)


def test_the_token_and_page_limits_still_bound_a_group_sized_from_free_starts():
    # 2 starts free would ask for 10 pages a group: the API's 5 documents still hold
    plan, _ = RequestPlan().for_chunk(20, 2, concurrency=4, most_parallel=20)
    assert _sizes(plan, 20) == [5] * 4
    # and dense pages still split on the output budget (256 × 0.75 = 192 tokens: one ~125-token page each)
    plan, _ = RequestPlan(max_tokens=256).for_chunk(6, 2, concurrency=4, most_parallel=20)
    assert [len(g) for g in plan.groups(_planned(plan, [400] * 6))] == [1] * 6


def test_the_pace_frees_one_start_per_interval_up_to_its_burst():
    from batchlane.domain.pace import pace_starts_free

    interval = 60 / 57
    assert pace_starts_free(None, interval, 2) == 3  # never used: the whole burst
    assert pace_starts_free(-0.5, interval, 2) == 0  # the next start is still ahead
    assert pace_starts_free(0.0, interval, 19) == 1
    assert pace_starts_free(interval * 1.5, interval, 19) == 2
    assert pace_starts_free(3600.0, interval, 19) == 20  # idle for long: burst + 1


def test_a_small_chunk_and_a_single_free_start_still_size_the_groups():
    # pace unknown: the plan as configured, even for a chunk smaller than a group
    plan, units = RequestPlan().for_chunk(3, None, concurrency=4, most_parallel=20)
    assert (plan.pages_per_request, units) == (5, 4)
    # one page with starts free: a group of one
    plan, units = RequestPlan().for_chunk(1, 2, concurrency=1, most_parallel=20)
    assert (plan.pages_per_request, units) == (1, 1)
    # one start free: all the chunk's pages in one group
    plan, units = RequestPlan().for_chunk(3, 1, concurrency=1, most_parallel=20)
    assert (plan.pages_per_request, units) == (3, 1)
    # no pages: nothing to size
    assert RequestPlan().for_chunk(0, 5, concurrency=2, most_parallel=20) == (RequestPlan(), 2)


def test_the_plan_is_read_from_the_settings_by_name():
    from types import SimpleNamespace

    settings = SimpleNamespace(
        batchlane_pages_per_request="7", batchlane_max_documents_per_request=4, batchlane_max_tokens="4096",
        batchlane_output_fill="0.5", batchlane_output_tokens_per_page="900",
    )  # fmt: skip
    assert RequestPlan.from_settings(settings) == RequestPlan(pages_per_request=7, max_documents=4, max_tokens=4096, fill=0.5, default_estimate=900)


def test_no_pages_make_no_groups():
    assert RequestPlan().groups([]) == []


def _same_page(estimate, count):
    page = chunk_pages(1)[0]
    return [planner.PlannedPage(page, estimate) for _ in range(count)]


def test_a_group_may_fill_its_token_and_byte_budgets_exactly_and_each_new_group_starts_empty():
    from batchlane.ondemand.planner import GroupBuilder

    items = _same_page(10, 4)
    size = items[0].size
    # exactly the byte budget: two pages a group, never one (a new group starts at 0 bytes)
    builder = GroupBuilder(page_limit=2, budget=1e9, byte_budget=2 * size)
    groups = [g for item in items if (g := builder.add(item))]
    assert [len(g) for g in [*groups, builder.flush()]] == [2, 2]
    # exactly the token budget: 10 + 0 fits beside a 10-token page in a group of its own (a new group starts at 0 tokens)
    builder = GroupBuilder(page_limit=5, budget=10)
    pages = [*_same_page(10, 1), *_same_page(10, 1), *_same_page(0, 1)]
    assert builder.add(pages[0]) is None  # nothing closed yet
    assert [len(g) for g in [builder.add(pages[1]), builder.add(pages[2]) or [], builder.flush()]] == [1, 0, 2]
    # a builder flushed is as new: its next group starts at 0 tokens and 0 bytes
    builder = GroupBuilder(page_limit=5, budget=10, byte_budget=2 * size)
    builder.add(_same_page(3, 1)[0])
    builder.flush()
    assert builder.add(_same_page(10, 1)[0]) is None and builder.add(_same_page(0, 1)[0]) is None
    assert len(builder.flush()) == 2


def test_a_plans_byte_budget_is_its_request_limit_less_the_requests_own_overhead():
    from batchlane.domain.limits import REQUEST_OVERHEAD_BYTES

    assert RequestPlan(max_request_bytes=5_000_000).builder().byte_budget == 5_000_000 - REQUEST_OVERHEAD_BYTES
