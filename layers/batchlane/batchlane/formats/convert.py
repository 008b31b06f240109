"""Intake of a file that is not a PDF, every step in the bounded child PDF parsing uses (pdf/bounded.py).

``identify`` tells the type from the bytes (domain/file_types.py); ``wrap_image`` makes a picture a PDF of a page
per frame (pdf/from_image.py); ``convert_document`` runs the deterministic converter of a born-digital type
(pandoc for DOCX, ODT, EPUB, HTML; python-pptx, openpyxl for PPTX, XLSX) and writes its figure files to a
scratch folder. Past the bound (a zip bomb, billion laughs, a 100,000-slide deck) the child is stopped and the
file fails with an error id: DOCUMENT_TOO_COMPLEX / IMAGE_TOO_LARGE, never a retry of the same work.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

from batchlane.domain import file_types as ft
from batchlane.domain.errors import InputError
from batchlane.formats import guard
from batchlane.formats.document import ConvertedDocument
from batchlane.formats.office import convert_pptx, convert_xlsx
from batchlane.formats.pandoc_reader import READERS, convert_with_pandoc
from batchlane.observability import logger
from batchlane.pdf.bounded import Bound, OverBudget, run_bounded
from batchlane.pdf.from_image import image_to_pdf

# The PDF survey's bound is 15 s / 384 MB for a sampled read; a converter reads the whole document, so
# it gets more of both, and the same kill (docs/formats.md "Bounds"). pandoc's heap limit is the memory
# figure, its wall clock a little less than the child's so it reports first.
FORMAT_BOUND = Bound(seconds=60.0, memory_mb=1024)
IDENTIFY_BOUND = Bound(seconds=10.0, memory_mb=256)
_HEAD_BYTES = 4096


def identify(path: Path, name: str, *, bound: Bound = IDENTIFY_BOUND) -> ft.FileType | tuple[str, str]:
    """The file's type, or (error id, message) for one we refuse; a ZIP's directory is read in the bounded child."""
    with path.open("rb") as stream:
        head = stream.read(_HEAD_BYTES)
    size = path.stat().st_size
    members: list[str] = []
    if ft.is_zip(head) and size:
        try:
            members = run_bounded(zip_names, path, bound=bound)
        except OverBudget:
            return "DOCUMENT_TOO_COMPLEX", "The file's ZIP directory is too large to read within the bounds."
        except InputError as exc:
            if exc.error_id == "DOCUMENT_TOO_COMPLEX":  # a directory of more parts than any document has: refused as it is
                return exc.error_id, str(exc)
            claimed = ft.by_extension(name)
            if claimed is not None and claimed.kind == ft.DOCUMENT and claimed is not ft.HTML:
                return exc.error_id, str(exc)  # a truncated .docx is a damaged document, not another type
            members = []  # a broken ZIP named otherwise is none of ours
    return ft.identify(head, name, size, members)


def zip_names(path: Path) -> list[str]:
    """Member names of a ZIP (bounded: a directory of millions of entries is refused, not read)."""
    try:
        with zipfile.ZipFile(path) as archive:
            infos = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise guard.corrupt() from exc
    if len(infos) > guard.MAX_MEMBERS:
        raise guard.too_complex(f"The container holds {len(infos):,} parts; the limit is {guard.MAX_MEMBERS:,}.")
    return [i.filename for i in infos]


def wrap_image(path: Path, *, max_pages: int, bound: Bound = FORMAT_BOUND) -> bytes:
    """A picture as a PDF of a page per frame; InputError (IMAGE_*) for one we refuse, IMAGE_TOO_LARGE past the bound."""
    try:
        return run_bounded(image_to_pdf, path, max_pages, bound=bound)
    except OverBudget as exc:
        logger.warning("image decoding stopped", reason=exc.reason, seconds=bound.seconds, memory_mb=bound.memory_mb)
        raise InputError(f"The image is too large to decode within the bounds ({exc.reason}).", error_id="IMAGE_TOO_LARGE") from exc


def convert_document(path: Path, file_type: str, *, folder: str, scratch: Path, max_pages: int, bound: Bound = FORMAT_BOUND) -> ConvertedDocument:
    """A born-digital document's pages, its figures written under ``scratch``; InputError DOCUMENT_* for one we refuse."""
    try:
        return run_bounded(convert_in_child, path, file_type, folder, scratch, max_pages, bound.seconds, bound.memory_mb, bound=bound)
    except OverBudget as exc:
        logger.warning("document conversion stopped", file_type=file_type, reason=exc.reason, seconds=bound.seconds, memory_mb=bound.memory_mb)
        raise guard.too_complex(f"The document is too large or complex to convert within the bounds ({exc.reason}).") from exc


def convert_in_child(path: Path, file_type: str, folder: str, scratch: Path, max_pages: int, seconds: float, memory_mb: int) -> ConvertedDocument:
    """What the bounded child runs: the type's converter, any surprise of a parser mapped to an error id."""
    try:
        if file_type == "pptx":
            return convert_pptx(path, folder=folder, scratch=scratch, max_pages=max_pages)
        if file_type == "xlsx":
            return convert_xlsx(path, folder=folder, scratch=scratch, max_pages=max_pages)
        if file_type in READERS:
            return convert_with_pandoc(path, file_type, folder=folder, scratch=scratch, max_pages=max_pages, seconds=max(seconds - 5, 1), memory_mb=memory_mb)
    except InputError:
        raise
    except (RecursionError, MemoryError) as exc:
        raise guard.too_complex("The document is nested too deeply or too large to convert.") from exc
    except Exception as exc:  # a parser's own error on a damaged file (lxml, zipfile, KeyError on a missing part)
        raise guard.corrupt(f"The document cannot be read ({type(exc).__name__}).") from None
    raise InputError(ft.unsupported_message(f"x.{file_type}"), error_id=ft.UNSUPPORTED)
