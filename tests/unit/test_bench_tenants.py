"""`tenant_isolation`'s model: the ratio B's equal share of the on-demand pace alone would give."""

from __future__ import annotations

import pytest

from batchlane_dev.bench.tenants import ENV, equal_share_ratio


def test_a_b_paced_by_the_rate_alone_is_slowed_by_its_half_of_the_pace() -> None:
    half_rate = float(ENV["BATCHLANE_ONDEMAND_RPM"]) / 60 / 2  # 4.75 pages a second at 570 a minute
    # alone: 2.5 s, of which 1.2 s processing its 20 pages; at half the rate they take 20 / 4.75 = 4.21 s
    assert equal_share_ratio(20, 2.5, {"processing_s": 1.2}) == pytest.approx((2.5 - 1.2 + 20 / half_rate) / 2.5, abs=0.01)
    assert equal_share_ratio(20, 2.5, {"processing_s": 1.2}) == pytest.approx(2.2, abs=0.01)


def test_a_b_slower_than_half_the_rate_alone_loses_nothing_to_the_share() -> None:
    assert equal_share_ratio(3, 10.0, {"processing_s": 6.0}) == 1.0


def test_without_b_s_stages_there_is_no_model() -> None:
    assert equal_share_ratio(20, 2.5, {}) is None
