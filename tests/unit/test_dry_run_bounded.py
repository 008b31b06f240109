"""The single-file dry run inside the API's 29 s reads a bounded part of a large upload (issue 21.2): it used to
download and survey the whole file (up to 500 MB). Over batchlane_dry_run_survey_mb only the page tree is read,
by ranged GETs (S3 through moto, botocore's real request path); a tree not read within the bound answers a range."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import boto3
import pytest
from moto import mock_aws

from batchlane.aws.s3 import S3Store
from batchlane.config import Settings
from batchlane.domain.cost import PriceTable
from batchlane.filejob import dryrun
from batchlane_dev.local.pdfgen import make_pdf
from fakes import FakeUnitOfWork

BUCKET = "dry-run-tests"
PAGES = 1500  # ~1.3 MB


class CountingStore(S3Store):
    """The real adapter, counting the bytes it fetched."""

    fetched = 0

    def read_range(self, key: str, start: int, length: int) -> bytes:
        data = super().read_range(key, start, length)
        self.fetched += len(data)
        return data

    def download_to(self, key: str, path: Path, *, max_bytes: int | None = None) -> int:
        written = super().download_to(key, path, max_bytes=max_bytes)
        self.fetched += written
        return written


@pytest.fixture
def store() -> Iterator[CountingStore]:
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket=BUCKET)
        yield CountingStore(client, BUCKET)


@pytest.fixture(scope="module")
def big_pdf() -> bytes:
    """The 1,500-page upload (made once: reportlab takes most of a second for it)."""
    return make_pdf(PAGES)


def _dry_run(store: CountingStore, data: bytes, **settings: Any) -> dict[str, Any]:
    store.put_bytes("uploads/f/big.pdf", data)
    config = Settings(batchlane_dry_run_survey_mb=1, **settings)
    svc: Any = SimpleNamespace(settings=config, store=store, prices=PriceTable(config.batchlane_prices), uow=FakeUnitOfWork)  # page forms
    return dryrun.dry_run(svc, {"id": "f", "name": "big.pdf", "s3_key": "uploads/f/big.pdf"}, {})


def test_a_large_upload_is_counted_from_its_page_tree_not_downloaded(store: CountingStore, big_pdf: bytes) -> None:
    data = big_pdf
    assert len(data) > 1024 * 1024
    answer = _dry_run(store, data)
    # The pages are exact, and a small part of the file was read (today: all of it, then a survey of every page)
    assert store.fetched < len(data) // 4, (store.fetched, len(data))
    assert answer["pages"]["total"] == PAGES and answer["inspection"]["method"] == "page_tree"
    # The estimate says what it rests on, and the cost is a range up to its worst case (every page's text unknown),
    # of which it holds a part at a time (issue 38.4)
    assert "page tree" in answer["inspection"]["note"] and "without text" in answer["estimate"]["basis"]
    estimate = answer["estimate"]
    assert Decimal(estimate["rangeUsd"]["high"]) == Decimal(estimate["worstCaseUsd"]) > Decimal(estimate["costUsd"])
    assert 0 < Decimal(estimate["holdUsd"]) < Decimal(estimate["worstCaseUsd"])


def test_a_page_tree_not_read_within_the_bound_answers_a_range(store: CountingStore, big_pdf: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    # A file whose cross-reference table is gone: pdfium would rebuild it by reading the whole file
    data = big_pdf
    broken = data[: data.rindex(b"xref")] + b"%%EOF\n"
    monkeypatch.setattr(dryrun, "DRY_RUN_RANGED_BYTES", 512 * 1024)
    answer = _dry_run(store, broken)
    assert store.fetched <= 512 * 1024
    assert answer["pages"]["total"] is None and answer["pages"]["range"] == [1, Settings().batchlane_max_pages]
    assert answer["inspection"]["method"] == "not_inspected" and "not counted" in answer["inspection"]["note"]


def test_a_small_upload_is_still_surveyed_whole(store: CountingStore) -> None:
    answer = _dry_run(store, make_pdf(20, blank_every=5))
    assert answer["pages"] == {"total": 20, "blank": 4, "scans": 0} and answer["inspection"]["method"] == "all_pages"
