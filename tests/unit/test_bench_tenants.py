"""`tenant_isolation`'s model: the ratio B's share of the on-demand pace alone would give."""

from __future__ import annotations

import pytest

from batchlane.domain.pace import pace_ahead
from batchlane_dev.bench.tenant_model import ENV, pace_share_ratio


def test_a_b_paced_by_the_rate_alone_is_slowed_by_its_least_served_share_of_the_pace_after_the_burst() -> None:
    rate = float(ENV["BATCHLANE_ONDEMAND_RPM"]) / 60  # 9.5 pages a second at 570 a minute
    ahead = pace_ahead(1 / rate)
    assert ahead == 5  # 0.5 s worth of starts: B books 5 to A's 1
    burst = int(ENV["BATCHLANE_ONDEMAND_BURST"])
    # alone: 2.5 s, of which 1.2 s processing its 20 pages; under the flood its first 9 start at once (the burst A
    # leaves), the other 11 at 5/6 of the rate: 11 / 7.92 = 1.39 s
    assert pace_share_ratio(20, 2.5, {"processing_s": 1.2}) == pytest.approx((2.5 - 1.2 + (20 - burst) / (rate * 5 / 6)) / 2.5, abs=0.01)
    assert pace_share_ratio(20, 2.5, {"processing_s": 1.2}) == pytest.approx(1.08, abs=0.01)


def test_a_b_within_the_burst_loses_nothing_to_the_share() -> None:
    assert pace_share_ratio(5, 2.0, {"processing_s": 0.5}) == 1.0


def test_a_b_slower_than_its_share_of_the_rate_alone_loses_nothing_to_the_share() -> None:
    assert pace_share_ratio(3, 10.0, {"processing_s": 6.0}) == 1.0


def test_without_b_s_stages_there_is_no_model() -> None:
    assert pace_share_ratio(20, 2.5, {}) is None
