"""The on-demand limit's settings as the deployment gives them (domain/pace.py): each read from its own variable, and
the point after which an owner leaves the burst to others (decision 0036's arithmetic)."""

from __future__ import annotations

from batchlane.config import Settings
from batchlane.domain.pace import BUSY_AFTER_BURSTS, LimitSettings, pace_busy_after


def test_each_limit_is_read_from_its_own_setting() -> None:
    settings = Settings(
        batchlane_global_concurrency=7,
        batchlane_ondemand_rpm=570.5,
        batchlane_ondemand_burst=9,
        batchlane_lease_ttl_s=480,
        batchlane_lease_wait_s=120,
    )

    assert LimitSettings.from_settings(settings) == LimitSettings(concurrency=7, rpm=570.5, burst=9, lease_ttl_s=480.0, lease_wait_s=120.0)


def test_an_owner_leaves_the_burst_after_four_bursts_of_starts() -> None:
    # burst + 1 starts make one burst: 40 at the default burst of 9, a 20-page job never gets there.
    assert BUSY_AFTER_BURSTS == 4
    assert [pace_busy_after(burst) for burst in (0, 9, 19)] == [4, 40, 80]
