"""What a file is, from its first bytes, its name and (for a ZIP) its member names: pure rules.

Two kinds of input (docs/formats.md): **pages** (a PDF, or a picture: PNG, JPEG, WebP, TIFF, each
frame a page) go through the vision lanes; a **document** (DOCX, PPTX, XLSX, HTML, EPUB, ODT) is
born digital and converted by a deterministic converter, with no model call. Anything else is
``FILE_TYPE_UNSUPPORTED``. The content decides; the name only settles what bytes cannot (HTML is
text, and a file named ``.pdf`` that is not one keeps its own id, ``PDF_NOT_PDF``).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from dataclasses import dataclass

PAGES = "pages"
DOCUMENT = "document"


@dataclass(frozen=True)
class FileType:
    """One supported type: its short name (the API's ``fileType``), kind, upload content type and extensions."""

    name: str
    kind: str  # PAGES | DOCUMENT
    content_type: str
    extensions: tuple[str, ...]
    page_is: str  # what one page of this type is (page markers, pages.jsonl, retries and holds rest on it)

    @property
    def is_image(self) -> bool:
        return self.kind == PAGES and self.name != "pdf"


PDF = FileType("pdf", PAGES, "application/pdf", (".pdf",), "a PDF page")
PNG = FileType("png", PAGES, "image/png", (".png",), "the image")
JPEG = FileType("jpeg", PAGES, "image/jpeg", (".jpg", ".jpeg"), "the image")
WEBP = FileType("webp", PAGES, "image/webp", (".webp",), "the image")
TIFF = FileType("tiff", PAGES, "image/tiff", (".tif", ".tiff"), "a frame of the TIFF")
DOCX = FileType("docx", DOCUMENT, "application/vnd.openxmlformats-officedocument.wordprocessingml.document", (".docx",), "a top-level heading section")
PPTX = FileType("pptx", DOCUMENT, "application/vnd.openxmlformats-officedocument.presentationml.presentation", (".pptx",), "a slide")
XLSX = FileType("xlsx", DOCUMENT, "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", (".xlsx", ".xlsm"), "a sheet")
HTML = FileType("html", DOCUMENT, "text/html", (".html", ".htm", ".xhtml"), "a top-level heading section")
EPUB = FileType("epub", DOCUMENT, "application/epub+zip", (".epub",), "a top-level heading section")
ODT = FileType("odt", DOCUMENT, "application/vnd.oasis.opendocument.text", (".odt",), "a top-level heading section")

ALL: tuple[FileType, ...] = (PDF, PNG, JPEG, WEBP, TIFF, DOCX, PPTX, XLSX, HTML, EPUB, ODT)
BY_NAME = {t.name: t for t in ALL}
IMAGES = tuple(t for t in ALL if t.is_image)
DOCUMENTS = tuple(t for t in ALL if t.kind == DOCUMENT)

# A folder job's default ``include``: PDFs and the born-digital types (no model call for their text);
# pictures only when asked for, since each is a billed vision call (docs/operations.md "Folder jobs").
DEFAULT_INCLUDE = tuple(sorted(f"*{ext}" for t in (PDF, *DOCUMENTS) for ext in t.extensions))

UNSUPPORTED = "FILE_TYPE_UNSUPPORTED"
SUPPORTED_WORDS = "PDF, PNG, JPEG, WebP, TIFF, DOCX, PPTX, XLSX, HTML, EPUB or ODT"

_ODF_TEXT = b"application/vnd.oasis.opendocument.text"
_EPUB = b"application/epub+zip"


def by_extension(name: str) -> FileType | None:
    """The type a file name claims (case-insensitive), or None."""
    ext = posixpath.splitext(name.lower())[1]
    return next((t for t in ALL if ext in t.extensions), None)


def content_type_for(name: str) -> str:
    """The upload's Content-Type (bound by the presigned POST): the claimed type's, else a neutral one."""
    claimed = by_extension(name)
    return claimed.content_type if claimed else "application/octet-stream"


def is_zip(head: bytes) -> bool:
    return head[:4] == b"PK\x03\x04"


def sniff(head: bytes, name: str, members: Iterable[str] = ()) -> FileType | None:
    """The file's type from its first bytes (>= 1,024 where the file has them), its name, and for a ZIP
    its member names; None when it is none of ours. A ZIP's ``mimetype`` entry (EPUB, ODF) stands at
    its start uncompressed, so it shows in ``head``; OOXML is told apart by its main part."""
    if b"%PDF-" in head[:1024]:
        return PDF
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return PNG
    if head.startswith(b"\xff\xd8\xff"):
        return JPEG
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return WEBP
    if head[:4] in (b"II*\x00", b"MM\x00*"):
        return TIFF
    if is_zip(head):
        return _zip_type(head, set(members))
    if _looks_like_html(head, name):
        return HTML
    return None


def _zip_type(head: bytes, members: set[str]) -> FileType | None:
    if head[30:38] == b"mimetype":
        if head[38:].startswith(_EPUB):
            return EPUB
        if head[38:].startswith(_ODF_TEXT) and not head[38:].startswith(_ODF_TEXT + b"-"):  # not the -template / -master types
            return ODT
    if "word/document.xml" in members:
        return DOCX
    if "ppt/presentation.xml" in members:
        return PPTX
    if "xl/workbook.xml" in members:
        return XLSX
    return None


def _looks_like_html(head: bytes, name: str) -> bool:
    """HTML is text: a document that says so (a doctype or an ``<html`` tag near its start), or text named .html/.htm."""
    text = head[:1024].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if text.startswith((b"<!doctype html", b"<html")) or (text.startswith(b"<?xml") and b"<html" in text):
        return True
    claimed = by_extension(name)
    return claimed is HTML and b"\x00" not in head[:1024] and text.startswith(b"<")


def identify(head: bytes, name: str, size: int, members: Iterable[str] = ()) -> FileType | tuple[str, str]:
    """The file's type, or why it is refused (error id, message) before any parsing: empty (PDF_EMPTY for a
    PDF or a nameless file, FILE_EMPTY otherwise), a file named .pdf that is not one (PDF_NOT_PDF: it claims
    to be a PDF), or none of our types (FILE_TYPE_UNSUPPORTED)."""
    claimed = by_extension(name)
    if size == 0:
        return ("PDF_EMPTY" if claimed in (PDF, None) else "FILE_EMPTY"), "The file is empty."
    found = sniff(head, name, members)
    if found is not None:
        return found
    if claimed is PDF:
        return "PDF_NOT_PDF", "The file is not a PDF (it does not start with %PDF-)."
    return UNSUPPORTED, unsupported_message(name)


def unsupported_message(name: str) -> str:
    ext = posixpath.splitext(name)[1]
    what = f"A {ext} file" if ext else "This file"
    return f"{what} cannot be converted: batchlane converts {SUPPORTED_WORDS}."
