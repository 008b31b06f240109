"""The folder dry run's page estimate (folders/dryrun.extrapolate): exact when every file is counted,
else scaled by bytes with the range the counted files allow."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from batchlane.folders import dryrun
from batchlane.folders.dryrun import Counted, _within, extrapolate


def test_every_file_counted_is_exact_and_its_range_is_one_number() -> None:
    counted = [Counted(1_000, 2, text_chars=400), Counted(50_000, 6), Counted(9_000, 1)]
    estimate = extrapolate(counted, [], max_pages=10_000)
    assert (estimate.total, estimate.low, estimate.high, estimate.method) == (9, 9, 9, "exact")
    assert estimate.text_chars == 9 * 200  # 200 characters a page in the surveyed file, over all 9 pages


def test_a_sample_is_scaled_by_bytes_and_the_range_holds_the_truth() -> None:
    # two files counted: 10 pages in 100 kB and 2 pages in 100 kB; 300 kB not counted
    counted = [Counted(100_000, 10), Counted(100_000, 2)]
    estimate = extrapolate(counted, [100_000, 100_000, 100_000], max_pages=10_000)
    assert estimate.method == "extrapolated"
    assert estimate.total == 12 + 18  # 6 pages per 100 kB on average
    assert (estimate.low, estimate.high) == (12 + 6, 12 + 30)  # the sparsest and the densest file's pages per byte


def test_the_range_never_goes_below_a_page_a_file_nor_above_the_page_limit() -> None:
    estimate = extrapolate([Counted(10_000_000, 1)], [10, 10, 10], max_pages=50)
    assert estimate.low >= 1 + 3
    assert extrapolate([Counted(10, 40)], [10_000_000], max_pages=50).high == 40 + 50


def test_nothing_counted_in_time_gives_the_widest_honest_range() -> None:
    estimate = extrapolate([], [1_000, 2_000], max_pages=100)
    assert (estimate.low, estimate.high, estimate.files_counted) == (2, 200, 0)


def test_the_counts_end_at_their_deadline_without_waiting_for_one_still_running(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 40: a folder dry run promised within 15 s took 119 s, waiting for the counts still running at the
    deadline. One count is held until after the call; the call must come back without it.

    The deadline is read from a clock the test moves (once the held count runs and the other one was collected),
    not the real one: a loaded CI once ran past a real 0.5 s deadline before the held count even started."""
    now = [1000.0]
    monkeypatch.setattr(dryrun, "time", SimpleNamespace(monotonic=lambda: now[0]))
    held, release, collected = threading.Event(), threading.Event(), threading.Event()

    def work(index: int) -> Counted:
        if index == 1:
            held.set()
            release.wait(120)  # held until the test lets go, after the call came back
        return Counted(100, index + 1)

    def on_done(counted: int) -> None:
        if counted >= 1:
            collected.set()

    answer: dict[int, Counted] = {}
    call = threading.Thread(target=lambda: answer.update(_within(work, [0, 1], deadline_s=0.5, on_done=on_done)))
    call.start()
    assert held.wait(60) and collected.wait(60), "both counts started and the first one was collected before the deadline"
    now[0] += 0.5  # the deadline
    call.join(timeout=60)  # the held count would keep a waiting call past this
    returned = not call.is_alive()
    release.set()
    call.join()
    assert returned, "the call waited for the count still running past its deadline"
    assert answer == {0: Counted(100, 1)}  # what ended in time, nothing of the held one
