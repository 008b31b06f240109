"""Open, validate and split PDFs: pdfium copies and writes pages, pypdf reads content streams.

Every stage that needs pages calls :func:`open_pdf` then :meth:`PdfDocument.pages`, so
the page numbers (1-based) and chunk boundaries the chunk processor sees are exactly
the ones the batch lane used for its record ids.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import logging
import os
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
from pypdf import PdfReader
from pypdf.errors import FileNotDecryptedError, LimitReachedError

from batchlane.domain.errors import InputError
from batchlane.domain.limits import MAX_PAGE_CONTENT_BYTES, PAGE_TOO_COMPLEX
from batchlane.observability import logger
from batchlane.pdf.bounded import Bound, OverBudget, run_bounded
from batchlane.pdf.content import MAX_CONTENT_SCAN_BYTES, PAGE_READ_BUDGET_S, BudgetExceeded, Deadline, strip_literal_strings
from batchlane.pdf.pagecopy import ChunkObjects

logging.getLogger("pypdf").setLevel(logging.ERROR)  # pypdf warns loudly about harmless quirks

# pdfium must never run in two threads at once, not even on different documents (pypdfium2's
# "Thread incompatibility" note); the offline stack runs Lambdas as threads of one process.
PDFIUM_LOCK = threading.RLock()
# No clock in what pdfium writes: a new document gets no /CreationDate, so page bytes are a
# function of the input alone (the batch record and the on-demand call carry the same page).
pdfium_c.FPDF_SetSandBoxPolicy(pdfium_c.FPDF_POLICY_MACHINETIME_ACCESS, False)

# Content-stream operators that put marks on a page. A page whose streams use none of
# them is blank: no text extraction needed, and no model call is spent on it.
_PAINTING_OPERATOR = re.compile(rb"(?:^|(?<=[\s)\]>]))(?:Tj|TJ|'|\"|Do|sh|EI|f\*?|F|B\*?|b\*?|S|s)(?=[\s(\[/<]|$)")
# The hex strings a content stream shows: counted (literal ones are read by batchlane.pdf.content).
_HEX_STRING = re.compile(rb"<([0-9A-Fa-f\s]*)>")  # never matches a "<<" dictionary
_ASCII_WHITESPACE = b" \t\n\r\f\v"  # what \s matches in a bytes pattern
# pypdf's reading of a file pdfium refused runs in Python and cannot be stopped part way: a 70 MB file of 900,000
# objects and no xref took 24-31 s to rebuild (issue 40). It runs in the bounded child; past the bound the file is
# PDF_TOO_COMPLEX, the same answer for the split and the dry run, in at most this long (docs/operations.md "Bounds").
DIAGNOSE_BOUND = Bound(seconds=10.0, memory_mb=768)


@dataclass(frozen=True)
class ChunkSpan:
    index: int  # from 0
    first_page: int  # 1-based, inclusive
    last_page: int  # inclusive

    @property
    def page_count(self) -> int:
        return self.last_page - self.first_page + 1

    def page_numbers(self) -> range:
        return range(self.first_page, self.last_page + 1)


@dataclass(frozen=True)
class Page:
    number: int  # 1-based in the whole document
    chunk_index: int
    pdf_bytes: bytes  # a one-page PDF
    blank: bool
    # Characters in the strings the page's content stream shows: its text's size without
    # extracting it (a few µs against pypdf's ~3 ms). 0 for a scan, or for text drawn
    # only inside form XObjects; the planner then uses its default estimate.
    text_chars: int = 0
    # Why the page cannot be sent at all (``PAGE_TOO_LARGE``): it is marked failed at once, with no call.
    failure: str | None = None
    # False when the content read was cut short (byte bound, time budget, unreadable stream):
    # the page is then never called blank and ``text_chars`` is 0, so the planner's default applies.
    estimate_known: bool = True


def plan_chunks(total_pages: int, pages_per_chunk: int) -> list[ChunkSpan]:
    if total_pages < 1:
        raise ValueError("a document has at least one page")
    if pages_per_chunk < 1:
        raise ValueError("pages_per_chunk must be at least 1")
    return [ChunkSpan(index, first, min(first + pages_per_chunk - 1, total_pages)) for index, first in enumerate(range(1, total_pages + 1, pages_per_chunk))]


class PdfDocument:
    """A validated PDF. Construct through :func:`open_pdf` (or :func:`open_chunk` for one chunk's PDF).

    ``first_page`` is the document page number of this PDF's first page: 1 for a whole
    document, the chunk's first page for a chunk PDF, so page numbers never shift.
    Pages are copied and written by pdfium (C); pypdf reads the content streams for the
    blank check and the text estimate (docs/architecture.md, "PDF engine").
    """

    def __init__(self, source: bytes | BinaryIO, document: pdfium.PdfDocument, first_page: int = 1, *, written_by_pdfium: bool = False) -> None:
        self._source = source  # bytes, or the open file pdfium reads from
        self._pdfium = document
        self.first_page = first_page
        self.page_count = len(document)
        self._reader: PdfReader | None = None
        # A chunk PDF this code wrote: its pages are cut from its objects' bytes (batchlane.pdf.pagecopy).
        self._written_by_pdfium = written_by_pdfium and isinstance(source, bytes)
        self._objects: ChunkObjects | None = None
        self._objects_read = False

    def close(self) -> None:
        with PDFIUM_LOCK:
            if hasattr(self, "_pdfium"):
                self._pdfium.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # at interpreter exit the lock or pdfium may already be gone
            self.close()  # under the lock: pdfium may not run in two threads at once, not even to close

    def chunk_pdf(self, span: ChunkSpan) -> bytes:
        """The pages of ``span`` as one PDF: job creation stores one per chunk, so later stages
        download and parse only their own chunk (a 5,000-page page tree is costly to re-read)."""
        if not isinstance(self._source, bytes):
            # Read from a file, pdfium keeps every object it has loaded for the life of the document:
            # over a whole split a 500 MB scan would end up in memory. A fresh handle per chunk keeps
            # memory at about one chunk (tests/unit/test_pdf.py); reopening costs one xref read.
            with PDFIUM_LOCK:
                self._pdfium.close()
                self._pdfium = pdfium.PdfDocument(self._source)
        return self._copy([number - self.first_page for number in span.page_numbers()])

    def chunks(self, pages_per_chunk: int) -> list[ChunkSpan]:
        return plan_chunks(self.page_count, pages_per_chunk)

    def pages(self, span: ChunkSpan) -> Iterator[Page]:
        """Yield each page of ``span`` as its own one-page PDF, in order."""
        objects = self._chunk_objects()
        for number in span.page_numbers():
            index = number - self.first_page
            cut = objects.page_pdf(index) if objects is not None else None
            pdf_bytes = cut if cut is not None else self._copy([index])  # the cut carries its own stable /ID
            # Both copies keep content streams and annotations as they are, so the source page
            # reads the same as the copy (tests/unit/test_pdf.py holds this on real files).
            blank, text_chars, known, failure = self._inspect(number)
            yield Page(number=number, chunk_index=span.index, pdf_bytes=pdf_bytes, blank=blank, text_chars=text_chars, estimate_known=known, failure=failure)

    def _inspect(self, number: int, deadline: Deadline | None = None) -> tuple[bool, int, bool, str | None]:
        """(blank, text_chars, estimate_known, failure) of one page, within :data:`PAGE_READ_BUDGET_S`: a
        page pypdf cannot read, or that runs out of time, is "not blank, estimate unknown", never an error;
        one whose content inflates past :data:`MAX_PAGE_CONTENT_BYTES` fails PAGE_TOO_COMPLEX (never sent)."""
        try:
            reader = self._pypdf()  # opened once per document: not a cost of this page
            deadline = deadline or Deadline(PAGE_READ_BUDGET_S)
            source = reader.pages[number - self.first_page]
            blank, text_chars, known = _read_contents(source, deadline)
            deadline.check()
            return blank and not _has_visible_annotations(source, deadline), text_chars, known, None
        except PageTooComplex as exc:
            logger.warning("page too complex", page=number, content_bytes=exc.content_bytes, limit=MAX_PAGE_CONTENT_BYTES)
            return False, 0, False, PAGE_TOO_COMPLEX
        except Exception as exc:  # PdfReadError, BudgetExceeded, RecursionError, ...
            logger.warning("page content not inspected", page=number, error=type(exc).__name__)
            return False, 0, False, None

    def _chunk_objects(self) -> ChunkObjects | None:
        """The object table of a chunk PDF pdfium wrote, read once; None if it is not laid out as expected."""
        if not self._objects_read:
            self._objects_read = True
            if self._written_by_pdfium:
                assert isinstance(self._source, bytes)
                objects = ChunkObjects.parse(self._source)
                self._objects = objects if objects is not None and len(objects.kids) == self.page_count else None
        return self._objects

    def _pypdf(self) -> PdfReader:
        """pypdf's view of the same bytes, opened on first use: cheap on the chunk PDFs pdfium writes
        (a plain xref table), slow on a big file with object streams (only pages() needs it)."""
        if self._reader is None:
            if self._chunk_objects() is not None:
                # Every xref offset was checked against its object's header already: pypdf's own check
                # (its non-strict read seeks to each of them, ~2.5 ms a page on a real book) is skipped.
                with contextlib.suppress(Exception):
                    self._reader = PdfReader(_as_stream(self._source), strict=True)
                    self._reader.strict = False  # the pages are read as leniently as any other file's
        if self._reader is None:
            self._reader = PdfReader(_as_stream(self._source), strict=False)
            if self._reader.is_encrypted:
                self._reader.decrypt("")  # open_pdf accepted it: an owner password only
        return self._reader

    def _copy(self, indexes: list[int]) -> bytes:
        """A new PDF of these pages (0-based here), with everything they use, and the same bytes every time."""
        try:
            with PDFIUM_LOCK:
                target = pdfium.PdfDocument.new()
                try:
                    target.import_pages(self._pdfium, indexes)
                    buffer = io.BytesIO()
                    target.save(buffer)
                finally:
                    target.close()
        except pdfium.PdfiumError as exc:
            # pdfium opens a file by its xref and /Count; a page it cannot load (a page tree deeper than
            # its 1,024 levels, a broken page object) shows only here.
            raise unreadable_page_error(self._source) from exc
        return _stable_id(buffer.getvalue())


# pdfium writes a random file /ID (PDF 32000-1, 14.4) into every file it saves. Replaced by a
# digest of the file itself, so the same page is the same bytes in both lanes and in every run.
_FILE_ID = re.compile(rb"/ID\s*\[\s*<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>\s*\]")


def _stable_id(data: bytes) -> bytes:
    match = _FILE_ID.search(data, max(0, len(data) - 512))  # the trailer is at the end: never touch page content
    if match is None:
        return data
    (a, b), (c, d) = match.span(1), match.span(2)
    view = memoryview(data)
    digest = hashlib.blake2b(view[:a], digest_size=min(max((b - a) // 2, 1), 64))  # the file with its /ID zeroed
    for part in (b"0" * (b - a), view[b:c], b"0" * (d - c), view[d:]):
        digest.update(part)
    first = digest.hexdigest().upper().encode().ljust(b - a, b"0")
    second = first[: d - c].ljust(d - c, b"0")
    return b"".join((view[:a], first, view[b:c], second, view[d:]))


class PageTooComplex(Exception):
    """A page's decoded content is past :data:`MAX_PAGE_CONTENT_BYTES` (or pypdf's own inflate limit)."""

    def __init__(self, content_bytes: int | None) -> None:
        super().__init__(f"page content of {content_bytes} bytes")
        self.content_bytes = content_bytes


def _read_contents(page, deadline: Deadline) -> tuple[bool, int, bool]:  # type: ignore[no-untyped-def]
    """One pass over the page's decoded content stream, its first :data:`MAX_CONTENT_SCAN_BYTES`
    only: (blank, text_chars, estimate_known). Raises BudgetExceeded past ``deadline``, PageTooComplex
    past :data:`MAX_PAGE_CONTENT_BYTES` (checked before anything parses the operators)."""
    try:
        contents = page.get_contents()
        data = contents.get_data() if contents is not None else b""
    except LimitReachedError as exc:  # inflates past pypdf's 75 MB output limit: a decompression bomb
        raise PageTooComplex(None) from exc
    except Exception:  # an unreadable stream is not "blank": let the model look at it
        return False, 0, False
    if len(data) > MAX_PAGE_CONTENT_BYTES:
        raise PageTooComplex(len(data))
    deadline.check()
    cut = len(data) > MAX_CONTENT_SCAN_BYTES
    scan = strip_literal_strings(data[:MAX_CONTENT_SCAN_BYTES] if cut else data, deadline)
    deadline.check()
    if cut:  # what was not read may paint: never blank; a partial count is no estimate
        return False, 0, False
    blank = _PAINTING_OPERATOR.search(scan.stripped) is None
    return blank, scan.text_chars + _hex_chars(_HEX_STRING.findall(scan.stripped)), True


def _hex_chars(strings: list[bytes]) -> int:
    """Characters in hex strings: two digits each, per string, whitespace not counted (a real book shows ~600 a
    page: joined on "<", which no string holds, the whitespace dropped and split again, all at C speed)."""
    lengths = list(map(len, b"<".join(strings).translate(None, _ASCII_WHITESPACE).split(b"<")))
    return (sum(lengths) - sum(map((1).__and__, lengths))) // 2  # each string's odd last digit dropped


# Annotations a viewer draws from their appearance stream (filled form fields, stamps,
# free text); a link or a popup draws nothing on its own.
_INVISIBLE_ANNOTATIONS = frozenset({"/Link", "/Popup"})
_HIDDEN_FLAGS = 0b10 | 0b100000  # Hidden, NoView (PDF 32000-1, 12.5.3)


def _has_visible_annotations(page, deadline: Deadline) -> bool:  # type: ignore[no-untyped-def]
    """A page whose content stream is empty can still show filled fields or a stamp: not blank.
    Past ``deadline`` (a page of a million annotations) it raises BudgetExceeded."""
    try:
        for ref in page.get("/Annots") or []:
            deadline.check()
            annotation = ref.get_object()
            if annotation.get("/Subtype") in _INVISIBLE_ANNOTATIONS or int(annotation.get("/F", 0)) & _HIDDEN_FLAGS:
                continue
            if annotation.get("/AP") is not None:
                return True
    except BudgetExceeded:
        raise
    except Exception:  # an unreadable annotation is not proof of a blank page
        return True
    return False


def open_pdf(data: bytes, *, max_pages: int) -> PdfDocument:
    """Validate ``data`` as a PDF we can convert, or raise :class:`InputError` with a stable id."""
    return _open(data, data[:1024], data[-2048:], len(data), max_pages=max_pages)


def open_pdf_file(stream: BinaryIO, *, max_pages: int) -> PdfDocument:
    """:func:`open_pdf` over a seekable binary stream (an open file): pdfium reads blocks from it
    as pages need them, so a 500 MB upload on disk is never loaded whole. Keep it open while
    the document is used."""
    stream.seek(0, io.SEEK_END)
    size = stream.tell()
    stream.seek(0)
    head = stream.read(1024)
    stream.seek(max(0, size - 2048))
    tail = stream.read(2048)
    stream.seek(0)
    return _open(stream, head, tail, size, max_pages=max_pages)


def sniff(head: bytes, size: int) -> InputError | None:
    """The first check on any upload, from its size and first 1,024 bytes: PDF_EMPTY or PDF_NOT_PDF, else None.
    The CLI runs the same rule before it uploads anything (docs/operations.md)."""
    if size == 0:
        return InputError("The file is empty.", error_id="PDF_EMPTY")
    if b"%PDF-" not in head[:1024]:
        return InputError("The file is not a PDF (it does not start with %PDF-).", error_id="PDF_NOT_PDF")
    return None


def _open(source: bytes | BinaryIO, head: bytes, tail: bytes, size: int, *, max_pages: int) -> PdfDocument:
    if (refused := sniff(head, size)) is not None:
        raise refused
    try:
        with PDFIUM_LOCK:  # the wrapper counts the pages: a pdfium call too
            opened = PdfDocument(source, pdfium.PdfDocument(source))
    except pdfium.PdfiumError as exc:
        # pdfium's error code can be stale (FPDF_GetLastError keeps an earlier failure's code),
        # so pypdf says why: password, no pages, damaged.
        _diagnose_with_pypdf(source)
        raise InputError("The PDF is damaged or truncated and cannot be read.", error_id="PDF_CORRUPT") from exc
    if opened.page_count == 0:
        raise InputError("The PDF has no pages.", error_id="PDF_NO_PAGES")
    if opened.page_count > max_pages:
        raise InputError(f"The PDF has {opened.page_count} pages; the limit is {max_pages}.", error_id="PDF_TOO_MANY_PAGES")
    if b"%%EOF" not in tail:
        # pdfium, like pypdf, can often rebuild a cut file, but pages past the cut would be lost silently.
        raise InputError("The PDF is damaged or truncated and cannot be read.", error_id="PDF_CORRUPT")
    return opened


def _diagnose_with_pypdf(source: bytes | BinaryIO) -> None:
    """Raise the :class:`InputError` pypdf's reading explains, in the bounded child (:data:`DIAGNOSE_BOUND`): only for
    files pdfium refused, whose reading can take minutes; past the bound PDF_TOO_COMPLEX, saying so."""
    bound = DIAGNOSE_BOUND
    try:
        run_bounded(diagnose_in_process, _portable(source), bound=bound)
    except OverBudget as exc:
        logger.warning("pdf diagnosis stopped", reason=exc.reason, seconds=bound.seconds, memory_mb=bound.memory_mb)
        raise InputError(
            f"The PDF's structure could not be read within {bound.seconds:g} s and {bound.memory_mb} MB (pdfium refused it; its objects take too long to recover).",
            error_id="PDF_TOO_COMPLEX",
        ) from exc


def _portable(source: bytes | BinaryIO) -> bytes | Path:
    """What the child can be given: the bytes, or the path of the open file (never the file object itself)."""
    if isinstance(source, bytes):
        return source
    name = getattr(source, "name", None)
    if isinstance(name, str) and os.path.isfile(name):
        return Path(name)
    source.seek(0)
    return source.read()


def diagnose_in_process(source: bytes | Path) -> None:
    """The diagnosis itself, unbounded: what the bounded child runs (bytes, or the path of the file)."""
    try:
        if isinstance(source, Path):
            with source.open("rb") as stream:
                _diagnose_stream(stream)
        else:
            _diagnose_stream(io.BytesIO(source))
    except OSError as exc:
        raise InputError("The PDF is damaged or truncated and cannot be read.", error_id="PDF_CORRUPT") from exc


def _diagnose_stream(stream: BinaryIO) -> None:
    try:
        reader = PdfReader(stream, strict=False)
        if reader.is_encrypted and not reader.decrypt(""):
            raise InputError("The PDF is password-protected; remove the password and upload it again.", error_id="PDF_ENCRYPTED")
        count = len(reader.pages)
    except InputError:
        raise
    except FileNotDecryptedError as exc:
        raise InputError("The PDF is password-protected; remove the password and upload it again.", error_id="PDF_ENCRYPTED") from exc
    except (LimitReachedError, RecursionError) as exc:  # a page tree thousands of levels deep, an xref of 50 million entries
        raise InputError("The PDF's structure is too complex to read safely (nesting or sizes past reader limits).", error_id="PDF_TOO_COMPLEX") from exc
    except Exception as exc:  # PdfReadError, PdfStreamError, and whatever else a damaged file makes pypdf raise
        raise InputError("The PDF is damaged or truncated and cannot be read.", error_id="PDF_CORRUPT") from exc
    if count == 0:
        raise InputError("The PDF has no pages.", error_id="PDF_NO_PAGES")


def unreadable_page_error(source: bytes | BinaryIO, *, in_bounded_child: bool = False) -> InputError:
    """The error for a file pdfium opened but whose pages it cannot load: pypdf says why
    (PDF_TOO_COMPLEX past its depth and size limits or the bound, PDF_ENCRYPTED), else PDF_CORRUPT.
    ``in_bounded_child``: the caller already runs bounded (the survey), so pypdf reads here, not in another child."""
    try:
        if in_bounded_child:
            diagnose_in_process(_portable(source))
        else:
            _diagnose_with_pypdf(source)
    except InputError as exc:
        return exc
    return InputError("The PDF is damaged and its pages cannot be read.", error_id="PDF_CORRUPT")


def _as_stream(source: bytes | BinaryIO) -> BinaryIO:
    if isinstance(source, bytes):
        return io.BytesIO(source)
    source.seek(0)
    return source


def open_chunk(data: bytes, span: ChunkSpan) -> PdfDocument:
    """A chunk PDF written by :meth:`PdfDocument.chunk_pdf`; its pages keep their document numbers."""
    with PDFIUM_LOCK:
        document = PdfDocument(data, pdfium.PdfDocument(data), first_page=span.first_page, written_by_pdfium=True)
    if document.page_count != span.page_count:
        raise ValueError(f"chunk {span.index} PDF has {document.page_count} pages, expected {span.page_count}")
    return document
