"""domain/file_types.py at its edges: each magic number and its neighbours, the 1,024-byte window, HTML told from text
by its markup or its name, a ZIP's mimetype entry, and the refusals in the user's words (ids and messages)."""

from __future__ import annotations

import io
import zipfile

import pytest

from batchlane.domain import file_types as ft

SUPPORTED = "batchlane converts PDF, PNG, JPEG, WebP, TIFF, DOCX, PPTX, XLSX, HTML, EPUB or ODT."


def _found(head: bytes, name: str, members: tuple[str, ...] = ()) -> str:
    """The type's name, or the refusal's id."""
    found = ft.identify(head, name, len(head), members)
    return found.name if isinstance(found, ft.FileType) else found[0]


def _zip_with_mimetype(mimetype: str) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr(zipfile.ZipInfo("mimetype"), mimetype)  # stored first and uncompressed, as EPUB and ODF require
        z.writestr("content.xml", "<office:document-content/>")
    return out.getvalue()


# -- names ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "expected"),
    [("Scan.PDF", "pdf"), ("photo.JPeG", "jpeg"), ("a.jpg", "jpeg"), ("book.xlsm", "xlsx"), ("page.htm", "html"), ("x.tif", "tiff")],
)
def test_a_name_claims_its_type_whatever_the_case_of_its_extension(name: str, expected: str) -> None:
    claimed = ft.by_extension(name)
    assert claimed is not None and claimed.name == expected


@pytest.mark.parametrize("name", ["notes.txt", "README", "archive.tar.gz", "pdf", ".pdf.bak"])
def test_a_name_with_no_extension_of_ours_claims_nothing(name: str) -> None:
    assert ft.by_extension(name) is None


def test_the_upload_content_type_is_the_claimed_types_else_a_neutral_one() -> None:
    assert ft.content_type_for("Deck.PPTX") == "application/vnd.openxmlformats-officedocument.presentationml.presentation"
    assert ft.content_type_for("scan.tiff") == "image/tiff"
    assert ft.content_type_for("notes.txt") == "application/octet-stream"
    assert ft.content_type_for("README") == "application/octet-stream"


# -- magic numbers ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (b"%PDF-1.7\n" + b"\x00" * 40, "pdf"),
        (b" " * 1019 + b"%PDF-1.4", "pdf"),  # the marker ends at byte 1,024: inside the window
        (b" " * 1020 + b"%PDF-1.4", "FILE_TYPE_UNSUPPORTED"),  # one byte later it is not seen
        (b"%pdf-1.4\n", "FILE_TYPE_UNSUPPORTED"),
        (b"\x89PNG\r\n\x1a\n" + b"\x00" * 20, "png"),
        (b"\x89png\r\n\x1a\n" + b"\x00" * 20, "FILE_TYPE_UNSUPPORTED"),
        (b"\xff\xd8\xff\xe0" + b"\x00" * 20, "jpeg"),
        (b"RIFF\x24\x00\x00\x00WEBPVP8 " + b"\x00" * 20, "webp"),
        (b"RIFF\x24\x00\x00\x00WAVEfmt " + b"\x00" * 20, "FILE_TYPE_UNSUPPORTED"),  # a RIFF that is a sound
        (b"RIFX\x24\x00\x00\x00WEBPVP8 " + b"\x00" * 20, "FILE_TYPE_UNSUPPORTED"),
        (b"II*\x00\x08\x00\x00\x00" + b"\x00" * 20, "tiff"),  # little-endian
        (b"MM\x00*\x00\x00\x00\x08" + b"\x00" * 20, "tiff"),  # big-endian
        (b"ii*\x00\x08\x00\x00\x00" + b"\x00" * 20, "FILE_TYPE_UNSUPPORTED"),
        (b"PK\x03\x05" + b"\x00" * 40, "FILE_TYPE_UNSUPPORTED"),  # not a ZIP's local header
    ],
)
def test_the_first_bytes_decide_the_type_whatever_the_name(head: bytes, expected: str) -> None:
    assert _found(head, "upload.bin") == expected


def test_only_a_zips_local_header_is_a_zip() -> None:
    assert ft.is_zip(b"PK\x03\x04rest") and not ft.is_zip(b"PK\x03\x05rest") and not ft.is_zip(b"PK\x03")


# -- ZIP containers --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("mimetype", "expected"),
    [
        ("application/epub+zip", "epub"),
        ("application/vnd.oasis.opendocument.text", "odt"),
        ("application/vnd.oasis.opendocument.text-template", "FILE_TYPE_UNSUPPORTED"),
        ("application/vnd.oasis.opendocument.text-master", "FILE_TYPE_UNSUPPORTED"),
        ("application/vnd.oasis.opendocument.spreadsheet", "FILE_TYPE_UNSUPPORTED"),  # an ODS: not converted
    ],
)
def test_a_zips_mimetype_entry_tells_epub_and_odt_from_their_neighbours(mimetype: str, expected: str) -> None:
    assert _found(_zip_with_mimetype(mimetype), "upload.bin", ("mimetype", "content.xml")) == expected


@pytest.mark.parametrize(
    ("member", "expected"),
    [("word/document.xml", "docx"), ("ppt/presentation.xml", "pptx"), ("xl/workbook.xml", "xlsx"), ("Word/Document.xml", "FILE_TYPE_UNSUPPORTED")],
)
def test_an_office_zip_is_told_by_its_main_part(member: str, expected: str) -> None:
    head = b"PK\x03\x04" + b"\x00" * 100
    assert _found(head, "upload.bin", ("[Content_Types].xml", member)) == expected


# -- HTML: text, told by its markup or its name --------------------------------------------------
@pytest.mark.parametrize(
    ("head", "name", "expected"),
    [
        (b"\xef\xbb\xbf \r\n\t<!DOCTYPE HTML>\n<title>x</title>", "upload.bin", "html"),  # a BOM and blanks first, capitals
        (b"<HTML lang=en><body>x</body></HTML>", "upload.bin", "html"),
        (b'<?xml version="1.0"?>\n<HTML xmlns="http://www.w3.org/1999/xhtml">', "upload.bin", "html"),  # XHTML
        (b'<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg"/>', "drawing.svg", "FILE_TYPE_UNSUPPORTED"),  # XML, not HTML
        (b"XX<html><body>x</body></html>", "upload.bin", "FILE_TYPE_UNSUPPORTED"),  # markup that is not at the start
        (b"<!doctype html>" + b"x" * 20, "notes.txt", "html"),  # the markup decides, not the name
        (b"<p>a fragment</p>", "fragment.html", "html"),  # markup and the name say so
        (b"<p>a fragment</p>", "fragment.txt", "FILE_TYPE_UNSUPPORTED"),  # markup alone, named otherwise
        (b"plain words", "page.html", "FILE_TYPE_UNSUPPORTED"),  # the name alone
        (b"<p>\x00\x01\x02 binary</p>", "page.html", "FILE_TYPE_UNSUPPORTED"),  # a NUL: not text
        (b"<p>" + b"x" * 1021 + b"\x00", "page.html", "html"),  # a NUL past the first 1,024 bytes is not looked at
        (b" " * 1024 + b"<p>late</p>", "page.html", "FILE_TYPE_UNSUPPORTED"),  # no markup within the first 1,024 bytes
    ],
)
def test_html_is_text_that_says_so_or_markup_named_html(head: bytes, name: str, expected: str) -> None:
    assert _found(head, name) == expected


# -- refusals, in the user's words -----------------------------------------------------------------
@pytest.mark.parametrize(("name", "error_id"), [("book.pdf", "PDF_EMPTY"), ("upload", "PDF_EMPTY"), ("deck.pptx", "FILE_EMPTY"), ("scan.PNG", "FILE_EMPTY")])
def test_an_empty_file_is_refused_as_empty_with_the_pdf_id_for_a_pdf_or_a_nameless_file(name: str, error_id: str) -> None:
    assert ft.identify(b"", name, 0) == (error_id, "The file is empty.")


def test_a_one_byte_file_is_not_empty() -> None:
    assert ft.identify(b"x", "book.pdf", 1) == ("PDF_NOT_PDF", "The file is not a PDF (it does not start with %PDF-).")


def test_a_file_of_ours_with_no_content_of_ours_is_refused_naming_its_extension_or_none() -> None:
    assert ft.identify(b"plain words\n", "notes.txt", 12) == ("FILE_TYPE_UNSUPPORTED", f"A .txt file cannot be converted: {SUPPORTED}")
    assert ft.identify(b"plain words\n", "README", 12) == ("FILE_TYPE_UNSUPPORTED", f"This file cannot be converted: {SUPPORTED}")
    assert ft.identify(b"plain words\n", "deck.pptx", 12) == ("FILE_TYPE_UNSUPPORTED", f"A .pptx file cannot be converted: {SUPPORTED}")


def test_a_type_is_told_from_a_files_bytes_before_its_name_is_trusted() -> None:
    found = ft.identify(b"%PDF-1.7\n", "scan.png", 9)
    assert found is ft.PDF
