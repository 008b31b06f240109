"""What a file is, and a picture made pages, each in the bounded child PDF parsing uses (pdf/bounded.py).

``identify`` tells the type from the bytes (domain/file_types.py; a ZIP's directory read in the child);
``wrap_image`` makes a picture a PDF of a page per frame (pdf/from_image.py). Light on purpose: the API's dry run
imports this without the converters' libraries (formats/convert_document.py has those).
"""

from __future__ import annotations

import zipfile
from pathlib import Path

from batchlane.domain import file_types as ft
from batchlane.domain.errors import InputError
from batchlane.formats import guard
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
