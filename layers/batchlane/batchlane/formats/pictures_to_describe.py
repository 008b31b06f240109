"""A born-digital document's pictures made ready to describe (``describeFigures``), in the bounded child.

Each figure file the converter wrote is decoded by Pillow in the child PDF parsing uses (pdf/bounded.py) and
written as Claude reads it (pdf/page_image.picture_image): as it is when it fits, else scaled down. A picture
that cannot be sent (a vector EMF/WMF/SVG, damaged bytes, a decompression bomb) is left undescribed with its
reason; past the child's bound every picture is, and the document still converts. docs/formats.md.
"""

from __future__ import annotations

import binascii
import io
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

from batchlane.domain.describe import NOT_DESCRIBABLE, UNREADABLE
from batchlane.formats.detect import FORMAT_BOUND
from batchlane.formats.document import ConvertedDocument
from batchlane.observability import logger
from batchlane.pdf.bounded import Bound, OverBudget, run_bounded
from batchlane.pdf.page_image import PageImageError, picture_image

TOO_LARGE = "FIGURE_TOO_LARGE"  # past the bound, or over Pillow's pixel limit
_EXTENSIONS = {"image/png": ".png", "image/jpeg": ".jpg", "image/gif": ".gif", "image/webp": ".webp"}
_VECTOR_TYPES = frozenset({"image/emf", "image/wmf", "image/svg+xml"})


@dataclass(frozen=True)
class SizedFigure:
    """One picture as it will be sent (``path``, its type and pixel size), or why it is not (``skipped``)."""

    name: str
    path: Path | None = None
    media_type: str = ""
    width: int = 0
    height: int = 0
    skipped: str | None = None

    @property
    def sent_name(self) -> str:
        """The stored image's name: the figure's, with the extension of what is sent (``p3-1.bmp`` → ``p3-1.png``)."""
        return Path(self.name).stem + _EXTENSIONS.get(self.media_type, ".png")


def size_figures(document: ConvertedDocument, scratch: Path, *, bound: Bound = FORMAT_BOUND) -> dict[str, SizedFigure]:
    """Every figure of ``document`` by name, ready to send or skipped with its reason."""
    figures = [(f.name, f.path, f.media_type) for s in document.sections for f in s.figures]
    if not figures:
        return {}
    scratch.mkdir(parents=True, exist_ok=True)
    try:
        sized = run_bounded(size_in_child, figures, scratch, bound=bound)
    except OverBudget as exc:
        logger.warning("pictures not sized within the bound", reason=exc.reason, figures=len(figures))
        return {name: SizedFigure(name, skipped=TOO_LARGE) for name, _, _ in figures}
    return {f.name: f for f in sized}


def size_in_child(figures: list[tuple[str, Path, str]], scratch: Path) -> list[SizedFigure]:
    """What the bounded child runs: each picture decoded and written as it will be sent."""
    from PIL import Image, UnidentifiedImageError

    out = []
    for name, path, media_type in figures:
        if media_type in _VECTOR_TYPES:
            out.append(SizedFigure(name, skipped=NOT_DESCRIBABLE))
            continue
        try:
            image = picture_image(path.read_bytes())
        except Image.DecompressionBombError:
            out.append(SizedFigure(name, skipped=TOO_LARGE))
            continue
        except UnidentifiedImageError:
            out.append(SizedFigure(name, skipped=NOT_DESCRIBABLE))
            continue
        except (OSError, ValueError, SyntaxError, EOFError, PageImageError):
            out.append(SizedFigure(name, skipped=UNREADABLE))
            continue
        sent = SizedFigure(name, media_type=image.media_type, width=image.width, height=image.height)
        target = scratch / sent.sent_name
        target.write_bytes(image.data)
        out.append(SizedFigure(name, target, image.media_type, image.width, image.height))
    return out


# Where a container keeps its pictures (the dry run counts them there, the document unconverted).
_MEDIA_FOLDERS = {"docx": ("word/media/",), "pptx": ("ppt/media/",), "xlsx": ("xl/media/",), "odt": ("Pictures/",), "epub": ("",)}
_PICTURE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".bmp", ".tif", ".tiff", ".webp", ".emf", ".wmf", ".svg")
_HEADER_BYTES = 1 << 20  # a picture's size is in its first bytes (a JPEG's after its EXIF block)
_DATA_URI = re.compile(rb"data:image/[a-z+.-]+;base64,([A-Za-z0-9+/=\s]{16,})")


@dataclass(frozen=True)
class CountedPicture:
    """A picture the dry run found in the file: its pixel size, or why it would not be described."""

    name: str
    width: int = 0
    height: int = 0
    skipped: str | None = None


def count_pictures(path: Path, file_type: str, *, bound: Bound = FORMAT_BOUND) -> list[CountedPicture] | None:
    """The pictures of a born-digital file, from its container's media (an HTML page's inline ``data:`` images),
    their sizes from their headers: the dry run's count; None past the bound."""
    try:
        return run_bounded(count_in_child, path, file_type, bound=bound)
    except OverBudget:
        return None


def count_in_child(path: Path, file_type: str) -> list[CountedPicture]:
    """What the bounded child runs: each picture's header read (never decoded whole)."""
    if file_type == "html":
        heads = (b"".join(m.group(1).split())[: _HEADER_BYTES // 3 * 4] for m in _DATA_URI.finditer(path.read_bytes()))
        return [_counted(f"inline-{k + 1}.png", _decoded(head)) for k, head in enumerate(heads)]
    folders = _MEDIA_FOLDERS.get(file_type, ())
    out = []
    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():
            name = info.filename
            if info.is_dir() or not name.lower().endswith(_PICTURE_SUFFIXES) or not any(name.startswith(f) for f in folders):
                continue
            with archive.open(info) as member:
                out.append(_counted(name, member.read(_HEADER_BYTES)))
    return out


def _decoded(text: bytes) -> bytes:
    try:
        return binascii.a2b_base64(text)
    except binascii.Error:
        return b""  # not base64 after all: counted as a picture that cannot be read


def _counted(name: str, head: bytes) -> CountedPicture:
    from PIL import Image, UnidentifiedImageError

    if name.lower().endswith((".emf", ".wmf", ".svg")):
        return CountedPicture(name, skipped=NOT_DESCRIBABLE)
    try:
        with Image.open(io.BytesIO(head)) as picture:
            width, height = picture.size
    except UnidentifiedImageError:
        return CountedPicture(name, skipped=NOT_DESCRIBABLE)
    except (OSError, ValueError, SyntaxError, EOFError):
        return CountedPicture(name, skipped=UNREADABLE)
    return CountedPicture(name, width, height)
