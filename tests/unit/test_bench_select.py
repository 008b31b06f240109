"""`make bench BENCH_ARGS=...`: --only picks figures, --skip leaves figures out (e.g. the hour-long 10^4-file folder)."""

from __future__ import annotations

from argparse import Namespace

from batchlane_dev.bench import folders, wanted


def test_only_and_skip_choose_what_is_computed() -> None:
    assert wanted(Namespace(only=[], skip=[]), "a", "b")
    assert wanted(Namespace(only=["b"], skip=[]), "a", "b")
    assert not wanted(Namespace(only=["c"], skip=[]), "a", "b")
    assert wanted(Namespace(only=[], skip=["a"]), "a", "b"), "one of two skipped: the other is still wanted"
    assert not wanted(Namespace(only=[], skip=["a", "b"]), "a", "b")
    assert not wanted(Namespace(only=["a"], skip=["a"]), "a", "b"), "skip wins over only"
    assert wanted(Namespace(only=[]), "a"), "a namespace without --skip (the smoke test's) wants everything"


def test_the_full_growth_figures_reach_ten_thousand_files_unless_skipped(monkeypatch) -> None:
    ran: list[tuple[int, ...]] = []
    monkeypatch.setattr(folders, "_growth", lambda sizes: ran.append(sizes) or iter(()))
    monkeypatch.setattr(folders, "_enumerate", lambda count: iter(()))
    monkeypatch.setattr(folders, "_folder", lambda files: iter(()))
    list(folders.figures(Namespace(only=[], skip=[], quick=False, smoke=False)))
    list(folders.figures(Namespace(only=[], skip=["folder_growth_10000_files"], quick=False, smoke=False)))
    list(folders.figures(Namespace(only=["folder_growth_10000_files"], skip=[], quick=False, smoke=False)))
    assert ran == [(100, 1000, 10_000), (100, 1000), (10_000,)]
