"""The real-book bench obtains its PDF itself, or says plainly why it cannot."""

from __future__ import annotations

import hashlib

import pytest

from batchlane_dev.bench import realbook


def test_without_apt_the_bench_says_what_it_needs_and_how_to_go_around_it(tmp_path, monkeypatch):
    monkeypatch.setenv("BATCHLANE_BENCH_CACHE", str(tmp_path))
    monkeypatch.delenv("BATCHLANE_REAL_BOOK", raising=False)
    monkeypatch.setattr(realbook.shutil, "which", lambda tool: None)
    with pytest.raises(realbook.BookUnavailable) as caught:
        realbook.real_book()
    message = str(caught.value)
    assert "texlive-pictures-doc=2022.20230122-3" in message and "apt-get" in message and "BATCHLANE_REAL_BOOK" in message


def test_a_cached_book_is_used_only_when_its_checksum_matches(tmp_path, monkeypatch):
    monkeypatch.setenv("BATCHLANE_BENCH_CACHE", str(tmp_path))
    monkeypatch.delenv("BATCHLANE_REAL_BOOK", raising=False)
    book = realbook.RealBook("pkg", "1.0", "./book.pdf", hashlib.sha256(b"%PDF-1.4 the book").hexdigest(), "free")
    (tmp_path / book.file_name).write_bytes(b"%PDF-1.4 the book")
    assert realbook.real_book(book) == tmp_path / book.file_name
    (tmp_path / book.file_name).write_bytes(b"%PDF-1.4 a damaged copy")
    monkeypatch.setattr(realbook.shutil, "which", lambda tool: None)  # so it must fetch again, and cannot
    with pytest.raises(realbook.BookUnavailable):
        realbook.real_book(book)
