"""One JSON convention (issues 24.4, 41.3): camelCase names only, data keys left alone, amounts decimal strings."""

from __future__ import annotations

from decimal import Decimal

import batchlane.naming
from batchlane.naming import api_case, api_json, money


def test_field_names_turn_camel_case_while_data_keys_stay_as_they_are():
    answer = {
        "eta_seconds": 3,
        "files": {"to_convert": 2, "failing": {"folders/my_docs/old_scan.pdf": "PDF_NOT_PDF"}, "by_type": {".pdf": 2}},
        "spec": {"output": {"on_existing": "skip"}, "options": {"_batchLane": True, "page_form": "x"}},
    }
    out = api_case(answer)
    assert out == {
        "etaSeconds": 3,
        "files": {"toConvert": 2, "failing": {"folders/my_docs/old_scan.pdf": "PDF_NOT_PDF"}, "byType": {".pdf": 2}},
        "spec": {"output": {"onExisting": "skip"}, "options": {"_batchLane": True, "page_form": "x"}},  # the user's own options, untouched
    }


def test_no_deprecated_snake_case_alias_is_written_any_more():
    """Decision 0012's ``with_legacy_fields`` wrote each snake_case name beside its camelCase one until 0.3.0: gone."""
    assert not hasattr(batchlane.naming, "with_legacy_fields") and not hasattr(batchlane.naming, "LEGACY_UNTIL")


def test_a_report_built_with_floats_answers_its_amounts_as_the_apis_decimal_strings():
    report = {"total_cost_usd": 9.1638, "batch": {"cost_usd": 0.0, "records": 3}, "on_demand": {"tiers": {"flex": {"cost_usd": Decimal("0.010000")}}}}
    assert api_json(report) == {"totalCostUsd": "9.1638", "batch": {"costUsd": "0", "records": 3}, "onDemand": {"tiers": {"flex": {"costUsd": "0.010000"}}}}
    assert (money(None), money(1e-6), money(12)) == (None, "0.000001", "12")
