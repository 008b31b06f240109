"""GroupConverter: multi-page answers, halving, truncation, coverage re-ask (emulated model, no HTTP)."""

from ondemand_fakes import CONFIG, PRICES, ModelTransport

from batchlane.claude import MULTI_PAGE_INSTRUCTION, ModelCallError
from batchlane.domain.markdown import PageText, render_page
from batchlane.ondemand import CoverageRule, GroupConverter, RequestPlan, Spend, planner, text_layer
from batchlane.ondemand.coverage import REASK_INSTRUCTION
from batchlane_dev.local.pdfgen import page_phrase

PLAN = RequestPlan()


def _converter(transport, *, coverage=CoverageRule(threshold=0)):
    return GroupConverter(chunk_index=0, config=CONFIG, transport=transport, prices=PRICES, coverage=coverage, spend=Spend())


def _group(pages, numbers):
    return [PLAN.plan(p) for p in pages if p.number in numbers]


def _own_text(results, total=12):
    return all(page_phrase(n, total) in r.markdown for n, r in results.items())


def test_five_pages_in_one_request_each_under_its_own_marker(pages):
    transport = ModelTransport()
    converter = _converter(transport)
    results = converter.convert(_group(pages, range(1, 6)))
    assert len(transport.sent) == 1 and transport.sent[0].text == MULTI_PAGE_INSTRUCTION
    assert sorted(results) == [1, 2, 3, 4, 5] and all(r.status == "converted" for r in results.values())
    assert _own_text(results)
    assert converter.spend.cost > 0 and converter.spend.usage.output_tokens > 0


def test_truncation_halves_down_to_single_pages_which_keep_their_text_and_are_marked(pages):
    # Given a model that always stops at max_tokens
    transport = ModelTransport(lambda request, n: "truncate")
    converter = _converter(transport)
    # When five pages are asked together
    results = converter.convert(_group(pages, range(1, 6)))
    # Then the answer is discarded and halved: 5 → 2+3 → 1+1 / 1+2 → 1+1 … down to every page alone
    sizes = [len(r.page_numbers) for r in transport.sent]
    assert sizes[0] == 5 and sizes.count(1) == 5 and len(sizes) == 9
    assert all(r.status == "truncated" and r.markdown for r in results.values()) and sorted(results) == [1, 2, 3, 4, 5]
    assert converter.spend.counts["pagesTruncated"] == 5 and converter.spend.counts["halvings"] == 4
    # every discarded answer is still paid for
    assert converter.spend.usage.input_tokens >= 1500 * sum(sizes)
    assert render_page(PageText(3, "truncated", results[3].markdown)).endswith("<!-- Page 3: truncated -->")


def test_skipped_repeated_or_reordered_markers_never_misplace_a_page(pages):
    for fault in ("markers_skip", "markers_repeat", "markers_reorder"):
        transport = ModelTransport(lambda request, n, fault=fault: fault if len(request.page_numbers) > 2 else None)
        converter = _converter(transport)
        results = converter.convert(_group(pages, range(1, 6)))
        assert sorted(results) == [1, 2, 3, 4, 5], fault
        assert _own_text(results), fault
        assert converter.spend.counts["halvings"] == 2, fault  # 5 → 2 + 3 → 3 → 1 + 2


def test_a_page_whose_section_is_empty_is_asked_alone(pages):
    transport = ModelTransport()
    converter = _converter(transport)
    original = transport.send

    def drop_page_two(request):
        answer = original(request)
        if len(request.page_numbers) > 1:
            text = answer.text.replace(f"{page_phrase(2, 12)}.", "")
            cut = text.index("<!-- Page 2 -->") + len("<!-- Page 2 -->")
            text = text[:cut] + "\n\n" + text[text.index("<!-- Page 3 -->") :]
            return type(answer)(text, answer.stop_reason, answer.usage, answer.served_by)
        return answer

    transport.send = drop_page_two
    results = converter.convert(_group(pages, range(1, 4)))
    assert [r.page_numbers for r in transport.sent] == [(1, 2, 3), (2,)]
    assert _own_text(results)


def test_low_coverage_is_re_asked_once_with_the_first_answer_in_the_prompt(pages):
    # Given a model whose first answer covers a third of the page, and whose re-ask is complete
    transport = ModelTransport(lambda request, n: "omit" if n == 1 else None)
    converter = _converter(transport, coverage=CoverageRule(threshold=0.6, min_words=20))
    results = converter.convert(_group(pages, [4]))
    _, reask = transport.sent
    assert reask.text.startswith(REASK_INSTRUCTION[:60]) and reask.page_numbers == (4,)
    assert "<first_answer>" in reask.text and results[4].markdown not in reask.text
    assert page_phrase(4, 12) in reask.text  # the first answer itself travels in the prompt
    assert converter.spend.counts == {"coverageReasks": 1, "coverageImproved": 1}
    assert CoverageRule().coverage(results[4].markdown, text_layer(pages[3].pdf_bytes)) > 0.9


def test_with_the_coverage_check_off_no_text_layer_is_extracted(pages, monkeypatch):
    extracted = []
    monkeypatch.setattr(planner, "text_layer", lambda pdf: extracted.append(pdf) or "")
    results = _converter(ModelTransport()).convert(_group(pages, range(1, 6)))
    assert all(r.status == "converted" for r in results.values()) and extracted == []
    results = _converter(ModelTransport(), coverage=CoverageRule(threshold=0.6)).convert(_group(pages, range(6, 9)))
    assert all(r.status == "converted" for r in results.values()) and len(extracted) == 3  # once a page, after its answer


def test_a_re_ask_no_better_than_the_first_answer_keeps_the_first(pages):
    transport = ModelTransport(lambda request, n: "omit")
    converter = _converter(transport, coverage=CoverageRule(threshold=0.6, min_words=20))
    results = converter.convert(_group(pages, [4]))
    assert len(transport.sent) == 2 and results[4].status == "converted"
    assert converter.spend.counts == {"coverageReasks": 1}


def test_throttling_past_the_budget_fails_the_pages_as_retryable_without_halving(pages):
    class Exhausted:
        sent = 0

        def send(self, request):
            self.sent += 1
            raise ModelCallError("ThrottlingException", "budget spent", retryable=True)

    transport = Exhausted()
    results = _converter(transport).convert(_group(pages, range(1, 6)))
    assert transport.sent == 1
    assert all(r.status == "failed" and r.retryable and r.reason == "ThrottlingException" for r in results.values()) and len(results) == 5


def test_a_multi_page_answer_is_shared_by_its_pages_to_the_token_and_the_micro_dollar(pages):
    # Issue 38.2 "the sum over pages": 5 pages in one request, tokens and cost not divisible by 5
    converter = _converter(ModelTransport())
    results = converter.convert(_group(pages, range(1, 6)))
    spend = converter.spend
    assert spend.usage.input_tokens % 5 or spend.usage.output_tokens % 5 or spend.cost * 1_000_000 % 5, "pick pages whose spend does not split evenly"
    assert sum(r.usage.input_tokens for r in results.values()) == spend.usage.input_tokens
    assert sum(r.usage.output_tokens for r in results.values()) == spend.usage.output_tokens
    assert sum(r.cost_usd for r in results.values()) == spend.cost  # before: each page usage // 5, so the pages added up to less


def test_a_discarded_answer_stays_on_the_pages_it_carried(pages):
    # Given a model whose multi-page answers lose a marker: each discarded answer is paid for and halved
    converter = _converter(ModelTransport(lambda request, n: "markers_skip" if len(request.page_numbers) > 2 else None))
    converter.convert(_group(pages, range(1, 6)))
    # Then what was spent, kept or discarded, is on the pages, exactly
    by_page = converter.spend.by_page
    assert sorted(by_page) == [1, 2, 3, 4, 5]
    assert sum(cost for _, cost in by_page.values()) == converter.spend.cost
    assert by_page[1][1] > 0 and by_page[5][1] > by_page[1][1], "pages 3-5 paid two discarded answers (5 and 3 pages), page 1 one"
