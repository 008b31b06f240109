"""Fixtures for the on-demand unit tests (the fakes live in ondemand_fakes.py)."""

import pytest
from ondemand_fakes import chunk_pages

from batchlane.pdf.split import Page


@pytest.fixture(scope="module")
def pages() -> list[Page]:
    return chunk_pages(12)
