"""What a file is (issue 43): told from its bytes, on real files we did not make (tests/data/formats, docling's
MIT test data) and on pictures Pillow writes; a type we do not convert is FILE_TYPE_UNSUPPORTED, listed, never skipped."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest
from PIL import Image

from batchlane.domain import file_types as ft
from batchlane.folders.enumerate import classify
from batchlane.folders.spec import parse_spec

DATA = Path(__file__).resolve().parents[1] / "data" / "formats"


def _identify(path: Path, name: str | None = None) -> ft.FileType | tuple[str, str]:
    data = path.read_bytes()
    members = zipfile.ZipFile(path).namelist() if ft.is_zip(data) else []
    return ft.identify(data[:4096], name or path.name, len(data), members)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("word_sample.docx", "docx"),
        ("lorem_ipsum.docx", "docx"),
        ("powerpoint_sample.pptx", "pptx"),
        ("xlsx_01.xlsx", "xlsx"),
        ("table_06.html", "html"),
        ("formatting.html", "html"),
        ("text_document_01.odt", "odt"),
    ],
)
def test_a_real_document_is_told_by_its_bytes_whatever_its_name(name: str, expected: str) -> None:
    found = _identify(DATA / name)
    assert isinstance(found, ft.FileType) and found.name == expected
    if expected != "html":  # HTML is text: only its markup or its name says so
        renamed = _identify(DATA / name, name="upload.bin")
        assert isinstance(renamed, ft.FileType) and renamed.name == expected


@pytest.mark.parametrize(("fmt", "expected"), [("PNG", "png"), ("JPEG", "jpeg"), ("WEBP", "webp"), ("TIFF", "tiff")])
def test_pictures_are_pages(fmt: str, expected: str) -> None:
    out = io.BytesIO()
    Image.new("RGB", (40, 30), "white").save(out, format=fmt)
    found = ft.identify(out.getvalue()[:4096], "scan.bin", len(out.getvalue()))
    assert isinstance(found, ft.FileType) and found.name == expected and found.kind == ft.PAGES and found.is_image


def test_an_epub_is_told_by_its_mimetype_entry() -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as book:
        book.writestr(zipfile.ZipInfo("mimetype"), "application/epub+zip")  # stored first, uncompressed, as EPUB requires
        book.writestr("OEBPS/content.opf", "<package/>")
    data = out.getvalue()
    found = ft.identify(data[:4096], "book", len(data), ["mimetype", "OEBPS/content.opf"])
    assert isinstance(found, ft.FileType) and found.name == "epub" and found.kind == ft.DOCUMENT


@pytest.mark.parametrize(
    ("data", "name", "error_id"),
    [
        (b"plain notes\n", "notes.txt", "FILE_TYPE_UNSUPPORTED"),
        (b"PK\x03\x04" + b"\x00" * 100, "archive.zip", "FILE_TYPE_UNSUPPORTED"),  # a ZIP that is no document of ours
        (b"just text, saved as .pdf\n", "book.pdf", "PDF_NOT_PDF"),  # it claims to be a PDF: the PDF id stays
        (b"", "book.pdf", "PDF_EMPTY"),
        (b"", "deck.pptx", "FILE_EMPTY"),
        (b"GIF89a" + b"\x00" * 20, "anim.gif", "FILE_TYPE_UNSUPPORTED"),
    ],
)
def test_a_file_we_do_not_convert_is_refused_with_its_id(data: bytes, name: str, error_id: str) -> None:
    found = ft.identify(data[:4096], name, len(data))
    assert isinstance(found, tuple) and found[0] == error_id and found[1]


def test_a_folder_job_takes_the_born_digital_types_by_default_and_pictures_only_when_asked() -> None:
    folder = "s3://docs/legal/"
    page = [("legal/a.pdf", 10), ("legal/b.docx", 5), ("legal/c.pptx", 5), ("legal/d.xlsx", 5), ("legal/e.html", 1), ("legal/f.epub", 9)]
    page += [("legal/g.odt", 4), ("legal/scan.tiff", 40), ("legal/photo.jpg", 7)]
    default = classify(parse_spec({"input": {"folder": folder}}), "fj-x", page, done_sources=set())
    assert [f.source_key for f in default.files] == [k for k, _ in page[:7]] and default.excluded == 2  # no picture billed unasked
    asked = classify(
        parse_spec({"input": {"folder": folder, "include": ["*.pdf", "*.tiff", "*.jpg", "*.txt"]}}), "fj-x", [*page, ("legal/n.txt", 1)], done_sources=set()
    )
    assert [(f.source_key, f.status, f.error_id) for f in asked.files] == [
        ("legal/a.pdf", "queued", None),
        ("legal/scan.tiff", "queued", None),
        ("legal/photo.jpg", "queued", None),
        ("legal/n.txt", "failed", "FILE_TYPE_UNSUPPORTED"),  # listed with its id, never dropped
    ]
    assert "batchlane converts PDF, PNG, JPEG" in asked.files[-1].error_message


def test_the_api_and_the_folder_steps_never_load_the_converters_libraries() -> None:
    """python-pptx, openpyxl and lxml cost ~0.35 s to import: only the split's child and Assemble need a converter;
    the API (its dry run tells a type and wraps a picture) and the folder steps stay as light as before (formats/detect.py)."""
    import os
    import subprocess
    import sys

    code = "import sys, batchlane.api.app, batchlane.folders.advance, batchlane.folders.dryrun; print(sorted(m for m in ('pptx', 'openpyxl', 'lxml') if m in sys.modules))"
    env = {**os.environ, "AWS_REGION": "us-east-1", "AWS_DEFAULT_REGION": "us-east-1", "POWERTOOLS_TRACE_DISABLED": "true"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120, check=True)
    assert done.stdout.strip().splitlines()[-1] == "[]"
