"""filejob/assemble.py: the figure regions Assemble hands to the figure pass, read from the pages' Markdown."""

from __future__ import annotations

from batchlane.claude.page import PageResult
from batchlane.filejob.assemble import described_regions


def test_only_pages_whose_figures_carry_a_region_are_listed_with_their_boxes() -> None:
    results = iter(
        [
            PageResult(1, "converted", "Text only."),
            PageResult(2, "converted", "Intro.\n\n*A bar chart (region: 0.1, 0.2, 0.9, 0.55).*\n\n*[Figure: a photo (region: 0.05, 0.6, 0.5, 0.95)]*"),
            PageResult(3, "converted", "*[Figure: a logo]*"),  # described, no region: nothing to crop
            PageResult(4, "failed", "", reason="ThrottlingException"),
        ]
    )
    assert described_regions(results) == {2: [(0.1, 0.2, 0.9, 0.55), (0.05, 0.6, 0.5, 0.95)]}
