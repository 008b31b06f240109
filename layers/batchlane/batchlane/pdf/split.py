"""Open, validate and split PDFs with pypdf.

Every stage that needs pages calls :func:`open_pdf` then :meth:`PdfDocument.pages`, so
the page numbers (1-based) and chunk boundaries the chunk processor sees are exactly
the ones the batch lane used for its record ids.
"""

from __future__ import annotations

import io
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

from pypdf import PdfReader, PdfWriter
from pypdf.errors import FileNotDecryptedError, PdfReadError, PdfStreamError

from batchlane.domain.errors import InputError

logging.getLogger("pypdf").setLevel(logging.ERROR)  # pypdf warns loudly about harmless quirks

# Content-stream operators that put marks on a page. A page whose streams use none of
# them is blank: no text extraction needed, and no model call is spent on it.
_PAINTING_OPERATOR = re.compile(rb"(?:^|(?<=[\s)\]>]))(?:Tj|TJ|'|\"|Do|sh|EI|f\*?|F|B\*?|b\*?|S|s)(?=[\s(\[/<]|$)")
# The strings a content stream shows (literal and hex): stripped before looking for operators, and counted.
_LITERAL_STRING = re.compile(rb"\((?:\\.|[^\\)])*\)")
_HEX_STRING = re.compile(rb"<([0-9A-Fa-f\s]*)>")  # never matches a "<<" dictionary
_WHITESPACE = re.compile(rb"\s+")


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
    """

    def __init__(self, reader: PdfReader, first_page: int = 1) -> None:
        self._reader = reader
        self.first_page = first_page

    @property
    def page_count(self) -> int:
        return len(self._reader.pages)

    def chunk_pdf(self, span: ChunkSpan) -> bytes:
        """The pages of ``span`` as one PDF: job creation stores one per chunk, so later stages
        download and parse only their own chunk (a 5,000-page page tree is costly to re-read)."""
        writer = PdfWriter()
        for number in span.page_numbers():
            writer.add_page(self._reader.pages[number - self.first_page])
        buffer = io.BytesIO()
        writer.write(buffer)
        # pypdf keeps every object it parsed: over a whole split, a 500 MB document's images would
        # all stay in memory. Drop them once the chunk is written; the next chunk re-reads its own.
        self._reader.resolved_objects.clear()
        return buffer.getvalue()

    def chunks(self, pages_per_chunk: int) -> list[ChunkSpan]:
        return plan_chunks(self.page_count, pages_per_chunk)

    def pages(self, span: ChunkSpan) -> Iterator[Page]:
        """Yield each page of ``span`` as its own one-page PDF, in order."""
        for number in span.page_numbers():
            source = self._reader.pages[number - self.first_page]
            writer = PdfWriter()
            writer.add_page(source)
            buffer = io.BytesIO()
            writer.write(buffer)
            blank, text_chars = _read_contents(source)
            blank = blank and not _has_visible_annotations(source)
            yield Page(number=number, chunk_index=span.index, pdf_bytes=buffer.getvalue(), blank=blank, text_chars=text_chars)


def _read_contents(page) -> tuple[bool, int]:  # type: ignore[no-untyped-def]
    """One pass over the page's decoded content stream: (blank, text_chars)."""
    try:
        contents = page.get_contents()
        data = contents.get_data() if contents is not None else b""
    except Exception:  # an unreadable stream is not "blank": let the model look at it
        return False, 0
    stripped, literal_chars = _strip_strings(data)
    hex_chars = sum(len(_WHITESPACE.sub(b"", digits)) // 2 for digits in _HEX_STRING.findall(stripped))
    return _PAINTING_OPERATOR.search(stripped) is None, literal_chars + hex_chars


# Annotations a viewer draws from their appearance stream (filled form fields, stamps,
# free text); a link or a popup draws nothing on its own.
_INVISIBLE_ANNOTATIONS = frozenset({"/Link", "/Popup"})
_HIDDEN_FLAGS = 0b10 | 0b100000  # Hidden, NoView (PDF 32000-1, 12.5.3)


def _has_visible_annotations(page) -> bool:  # type: ignore[no-untyped-def]
    """A page whose content stream is empty can still show filled fields or a stamp: not blank."""
    try:
        for ref in page.get("/Annots") or []:
            annotation = ref.get_object()
            if annotation.get("/Subtype") in _INVISIBLE_ANNOTATIONS or int(annotation.get("/F", 0)) & _HIDDEN_FLAGS:
                continue
            if annotation.get("/AP") is not None:
                return True
    except Exception:  # an unreadable annotation is not proof of a blank page
        return True
    return False


def _strip_strings(data: bytes) -> tuple[bytes, int]:
    """Drop literal strings so text inside them cannot look like an operator; also count
    their characters (what was dropped, less each string's parentheses and escapes)."""
    stripped = _LITERAL_STRING.sub(b"()", data)
    return stripped, (len(data) - len(stripped)) - (data.count(b"\\") - stripped.count(b"\\"))


def open_pdf(data: bytes, *, max_pages: int) -> PdfDocument:
    """Validate ``data`` as a PDF we can convert, or raise :class:`InputError` with a stable id."""
    return open_pdf_file(io.BytesIO(data), max_pages=max_pages)


def open_pdf_file(stream: BinaryIO, *, max_pages: int) -> PdfDocument:
    """:func:`open_pdf` over a seekable binary stream (an open file): pypdf reads objects from it
    as pages need them, so a 500 MB upload on disk is never loaded whole. Keep it open while
    the document is used. (pypdf reads a path given as str/Path into memory: pass the file.)"""
    stream.seek(0, io.SEEK_END)
    size = stream.tell()
    if size == 0:
        raise InputError("The file is empty.", error_id="PDF_EMPTY")
    stream.seek(0)
    if b"%PDF-" not in stream.read(1024):
        raise InputError("The file is not a PDF.", error_id="PDF_NOT_PDF")
    stream.seek(max(0, size - 2048))
    tail = stream.read(2048)
    stream.seek(0)
    try:
        reader = PdfReader(stream, strict=False)
        if reader.is_encrypted and not reader.decrypt(""):
            raise InputError("The PDF is password-protected; remove the password and upload it again.", error_id="PDF_ENCRYPTED")
        count = len(reader.pages)
    except InputError:
        raise
    except FileNotDecryptedError as exc:
        raise InputError("The PDF is password-protected; remove the password and upload it again.", error_id="PDF_ENCRYPTED") from exc
    except (PdfReadError, PdfStreamError, ValueError, KeyError, TypeError, AttributeError, IndexError, RecursionError) as exc:
        raise InputError("The PDF is damaged or truncated and cannot be read.", error_id="PDF_CORRUPT") from exc
    if count == 0:
        raise InputError("The PDF has no pages.", error_id="PDF_NO_PAGES")
    if count > max_pages:
        raise InputError(f"The PDF has {count} pages; the limit is {max_pages}.", error_id="PDF_TOO_MANY_PAGES")
    if b"%%EOF" not in tail:
        # pypdf can often rebuild a cut file, but pages past the cut would be lost silently.
        raise InputError("The PDF is damaged or truncated and cannot be read.", error_id="PDF_CORRUPT")
    return PdfDocument(reader)


def open_chunk(data: bytes, span: ChunkSpan) -> PdfDocument:
    """A chunk PDF written by :meth:`PdfDocument.chunk_pdf`; its pages keep their document numbers."""
    reader = PdfReader(io.BytesIO(data), strict=False)
    if len(reader.pages) != span.page_count:
        raise ValueError(f"chunk {span.index} PDF has {len(reader.pages)} pages, expected {span.page_count}")
    return PdfDocument(reader, first_page=span.first_page)
