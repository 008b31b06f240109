from decimal import Decimal

import pytest

from batchlane.domain.acceptance import judge
from batchlane.domain.cost import PriceTable, Usage
from batchlane.domain.eligibility import batch_eligible
from batchlane.domain.markdown import PageText, assemble
from batchlane.domain.prompt import prompt_hash
from batchlane.domain.records import parse_record_id, record_id

BASE = {"model_id": "m", "system": "s", "text": "t", "max_tokens": 100, "temperature": 0.0, "request_format": "f1"}


def test_record_id_round_trips_and_rejects_others():
    assert record_id(3, 151) == "c3-p151"
    assert parse_record_id("c3-p151") == (3, 151)
    with pytest.raises(ValueError):
        parse_record_id("c3-151")


@pytest.mark.parametrize(
    "field,value",
    [("model_id", "m2"), ("system", "s2"), ("text", "t2"), ("max_tokens", 101), ("temperature", 0.5), ("request_format", "f2")],
)
def test_prompt_hash_changes_with_every_covered_field(field, value):
    assert prompt_hash(**BASE) != prompt_hash(**{**BASE, field: value})


def test_prompt_hash_is_pinned():
    # Manifests of batch jobs in flight hold this hash: a change to its canonical form (sha256 of
    # sorted compact JSON) makes every primed answer mismatch and go on-demand. Change it deliberately.
    assert prompt_hash(**BASE) == "f67db5933e1576f3edf98c76a962d484db41699aebcc96d5c3da9d9b0044cb58"


@pytest.mark.parametrize(
    "text,stop,accepted",
    [
        ("# Title", "end_turn", True),
        ("", "end_turn", False),
        ("   \n", "end_turn", False),
        ("partial", "max_tokens", False),
        ("x", "guardrail_intervened", False),
        ("x", "content_filtered", False),
    ],
)
def test_acceptance_rule(text, stop, accepted):
    assert judge(text, stop).accepted is accepted


def test_batch_cost_is_half_of_on_demand():
    prices = PriceTable({"m": {"input_per_mtok": 3.0, "output_per_mtok": 15.0}})
    usage = Usage(1_000_000, 100_000)
    assert prices.cost("m", usage) == Decimal("4.500000")
    assert prices.cost("m", usage, batch=True) == Decimal("2.250000")
    with pytest.raises(KeyError):
        prices.cost("unknown", usage)


def test_eligibility():
    on = {"lane_configured": True, "min_pages": 600}
    assert batch_eligible({}, 600, **on) == (True, "large_job")
    assert batch_eligible({}, 599, **on) == (False, "too_few_pages")
    assert batch_eligible({"batchLane": True}, 10, **on) == (True, "bulk_opt_in")
    assert batch_eligible({"highFidelity": False}, 900, **on)[0] is False
    assert batch_eligible({"parser": "fast"}, 900, **on)[0] is False
    assert batch_eligible({"mathpix": True}, 900, **on)[0] is False
    assert batch_eligible({}, 900, lane_configured=False, min_pages=600) == (False, "lane_off")


def test_assembly_keeps_order_and_markers_and_refuses_a_missing_page():
    pages = [PageText(2, "failed", reason="content_filtered"), PageText(1, "converted", "Hello"), PageText(3, "converted", "")]
    out = assemble(pages, expected_pages=3)
    assert out.index("<!-- Page 1 -->") < out.index("Hello") < out.index("<!-- Page 2: failed (content_filtered) -->") < out.index("<!-- Page 3 -->")
    with pytest.raises(ValueError, match="no result"):
        assemble(pages[:2], expected_pages=3)


def test_a_failed_page_is_visible_once_the_markdown_is_rendered():
    """Issue 24.7: an HTML comment alone disappears in every renderer; the reader must see the gap."""
    import re

    out = assemble([PageText(1, "converted", "Hello"), PageText(2, "failed", reason="stop_reason=refusal")], expected_pages=2)
    visible = re.sub(r"<!--.*?-->", "", out, flags=re.S)  # what a Markdown renderer shows
    assert "> **Page 2 was not converted** (`stop_reason=refusal`)" in visible
    assert "<!-- Page 2: failed (stop_reason=refusal) -->" in out  # the machine-readable marker stays
