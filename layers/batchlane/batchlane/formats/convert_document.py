"""Born-digital documents converted in the bounded child PDF parsing uses (pdf/bounded.py): pandoc for DOCX, ODT,
EPUB, HTML; python-pptx, openpyxl for PPTX, XLSX; figure files written to a scratch folder. Past the bound (a zip
bomb, billion laughs, a 100,000-slide deck) the child is stopped and the file fails DOCUMENT_TOO_COMPLEX, never a
retry of the same work. Telling a file's type and wrapping a picture are formats/detect.py's (light: the API's dry
run imports them without the converters' libraries).
"""

from __future__ import annotations

from pathlib import Path

from batchlane.domain import file_types as ft
from batchlane.domain.errors import InputError
from batchlane.formats import guard
from batchlane.formats.detect import FORMAT_BOUND
from batchlane.formats.document import ConvertedDocument
from batchlane.formats.office import convert_pptx, convert_xlsx
from batchlane.formats.pandoc_reader import READERS, convert_with_pandoc
from batchlane.observability import logger
from batchlane.pdf.bounded import Bound, OverBudget, run_bounded


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
