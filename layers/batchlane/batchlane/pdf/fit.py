"""Bring a one-page PDF under a size limit before it is sent (recompress its images, else render it), or say it cannot be done.

Why nothing Claude sees is lost, and the libraries: docs/module-notes.md "batchlane.pdf.fit".
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from pypdf import PdfReader, PdfWriter
from pypdf.generic import ArrayObject, DictionaryObject, NameObject, NumberObject, StreamObject

from batchlane.domain.limits import MAX_PAGE_BYTES, PAGE_TOO_LARGE
from batchlane.observability import logger
from batchlane.pdf.bounded import Bound, OverBudget, run_bounded
from batchlane.pdf.content import BudgetExceeded, Deadline
from batchlane.pdf.split import PDFIUM_LOCK, Page

# (longest edge in pixels, JPEG quality), tried in order until the page fits.
IMAGE_LEVELS = ((2048, 85), (1600, 75), (1280, 65), (1024, 55), (800, 45))
RENDER_LEVELS = ((2000, 80), (1600, 70), (1200, 60), (900, 50))
# Time one page's reduction may take, checked between attempts; past it the page fails PAGE_TOO_LARGE
# (how "timed_out") rather than holding its chunk: a real 20-megapixel scan takes a few seconds.
FIT_BUDGET_S = 30.0
# Memory a render may take on top of its process: a 2,000 px RGB bitmap is 12 MB; pdfium parsing a page of
# 30 MB of operators took ~540 MB (issue 21). Past it the page fails PAGE_TOO_LARGE (how "timed_out").
RENDER_MEMORY_MB = 512
MIN_IMAGE_BYTES = 32_000  # images smaller than this are left alone: re-encoding them saves nothing that matters
_COLOR_SPACES = {"L": "/DeviceGray", "RGB": "/DeviceRGB", "CMYK": "/DeviceCMYK"}
_INVERTED_CMYK = ArrayObject([NumberObject(1), NumberObject(0)] * 4)  # Pillow writes Adobe (inverted) CMYK JPEGs


@dataclass(frozen=True)
class FitResult:
    pdf_bytes: bytes | None  # None: the page cannot be brought under the limit
    how: str  # as_is | recompressed | rendered | too_large

    @property
    def fits(self) -> bool:
        return self.pdf_bytes is not None


def fit_page(pdf_bytes: bytes, limit_bytes: int = MAX_PAGE_BYTES, *, render: bool = True, deadline: Deadline | None = None) -> FitResult:
    """``pdf_bytes`` unchanged when within ``limit_bytes``; else the first reduction that fits, or None.
    ``render`` False: never replace the page by a picture of it (the text layer stays, or the page fails).
    Past ``deadline`` (default :data:`FIT_BUDGET_S`) it gives up: None, how ``timed_out``."""
    if len(pdf_bytes) <= limit_bytes:
        return FitResult(pdf_bytes, "as_is")
    deadline = deadline or Deadline(FIT_BUDGET_S)
    for how, reduce in (("recompressed", _recompress), ("rendered", _render))[: 2 if render else 1]:
        try:
            reduced = reduce(pdf_bytes, limit_bytes, deadline)
        except BudgetExceeded:
            logger.warning("page reduction out of time", how=how, budget_s=deadline.seconds)
            return FitResult(None, "timed_out")
        except Exception as exc:  # a page a library cannot handle is a page we cannot reduce that way, not a crash
            logger.warning("page reduction failed", how=how, error=repr(exc)[:300])
            reduced = None
        if reduced is not None:
            return FitResult(reduced, how)
    return FitResult(None, "too_large")


# -- 1. recompress the images -------------------------------------------------------------


def _recompress(data: bytes, limit: int, deadline: Deadline) -> bytes | None:
    for max_edge, quality in IMAGE_LEVELS:
        deadline.check()
        writer = PdfWriter(clone_from=PdfReader(io.BytesIO(data)))
        changed = [_shrink(image, max_edge, quality, deadline) for image in _images(writer.pages[0])]
        if not any(changed):
            continue
        out = _write(writer)
        if len(out) <= limit:
            return out
    return None


def _images(page: Any) -> Iterator[StreamObject]:
    """Every image XObject the page draws (also inside form XObjects), and their soft masks, once each."""
    seen: set[int] = set()
    stack = [page.get("/Resources")]
    while stack:
        resources = stack.pop()
        resources = resources.get_object() if resources is not None else None
        if not isinstance(resources, DictionaryObject):
            continue
        xobjects = resources.get("/XObject")
        xobjects = xobjects.get_object() if xobjects is not None else None
        if not isinstance(xobjects, DictionaryObject):
            continue
        for ref in xobjects.values():
            xobj = ref.get_object()
            if not isinstance(xobj, StreamObject) or id(xobj) in seen:
                continue
            seen.add(id(xobj))
            if xobj.get("/Subtype") == "/Form":
                stack.append(xobj.get("/Resources"))
            elif xobj.get("/Subtype") == "/Image":
                yield xobj
                smask = xobj.get("/SMask")
                smask = smask.get_object() if smask is not None else None
                if isinstance(smask, StreamObject) and id(smask) not in seen:
                    seen.add(id(smask))
                    yield smask


def _shrink(xobj: StreamObject, max_edge: int, quality: int, deadline: Deadline) -> bool:
    """Re-encode one image as a smaller JPEG in place; False when it is small, unsupported or would grow."""
    deadline.check()  # a page of thousands of images is checked between two of them
    stored = len(xobj._data)
    if stored < MIN_IMAGE_BYTES or xobj.get("/ImageMask") or isinstance(xobj.get("/Mask"), ArrayObject) or _matted(xobj):
        return False  # stencil masks are 1-bit; colour keys do not survive lossy colours; a /Matte mask needs its image's size
    image = _decode(xobj, max_edge)
    if image is None:
        return False
    mode = "CMYK" if image.mode == "CMYK" else "L" if image.mode in ("1", "L", "LA", "I", "I;16", "F") else "RGB"
    image = image.convert(mode)
    image.thumbnail((max_edge, max_edge))
    buffer = io.BytesIO()
    image.save(buffer, "JPEG", quality=quality)
    encoded = buffer.getvalue()
    if len(encoded) >= stored:
        return False
    xobj._data = encoded
    if hasattr(xobj, "decoded_self"):
        xobj.decoded_self = None
    for key in ("/DecodeParms", "/Decode", "/Intent"):
        xobj.pop(NameObject(key), None)
    xobj[NameObject("/Filter")] = NameObject("/DCTDecode")
    xobj[NameObject("/Width")] = NumberObject(image.width)
    xobj[NameObject("/Height")] = NumberObject(image.height)
    xobj[NameObject("/BitsPerComponent")] = NumberObject(8)
    xobj[NameObject("/ColorSpace")] = NameObject(_COLOR_SPACES[mode])
    if mode == "CMYK":
        xobj[NameObject("/Decode")] = _INVERTED_CMYK
    return True


def _matted(xobj: StreamObject) -> bool:
    """A pre-multiplied soft mask (/Matte) must keep the size of its image: leave both as they are."""
    smask = xobj.get("/SMask")
    smask = smask.get_object() if smask is not None else None
    return "/Matte" in xobj or (isinstance(smask, StreamObject) and "/Matte" in smask)


def _decode(xobj: StreamObject, max_edge: int) -> Any:
    """The image as Pillow sees it, or None. A JPEG is decoded in draft mode (DCT scaling) straight
    from its stream; anything else goes through pypdf's own decoder (colour spaces, predictors)."""
    from PIL import Image

    filters = xobj.get("/Filter")
    names = [str(f) for f in filters] if isinstance(filters, ArrayObject) else [str(filters)] if filters else []
    if names and names[-1] == "/DCTDecode":
        jpeg = xobj._data if len(names) == 1 else xobj.get_data()
        image = Image.open(io.BytesIO(jpeg))
        image.draft(image.mode, (max_edge, max_edge))
        image.load()
        return image
    if names and names[-1] in ("/JBIG2Decode", "/CCITTFaxDecode"):
        return None  # bilevel scans: already compact, and JPEG would blur them
    from pypdf.generic._image_xobject import _xobj_to_image  # pypdf's decoder behind ImageFile.image (pinned pypdf)

    return _xobj_to_image(xobj)[2]


def _write(writer: PdfWriter) -> bytes:
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


# -- 2. render the page to one image ------------------------------------------------------


def _render(data: bytes, limit: int, deadline: Deadline) -> bytes | None:
    """pdfium renders in C, where no deadline check reaches: in a child (batchlane.pdf.bounded) killed
    one budget after ``deadline`` (an attempt started in time may finish, as in-process) or past
    :data:`RENDER_MEMORY_MB`; either way BudgetExceeded."""
    bound = Bound(seconds=max(deadline.remaining(), 0.0) + deadline.seconds, memory_mb=RENDER_MEMORY_MB)
    try:
        return run_bounded(render_in_process, data, limit, deadline, bound=bound)
    except OverBudget as exc:
        raise BudgetExceeded(str(exc)) from exc


def render_in_process(data: bytes, limit: int, deadline: Deadline) -> bytes | None:
    """The render itself, unbounded: what the bounded child runs."""
    with PDFIUM_LOCK:  # pdfium runs in one thread at a time (see batchlane.pdf.split)
        return _render_locked(data, limit, deadline)


def _render_locked(data: bytes, limit: int, deadline: Deadline) -> bytes | None:
    import pypdfium2

    document = pypdfium2.PdfDocument(data)
    try:
        page = document[0]
        width_pt, height_pt = page.get_size()  # after /Rotate, as displayed
        # pdfium renders once, at the first level; each smaller level is that bitmap scaled down. A heavy
        # drawing costs its render time once instead of once a level (2,000 strokes: 0.27 s a render).
        largest = RENDER_LEVELS[0][0]
        rendered = page.render(scale=largest / max(width_pt, height_pt, 1.0)).to_pil().convert("RGB")
        for max_edge, quality in RENDER_LEVELS:
            deadline.check()
            scale = max_edge / max(width_pt, height_pt, 1.0)
            image = rendered if max_edge == largest else _scaled(rendered, max_edge / largest)
            buffer = io.BytesIO()
            # Pillow's PDF writer: one DCTDecode image filling a page of the original size (72 dpi * scale).
            image.save(buffer, "PDF", resolution=72.0 * scale, quality=quality)
            if buffer.tell() <= limit:
                return buffer.getvalue()
        return None
    finally:
        document.close()


def _scaled(image: Any, ratio: float) -> Any:
    from PIL import Image

    size = (max(1, round(image.width * ratio)), max(1, round(image.height * ratio)))
    return image.resize(size, Image.Resampling.LANCZOS)


def fit(page: Page, limit_bytes: int = MAX_PAGE_BYTES, *, render: bool = True) -> Page:
    """The page as it will be sent: unchanged, reduced under ``limit_bytes``, or carrying ``failure`` PAGE_TOO_LARGE."""
    if page.blank or page.failure or len(page.pdf_bytes) <= limit_bytes:
        return page
    result = fit_page(page.pdf_bytes, limit_bytes, render=render)
    logger.info("page over the size limit", page=page.number, bytes=len(page.pdf_bytes), how=result.how, reduced_bytes=len(result.pdf_bytes or b""))
    if result.pdf_bytes is None:
        return replace(page, failure=PAGE_TOO_LARGE)
    return replace(page, pdf_bytes=result.pdf_bytes)
