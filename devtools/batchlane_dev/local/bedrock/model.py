"""The emulated page "model": NOT a model, it reads the page's own PDF (deterministic, labelled as emulated).

What it answers and why: docs/offline.md "Module notes".
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pypdf import PdfReader
from pypdf.errors import LimitReachedError, PdfReadError

from batchlane.domain import vision

EMULATED_MODEL_LABEL = "batchlane offline emulator (text layer + image list, not a model)"

TOKENS_PER_DOCUMENT = 1500
VISUAL_TOKENS_PER_DOCUMENT = 1600  # the page image (Anthropic: visual mode costs text + image tokens)
CHARS_PER_TOKEN = 4
DEFAULT_MAX_TOKENS = 4096
GUARDRAIL_TEXT = "Sorry, the model cannot answer this request."
# What the offline stack tells the estimates a page without a text layer answers with (BATCHLANE_OUTPUT_TOKENS_PER_PAGE):
# this model writes one figure line for it (12 tokens in the PDF form, 33 in the image form, measured on scans from
# tests/scans.py); the setting takes no less than 50. Claude transcribes a scan instead (the setting's default, 1,200).
NO_TEXT_ANSWER_TOKENS = 50

_PAGE_NUMBER = re.compile(r"(\d+)\s*$")
# The text block batchlane sends after a page image (claude/request.py): names the page, carries its text layer.
_IMAGE_LABEL = re.compile(r"^(?:The text layer of (?P<name>\S+):\n(?P<text>.*)|(?P<bare>\S+) has no text layer\.)$", re.DOTALL)
IMAGE_TOKEN_PIXELS = vision.IMAGE_TOKEN_PIXELS  # Anthropic, "Vision": an image costs about width × height / 750 tokens
INK_LEVEL = 160  # grey below this is ink
DENSE_CELL = 0.6  # an 8 px cell at least this inked is picture, not glyph strokes
MIN_PICTURE_CELLS = 24  # fewer dense cells than this (a bold heading's strokes) is no picture
MIN_DRAWING_SHAPES = 6  # fewer filled shapes than this (a box, a logo) is no drawing
MIN_SHAPE_PT = 12.0  # a path smaller than this on a side is a rule, a tick or a bullet box, not a shape
DRAWING_MARGIN_PT = 18.0  # the thin paths this near the shapes are the drawing's too (axes), and its labels this far out
_COLOUR_SPACES = {
    "/DeviceGray": "grayscale",
    "/CalGray": "grayscale",
    "/DeviceRGB": "RGB",
    "/CalRGB": "RGB",
    "/DeviceCMYK": "CMYK",
    "/G": "grayscale",
    "/RGB": "RGB",
    "/CMYK": "CMYK",
}


class ModelInputError(ValueError):
    """The request is well formed but the model cannot read it (e.g. a broken PDF)."""


@dataclass(frozen=True)
class SeenImage:
    """A page sent in image form: the rendered page, and the text layer sent beside it."""

    width: int
    height: int
    text: str
    figure: str | None  # one line for the picture areas the emulator finds in the raster, or None

    @property
    def tokens(self) -> int:
        """As Claude counts them: after it scales an image over 1,568 px or ~1.15 megapixels down (Anthropic,
        "Vision"; domain/vision.py). Before issue 42.2 the emulator billed the image as sent: an A4 scan at
        1240×1754 px cost 2,900 tokens here where Claude bills ~1,608."""
        return vision.image_tokens(self.width, self.height)


@dataclass(frozen=True)
class Document:
    name: str | None
    data: bytes
    visual: bool  # seen as text + image (True) or as its text layer only
    image: SeenImage | None = None  # image form: what the model sees instead of ``data``


@dataclass(frozen=True)
class Reply:
    text: str
    stop_reason: str  # Converse vocabulary; the Messages shape maps it
    input_tokens: int
    output_tokens: int


def answer(request: Mapping[str, Any], *, fault: str | None = None) -> dict[str, Any]:
    """A Converse response body for ``request`` (a Converse request body).

    ``fault`` is one of None, "truncate", "content_filter", "guardrail", "omit" (only the
    first third of the text, as a model that skipped most of the page), or
    "markers_skip" / "markers_repeat" / "markers_reorder" (multi-document answers only:
    the second document's marker is dropped, repeats the first's, or the first two
    documents come back swapped); the caller draws it (see faults.answer_fault) so this
    function stays pure.
    """
    documents, prompt_chars = _read_converse(request)
    max_tokens = int((request.get("inferenceConfig") or {}).get("maxTokens") or DEFAULT_MAX_TOKENS)
    reply = _reply(documents, prompt_chars, max_tokens, fault)
    cited = any(d.visual for d in documents)
    block: dict[str, Any] = {"citationsContent": {"content": [{"text": reply.text}], "citations": []}} if cited else {"text": reply.text}
    return {
        "output": {"message": {"role": "assistant", "content": [block]}},
        "stopReason": reply.stop_reason,
        "usage": {
            "inputTokens": reply.input_tokens,
            "outputTokens": reply.output_tokens,
            "totalTokens": reply.input_tokens + reply.output_tokens,
        },
        "metrics": {"latencyMs": 0},
    }


# Converse stop reasons as the Messages API says them (it has no filter/guardrail reasons:
# a declined answer is "refusal").
_MESSAGES_STOP_REASON = {"content_filtered": "refusal", "guardrail_intervened": "refusal"}


def answer_messages(request: Mapping[str, Any], *, fault: str | None = None) -> dict[str, Any]:
    """An Anthropic Messages response body (InvokeModel, or a batch InvokeModel record's modelOutput)."""
    documents, prompt_chars = _read_messages(request)
    reply = _reply(documents, prompt_chars, int(request["max_tokens"]), fault)
    return {
        "id": "msg_emulated_" + hashlib.sha256(f"{reply.input_tokens}:{reply.text}".encode()).hexdigest()[:24],
        "type": "message",
        "role": "assistant",
        "model": EMULATED_MODEL_LABEL,
        "content": [{"type": "text", "text": reply.text}],
        "stop_reason": _MESSAGES_STOP_REASON.get(reply.stop_reason, reply.stop_reason),
        "stop_sequence": None,
        "usage": {"input_tokens": reply.input_tokens, "output_tokens": reply.output_tokens},
    }


def _reply(documents: list[Document], prompt_chars: int, max_tokens: int, fault: str | None) -> Reply:
    text = _compose(documents, fault if fault and fault.startswith("markers_") else None)
    input_tokens = sum(_document_tokens(d) for d in documents) + prompt_chars // CHARS_PER_TOKEN
    stop_reason = "end_turn"
    if fault == "content_filter":
        text, stop_reason = "", "content_filtered"
    elif fault == "guardrail":
        text, stop_reason = GUARDRAIL_TEXT, "guardrail_intervened"
    elif fault == "truncate":
        text, stop_reason = text[: len(text) // 2], "max_tokens"
    elif fault == "omit":
        text = text[: len(text) // 3]
    if _tokens(text) > max_tokens:
        text, stop_reason = text[: max_tokens * CHARS_PER_TOKEN], "max_tokens"
    return Reply(text, stop_reason, input_tokens, _tokens(text))


def _document_tokens(document: Document) -> int:
    """An image as Anthropic counts it (its text layer is counted with the prompt's text); a PDF page as visual mode does."""
    if document.image is not None:
        return document.image.tokens
    return TOKENS_PER_DOCUMENT + (VISUAL_TOKENS_PER_DOCUMENT if document.visual else 0)


def _tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def _read_converse(request: Mapping[str, Any]) -> tuple[list[Document], int]:
    """The documents of a Converse body (visual when citations are on), and the count of prompt characters."""
    prompt_chars = sum(len(block.get("text") or "") for block in request.get("system") or [])
    documents: list[Document] = []
    for message in request.get("messages") or []:
        for block in message.get("content") or []:
            if "text" in block:
                prompt_chars += len(block["text"] or "")
            elif "document" in block:
                document = block["document"]
                visual = bool((document.get("citations") or {}).get("enabled"))
                documents.append(Document(document.get("name"), _decode((document.get("source") or {}).get("bytes")), visual))
    return documents, prompt_chars


def _read_messages(request: Mapping[str, Any]) -> tuple[list[Document], int]:
    """The documents of an Anthropic Messages body (always visual), and the count of prompt characters.

    An image block is a page in image form; the text block right after it, when it is batchlane's
    label, names that page and carries its text layer (counted as prompt text, as Claude counts it).
    """
    system = request.get("system") or ""
    prompt_chars = len(system) if isinstance(system, str) else sum(len(block.get("text") or "") for block in system)
    documents: list[Document] = []
    for message in request.get("messages") or []:
        content = message.get("content")
        if isinstance(content, str):
            prompt_chars += len(content)
            continue
        for block in content or []:
            if block.get("type") == "text":
                prompt_chars += len(block.get("text") or "")
                label = _IMAGE_LABEL.match(block.get("text") or "")
                last = documents[-1] if documents else None
                if label and last is not None and last.image is not None and last.name is None:
                    seen = SeenImage(last.image.width, last.image.height, (label["text"] or "").strip(), last.image.figure)
                    documents[-1] = Document(label["name"] or label["bare"], last.data, True, seen)
            elif block.get("type") == "document":
                documents.append(Document(block.get("title"), _decode((block.get("source") or {}).get("data")), True))
            elif block.get("type") == "image":
                documents.append(Document(None, b"", True, see_image(_decode((block.get("source") or {}).get("data")))))
    return documents, prompt_chars


def see_image(data: bytes) -> SeenImage:
    """What the emulated model takes from a page image: its size, and where pictures are drawn.

    Picture areas are 8 px cells mostly ink (glyph strokes rarely are): their bounding box and
    count make one figure line, as the PDF form's image list does for a page's image objects.
    """
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as opened:
            image = opened.convert("L")
    except (UnidentifiedImageError, OSError) as exc:
        raise ModelInputError(f"the image could not be read: {exc}") from exc
    ink = image.point(lambda v: 255 if v < INK_LEVEL else 0)
    cells = ink.reduce(8).point(lambda v: 255 if v >= DENSE_CELL * 255 else 0)
    box = cells.getbbox()
    figure = None
    dense = cells.histogram()[255]
    if box is not None and dense >= MIN_PICTURE_CELLS:
        left, top, right, bottom = (8 * v for v in box)
        figure = (
            f"*[Figure: picture area {right - left}×{bottom - top} px at ({left}, {top}) of the {image.width}×{image.height} page image, {dense} dense cells"
            f" (region: {left / image.width:.3f}, {top / image.height:.3f}, {min(right / image.width, 1):.3f}, {min(bottom / image.height, 1):.3f})]*"
        )
    return SeenImage(image.width, image.height, "", figure)


def request_pages(request: Mapping[str, Any]) -> frozenset[int]:
    """Page numbers of the request's documents, from their names (Converse) or titles (Messages): ``page-12`` → 12."""
    numbers = set()
    for message in request.get("messages") or []:
        content = message.get("content") if isinstance(message, Mapping) else None
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, Mapping):
                continue
            name = (block.get("document") or {}).get("name") if "document" in block else block.get("title") if block.get("type") == "document" else None
            label = _IMAGE_LABEL.match(block.get("text") or "") if block.get("type") == "text" else None
            if label:
                name = label["name"] or label["bare"]
            match = _PAGE_NUMBER.search(name or "")
            if match:
                numbers.add(int(match.group(1)))
    return frozenset(numbers)


def _decode(raw: Any) -> bytes:
    """Batch JSONL and botocore both send base64 text; in-process callers may pass bytes."""
    if isinstance(raw, (bytes, bytearray)):
        return bytes(raw)
    try:
        return base64.b64decode(raw or "", validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ModelInputError("document source bytes are not valid base64") from exc


def _document_markdown(document: Document) -> str:
    if document.image is not None:
        return "\n\n".join(part for part in (_paragraphs(document.image.text), document.image.figure) if part)
    return page_markdown(document.data, visual=document.visual)


def _compose(documents: list[Document], marker_fault: str | None = None) -> str:
    if len(documents) == 1:
        return _document_markdown(documents[0])
    numbered = []
    for position, document in enumerate(documents, start=1):
        match = _PAGE_NUMBER.search(document.name or "")
        numbered.append((int(match.group(1)) if match else position, _document_markdown(document)))
    if marker_fault == "markers_reorder":
        numbered[0], numbered[1] = numbered[1], numbered[0]
    parts = []
    for index, (number, body) in enumerate(numbered):
        if index == 1 and marker_fault == "markers_skip":
            parts.append(body)
            continue
        shown = numbered[0][0] if index == 1 and marker_fault == "markers_repeat" else number
        parts.append(f"<!-- Page {shown} -->\n\n{body}" if body else f"<!-- Page {shown} -->")
    return "\n\n".join(p for p in parts if p)


def pdf_page_count(pdf: bytes) -> int:
    try:
        return len(PdfReader(io.BytesIO(pdf)).pages)
    except (PdfReadError, ValueError, KeyError, TypeError, OSError) as exc:
        raise ModelInputError(f"the document could not be read as a PDF: {exc}") from exc


def page_markdown(pdf: bytes, *, visual: bool = False) -> str:
    """Markdown from every page of ``pdf``: its text layer, plus a line per drawn image when ``visual``."""
    try:
        reader = PdfReader(io.BytesIO(pdf))
        drawings = _drawings(pdf) if visual else []
        pages = [_read_page(page, visual, drawings[i] if i < len(drawings) else None) for i, page in enumerate(reader.pages)]
    except (PdfReadError, LimitReachedError, ValueError, KeyError, TypeError, OSError) as exc:  # a strict reader refuses a bomb
        raise ModelInputError(f"the document could not be read as a PDF: {exc}") from exc
    return _valid_unicode("\n\n".join(p for p in pages if p))


def _valid_unicode(text: str) -> str:
    """``text`` as a model can answer it: a text layer may decode to UTF-16 halves (pypdf, a ToUnicode map that
    splits a pair), which no UTF-8 response body can carry. A pair is joined, a lone half becomes U+FFFD
    (a real answer is valid UTF-8 JSON; the emulator crashed encoding its response instead)."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _drawings(pdf: bytes) -> list[str | None]:
    """Per page, one figure line for its vector drawing (a chart's filled shapes, not rules or text), with its region.

    A drawing is ``MIN_DRAWING_SHAPES`` or more path objects each at least ``MIN_SHAPE_PT`` on both sides:
    their bounding box, as fractions of the page from its top left, is the region the prompt asks for.
    """
    import pypdfium2 as pdfium
    import pypdfium2.raw as pdfium_c

    from batchlane.pdf.split import PDFIUM_LOCK

    out: list[str | None] = []
    with PDFIUM_LOCK:
        try:
            document = pdfium.PdfDocument(pdf)
        except pdfium.PdfiumError:
            return out
        try:
            for index in range(len(document)):
                page = document[index]
                width, height = page.get_size()
                paths = [obj.get_bounds() for obj in page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_PATH], max_depth=3)]
                page.close()
                shapes = [b for b in paths if min(b[2] - b[0], b[3] - b[1]) >= MIN_SHAPE_PT]
                if len(shapes) < MIN_DRAWING_SHAPES or not width or not height:
                    out.append(None)
                    continue
                left, bottom = min(b[0] for b in shapes), min(b[1] for b in shapes)
                right, top = max(b[2] for b in shapes), max(b[3] for b in shapes)
                near = [
                    b
                    for b in paths
                    if b[0] <= right + DRAWING_MARGIN_PT
                    and b[2] >= left - DRAWING_MARGIN_PT
                    and b[1] <= top + DRAWING_MARGIN_PT
                    and b[3] >= bottom - DRAWING_MARGIN_PT
                ]
                # Its axes and ticks (the thin paths beside the shapes), and a margin for their labels.
                left, bottom = min(b[0] for b in near) - DRAWING_MARGIN_PT, min(b[1] for b in near) - DRAWING_MARGIN_PT
                right, top = max(b[2] for b in near) + DRAWING_MARGIN_PT, max(b[3] for b in near) + DRAWING_MARGIN_PT
                region = ", ".join(f"{max(0.0, min(1.0, v)):.3f}" for v in (left / width, 1 - top / height, right / width, 1 - bottom / height))
                out.append(f"*[Figure: vector drawing of {len(shapes)} shapes (region: {region})]*")
        finally:
            document.close()
    return out


def _read_page(page: Any, visual: bool, drawing: str | None = None) -> str:
    if not visual:
        return _paragraphs(page.extract_text() or "")
    figures: list[str] = []
    xobjects = (page.get("/Resources") or {}).get("/XObject") or {}

    def visit(operator: bytes, operands: Any, cm: list[float], tm: list[float]) -> None:
        if operator == b"Do" and operands:
            xobject = xobjects.get(operands[0])
            xobject = xobject.get_object() if xobject is not None else None
            if xobject is not None and xobject.get("/Subtype") == "/Image":
                figures.append(_figure(xobject.get("/Width"), xobject.get("/Height"), xobject.get("/ColorSpace"), cm))
        elif operator == b"INLINE IMAGE" and isinstance(operands, dict):
            settings = operands.get("settings") or {}
            figures.append(
                _figure(
                    settings.get("/W", settings.get("/Width")),
                    settings.get("/H", settings.get("/Height")),
                    settings.get("/CS", settings.get("/ColorSpace")),
                    cm,
                )
            )

    text = _paragraphs(page.extract_text(visitor_operand_before=visit) or "")
    return "\n\n".join(part for part in (text, *figures, drawing) if part)


def _figure(width: Any, height: Any, colour_space: Any, cm: list[float]) -> str:
    """One line per drawn image: pixel size, colour space, lower-left corner in points."""
    space = colour_space.get_object() if hasattr(colour_space, "get_object") else colour_space
    if isinstance(space, list) and space:  # [/ICCBased stream] or [/Indexed base ...]
        first = str(space[0])
        if first == "/ICCBased":
            components = int(space[1].get_object().get("/N", 3))
            name = {1: "grayscale", 3: "RGB", 4: "CMYK"}.get(components, "colour")
        else:
            name = "indexed" if first in ("/Indexed", "/I") else "colour"
    else:
        name = _COLOUR_SPACES.get(str(space), "colour")
    return f"*[Figure: {int(width or 0)}×{int(height or 0)} {name} image at ({round(cm[4])}, {round(cm[5])})]*"


_FOLIO = re.compile(r"[-–—\s]*\d{1,5}[-–—\s]*")
_HYPHENATED = re.compile(r"[^\W\d_]-$")


def _paragraphs(text: str) -> str:
    """Join wrapped lines into paragraphs, and mark short title lines as headings.

    A paragraph ends at a blank line, or at a line that ends a sentence and is clearly
    shorter than the page's longest line (the ragged last line of a block). A short
    line with letters and no closing punctuation that opens a block and is followed by
    more text reads as a title: it becomes a ``##`` heading.
    """
    lines = [line.strip() for line in text.splitlines()]
    width = max((len(line) for line in lines), default=0)
    blocks: list[str] = []
    current: list[str] = []
    for index, line in enumerate(lines):
        followed = any(lines[index + 1 :])
        if line and not current and followed and _is_title(line, width):
            blocks.append(f"## {line}")
            continue
        if _FOLIO.fullmatch(line):  # a bare number (a folio) stands alone, as a model would give it
            blocks += [" ".join(current), line] if current else [line]
            current = []
            continue
        if line and current and _HYPHENATED.search(current[-1]) and line[:1].islower():
            current[-1] = current[-1][:-1] + line  # a word hyphenated at the line's end, rejoined
        elif line:
            current.append(line)
        if current and (not line or (line[-1] in ".!?:" and len(line) < 0.8 * width)):
            blocks.append(" ".join(current))
            current = []
    if current:
        blocks.append(" ".join(current))
    return "\n\n".join(blocks)


def _is_title(line: str, width: int) -> bool:
    return len(line) < 0.5 * width and line[-1] not in ".!?:,;" and any(c.isalpha() for c in line)
