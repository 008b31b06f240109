"""Hostile inputs of each type end within the bounds with their error ids (issue 43): a zip bomb in a DOCX,
billion laughs in DOCX, XLSX and HTML, a 100,000-slide PPTX, a decompression-bomb PNG, a truncated DOCX, HTML
nested past any reader's depth. Each starts from a real file (tests/data/formats) and goes through the same
steps the split runs (identify, then the converter or the image wrapper, each in the bounded child)."""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from pathlib import Path

import pytest
from formatscount import DATA
from PIL import Image

from batchlane.domain.errors import InputError
from batchlane.domain.file_types import FileType
from batchlane.formats.convert_document import convert_document
from batchlane.formats.detect import identify, wrap_image
from batchlane.pdf.bounded import Bound

SMALL_BOUND = Bound(seconds=5.0, memory_mb=256)
LAUGHS = (
    '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
    + "".join(f'<!ENTITY lol{k} "{("&lol%s;" % (k - 1 if k > 1 else "")) * 10}">' for k in range(1, 10))
    + "]>"
)


def _rezip(source: Path, replace: dict[str, bytes], extra: tuple[tuple[str, bytes], ...] = (), *, method: int = zipfile.ZIP_DEFLATED) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(source) as a, zipfile.ZipFile(out, "w", method) as b:
        for info in a.infolist():
            b.writestr(info.filename, replace.get(info.filename, a.read(info)))
        for name, data in extra:
            b.writestr(name, data)
    return out.getvalue()


def _intake(tmp_path: Path, name: str, data: bytes, *, max_pages: int = 1000) -> str:
    """What the split does with the file: its error id, or "converted"."""
    path = tmp_path / name
    path.write_bytes(data)
    try:
        found = identify(path, name)
        if not isinstance(found, FileType):
            return found[0]
        if found.is_image:
            wrap_image(path, max_pages=max_pages, bound=SMALL_BOUND)
        else:
            scratch = tmp_path / "figures"
            scratch.mkdir(exist_ok=True)
            convert_document(path, found.name, folder="x.images", scratch=scratch, max_pages=max_pages, bound=SMALL_BOUND)
    except InputError as exc:
        return exc.error_id
    return "converted"


def _with_root(xml: bytes, prefix: str) -> str:
    text = xml.decode("utf-8")
    return prefix + text[text.index("<", text.index("?>") + 2) :]


def test_a_zip_bomb_in_a_docx_is_refused(tmp_path: Path) -> None:
    bomb = _rezip(DATA / "word_sample.docx", {}, (("word/media/bomb.bin", b"\0" * (20 << 20)),))  # 20 MB of zeros in ~20 KB
    assert len(bomb) < 1 << 20
    assert _intake(tmp_path, "bomb.docx", bomb) == "DOCUMENT_TOO_COMPLEX"


@pytest.mark.parametrize(
    ("source", "part", "marker"), [("word_sample.docx", "word/document.xml", "Let’s swim!"), ("xlsx_05_table_with_title.xlsx", "xl/sharedStrings.xml", "<si>")]
)
def test_billion_laughs_in_an_office_file_is_refused(tmp_path: Path, source: str, part: str, marker: str) -> None:
    with zipfile.ZipFile(DATA / source) as archive:
        xml = archive.read(part)
    laughs = _with_root(xml, LAUGHS).replace(marker, marker + "&lol9;" if marker == "<si>" else "&lol9;", 1)
    assert _intake(tmp_path, f"laughs{Path(source).suffix}", _rezip(DATA / source, {part: laughs.encode()})) == "DOCUMENT_TOO_COMPLEX"


def test_billion_laughs_in_html_is_refused(tmp_path: Path) -> None:
    page = LAUGHS.replace("lolz", "html") + "<html><body><p>&lol9;</p></body></html>"
    assert _intake(tmp_path, "laughs.html", page.encode()) == "DOCUMENT_TOO_COMPLEX"


def test_a_100000_slide_pptx_is_refused_from_its_directory(tmp_path: Path) -> None:
    slides = tuple((f"ppt/slides/slide{k + 100}.xml", b"<p:sld/>") for k in range(100_000))
    assert _intake(tmp_path, "deck.pptx", _rezip(DATA / "powerpoint_sample.pptx", {}, slides, method=zipfile.ZIP_STORED)) == "DOCUMENT_TOO_COMPLEX"


def test_a_deck_over_the_page_limit_is_refused_before_any_slide_is_read(tmp_path: Path) -> None:
    slides = tuple((f"ppt/slides/slide{k + 100}.xml", b"<p:sld/>") for k in range(1_200))
    assert _intake(tmp_path, "deck.pptx", _rezip(DATA / "powerpoint_sample.pptx", {}, slides), max_pages=1000) == "DOCUMENT_TOO_MANY_PAGES"


def test_html_nested_past_any_depth_ends_at_the_bound(tmp_path: Path) -> None:
    page = "<html><body>" + "<div>" * 200_000 + "x" + "</div>" * 200_000 + "</body></html>"
    assert _intake(tmp_path, "deep.html", page.encode()) == "DOCUMENT_TOO_COMPLEX"


def test_a_truncated_docx_is_a_damaged_document(tmp_path: Path) -> None:
    assert _intake(tmp_path, "cut.docx", (DATA / "word_sample.docx").read_bytes()[:20_000]) == "DOCUMENT_CORRUPT"


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def test_a_decompression_bomb_png_is_refused(tmp_path: Path) -> None:
    header = struct.pack(">IIBBBBB", 60_000, 60_000, 8, 2, 0, 0, 0)  # 3.6 gigapixels declared in a few bytes
    png = b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", header) + _png_chunk(b"IDAT", zlib.compress(b"\0" * 1000)) + _png_chunk(b"IEND", b"")
    assert _intake(tmp_path, "bomb.png", png) == "IMAGE_TOO_LARGE"


def test_a_tiff_of_more_frames_than_pages_allowed_is_refused(tmp_path: Path) -> None:
    out = io.BytesIO()
    frames = [Image.new("L", (20, 20), k) for k in range(12)]
    frames[0].save(out, format="TIFF", save_all=True, append_images=frames[1:])
    assert _intake(tmp_path, "scan.tiff", out.getvalue(), max_pages=10) == "IMAGE_TOO_MANY_PAGES"


def test_a_damaged_image_is_refused(tmp_path: Path) -> None:
    out = io.BytesIO()
    Image.new("RGB", (200, 200), "white").save(out, format="PNG")
    assert _intake(tmp_path, "cut.png", out.getvalue()[:60]) == "IMAGE_CORRUPT"
