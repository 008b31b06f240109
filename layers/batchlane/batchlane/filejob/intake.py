"""What the split does with a file that is not a PDF (docs/formats.md): tell its type, make a picture pages, convert a document.

Each step runs in the bounded child (batchlane.formats.detect and .convert), like the PDF survey: a hostile file ends
the job failed with an error id within seconds, and the function's own process never parses user bytes.
"""

from __future__ import annotations

from pathlib import Path

from batchlane.domain import file_types as ft
from batchlane.domain.errors import InputError
from batchlane.filejob.figures import figure_folder
from batchlane.formats import convert_document as formats
from batchlane.formats import detect
from batchlane.formats.document import ConvertedDocument


def pages_or_document(path: Path, name: str, *, scratch: Path, max_pages: int) -> tuple[ft.FileType, Path]:
    """(the file's type, the PDF to split): the upload itself for a PDF or a document, a PDF of a page per frame
    for a picture; InputError with the refusal's id (FILE_TYPE_UNSUPPORTED, PDF_NOT_PDF, IMAGE_*) otherwise."""
    found = detect.identify(path, name)
    if isinstance(found, tuple):
        raise InputError(found[1], error_id=found[0])
    if not found.is_image:
        return found, path
    wrapped = scratch / "pages.pdf"
    wrapped.write_bytes(detect.wrap_image(path, max_pages=max_pages))
    return found, wrapped


def convert(path: Path, file_type: ft.FileType, name: str, *, scratch: Path, max_pages: int) -> ConvertedDocument:
    """A born-digital document's pages, its figures named for the Markdown's figure folder (``book.docx`` → ``book.images``)."""
    figures = scratch / "figures"
    figures.mkdir(exist_ok=True)
    return formats.convert_document(path, file_type.name, folder=figure_folder(name), scratch=figures, max_pages=max_pages)
