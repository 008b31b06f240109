"""The page survey of a whole PDF (pages, blanks, scans, text) that a dry run and a funds hold price.

pdfium runs in one thread at a time (batchlane.pdf.split.PDFIUM_LOCK): the survey holds the lock throughout,
in a child process bounded in time and memory (batchlane.pdf.bounded): past either the file is PDF_TOO_COMPLEX.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import pypdfium2

from batchlane.domain.errors import InputError
from batchlane.observability import logger
from batchlane.pdf.bounded import Bound, OverBudget, run_bounded
from batchlane.pdf.split import PDFIUM_LOCK, sniff, unreadable_page_error

SAMPLE_PAGES = 1000
# A real 1,000-page sample surveys in 1-2 s and a few tens of MB; a file sharing one 5 MB stream of drawing
# operators across 300 pages needs 90 s, one page inflating to 30 MB ~540 MB (issue 21). Also a dry run's
# bound inside the API's 29 s. docs/architecture.md, "Hostile PDFs".
SURVEY_BOUND = Bound(seconds=15.0, memory_mb=384)
TOO_COMPLEX = "The PDF is too complex to read safely (its pages take more time or memory than allowed)."


@dataclass(frozen=True)
class PageSurvey:
    pages: int
    blank: int
    text_chars_nonblank: int  # over the non-blank pages
    scans: int  # non-blank pages without text
    inspected: int  # pages actually looked at (== pages unless sampled)


def survey_pdf(path: Path, *, max_pages: int, sample: int = SAMPLE_PAGES, bound: Bound = SURVEY_BOUND) -> PageSurvey:
    """Count pages, blank pages and text with pypdfium2; a seeded sample past ``sample`` pages.
    Run within ``bound`` (a killed child past it): InputError PDF_TOO_COMPLEX, never a retry of the same work.
    An empty file or one that is not a PDF is named as the split would name it (PDF_EMPTY, PDF_NOT_PDF), before any child."""
    with path.open("rb") as stream:
        refused = sniff(stream.read(1024), path.stat().st_size)
    if refused is not None:
        raise refused
    try:
        return run_bounded(survey_in_process, path, max_pages, sample, bound=bound)
    except OverBudget as exc:
        logger.warning("pdf survey stopped", reason=exc.reason, seconds=bound.seconds, memory_mb=bound.memory_mb)
        raise InputError(TOO_COMPLEX, error_id="PDF_TOO_COMPLEX") from exc


def survey_in_process(path: Path, max_pages: int, sample: int = SAMPLE_PAGES) -> PageSurvey:
    """The survey itself, unbounded: what the bounded child runs.

    All of it under PDFIUM_LOCK: offline, job splits run as threads of one process, and one survey
    outside the lock broke pdfium for every later document (folder_1000_files: 580 files PDF_CORRUPT)."""
    with PDFIUM_LOCK:
        return _survey_locked(path, max_pages=max_pages, sample=sample)


def _survey_locked(path: Path, *, max_pages: int, sample: int) -> PageSurvey:
    try:
        document = pypdfium2.PdfDocument(str(path))
    except pypdfium2.PdfiumError as exc:
        message = str(exc).lower()
        if "password" in message:
            raise InputError("The PDF is password-protected; remove the password and upload it again.", error_id="PDF_ENCRYPTED") from exc
        raise InputError("The PDF is damaged or is not a PDF.", error_id="PDF_CORRUPT") from exc
    try:
        count = len(document)
        if count == 0:
            raise InputError("The PDF has no pages.", error_id="PDF_NO_PAGES")
        if count > max_pages:
            raise InputError(f"The PDF has {count} pages; the limit is {max_pages}.", error_id="PDF_TOO_MANY_PAGES")
        # A seeded random sample, not every k-th page: a periodic layout (a blank page every 10) would alias.
        indexes = range(count) if count <= sample else sorted(random.Random(count).sample(range(count), sample))
        blank = scans = chars = 0
        for index in indexes:
            try:
                page = document[index]
            except pypdfium2.PdfiumError as exc:  # a page tree deeper than pdfium's limit, a broken page
                with path.open("rb") as stream:
                    raise unreadable_page_error(stream, in_bounded_child=True) from exc
            try:
                drawn = any(True for _ in page.get_objects(max_depth=1))
                text = page.get_textpage()
                try:
                    n = text.count_chars()
                finally:
                    text.close()
            finally:
                page.close()
            if not drawn:
                blank += 1
            elif n == 0:
                scans += 1
            else:
                chars += n
    finally:
        document.close()
    inspected = len(indexes)
    scale = count / inspected
    return PageSurvey(count, round(blank * scale), round(chars * scale), round(scans * scale), inspected)


class PageTreeUnreadable(Exception):
    """pdfium could not read the page tree (a damaged file, or a stream that stopped short)."""


def count_pages(stream: BinaryIO) -> int:
    """The page count from the page tree alone (pdfium reads the trailer, the catalog and the tree's root
    from ``stream`` as it needs them, never a page's content): what a dry run reads of a large upload.
    Raises PageTreeUnreadable (pdfium's errors stay inside pdf/)."""
    with PDFIUM_LOCK:
        try:
            document = pypdfium2.PdfDocument(stream)
        except pypdfium2.PdfiumError as exc:
            raise PageTreeUnreadable(str(exc)) from exc
        try:
            return len(document)
        finally:
            document.close()
