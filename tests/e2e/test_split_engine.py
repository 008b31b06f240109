"""The pdfium split keeps what a viewer shows and reads like the pypdf split it replaced.

On the real mix (tests/e2e/realmix.py: scans, /Rotate, a filled form, embedded TrueType,
text inside a form XObject, mixed page sizes) every split page must: look like its source
page, keep its rotation, boxes, annotations and fonts, give the emulator's text layer
(pypdf) exactly the text a pypdf-written page gives, and keep the blank check and the text
estimate that the pypdf split gave. A page where they disagree belongs in this file.
"""

from __future__ import annotations

import io

import pypdfium2
import pytest
from PIL import ImageChops, ImageStat
from pypdf import PdfReader, PdfWriter
from realmix import real_mix

from batchlane.pdf import open_chunk, open_pdf
from batchlane.pdf.content import PAGE_READ_BUDGET_S, Deadline
from batchlane.pdf.split import _has_visible_annotations, _read_contents
from batchlane_dev.local.pdfgen import make_pdf

DOCUMENTS = {doc.name: doc.data for doc in real_mix()} | {"generated-with-blanks.pdf": make_pdf(9, blank_every=4, lines_per_page=20)}


def pypdf_split(data: bytes) -> list[tuple[bytes, bool, int]]:
    """What the split gave before pdfium: pypdf's one-page PDFs, blank flag and text estimate."""
    pages = []
    for page in PdfReader(io.BytesIO(data)).pages:
        writer = PdfWriter()
        writer.add_page(page)
        buffer = io.BytesIO()
        writer.write(buffer)
        deadline = Deadline(PAGE_READ_BUDGET_S)
        blank, text_chars, _known = _read_contents(page, deadline)
        pages.append((buffer.getvalue(), blank and not _has_visible_annotations(page, deadline), text_chars))
    return pages


def split(data: bytes, pages_per_chunk: int = 2):  # type: ignore[no-untyped-def]
    """Both steps, as the lanes run them: chunk PDFs at job creation, then one-page PDFs per chunk."""
    document = open_pdf(data, max_pages=100)
    return [page for span in document.chunks(pages_per_chunk) for page in open_chunk(document.chunk_pdf(span), span).pages(span)]


def thumbnail(pdf: bytes, index: int = 0):  # type: ignore[no-untyped-def]
    document = pypdfium2.PdfDocument(pdf)
    try:
        page = document[index]
        return page.render(scale=150 / max(page.get_size())).to_pil().convert("RGB")  # annotations drawn too
    finally:
        document.close()


def _annotations(page) -> list[tuple[str, bool]]:  # type: ignore[no-untyped-def]
    annots = page.get("/Annots")
    return [(str(a.get_object().get("/Subtype")), a.get_object().get("/AP") is not None) for a in (annots.get_object() if annots else [])]


def _fonts(page) -> set[str]:  # type: ignore[no-untyped-def]
    resources = page.get("/Resources")
    fonts = resources.get_object().get("/Font") if resources is not None else None
    return {str(font.get_object().get("/BaseFont")) for font in (fonts.get_object().values() if fonts is not None else [])}


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
def test_split_pages_keep_what_the_pypdf_split_kept(name):
    data = DOCUMENTS[name]
    ours, before = split(data), pypdf_split(data)
    assert len(ours) == len(before)
    for page, (old_bytes, old_blank, old_chars) in zip(ours, before, strict=True):
        new, old = PdfReader(io.BytesIO(page.pdf_bytes)).pages[0], PdfReader(io.BytesIO(old_bytes)).pages[0]
        where = f"{name} page {page.number}"
        assert (page.blank, page.text_chars) == (old_blank, old_chars), where
        assert new.extract_text() == old.extract_text(), f"{where}: the emulator's text layer differs"
        assert new.rotation == old.rotation, where
        for box in ("mediabox", "cropbox", "trimbox"):
            assert list(getattr(new, box)) == list(getattr(old, box)), f"{where} {box}"
        assert _annotations(new) == _annotations(old), where
        assert _fonts(new) == _fonts(old), where


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
def test_split_pages_look_like_their_source_page(name):
    data = DOCUMENTS[name]
    for page in split(data):
        difference = ImageStat.Stat(ImageChops.difference(thumbnail(data, page.number - 1), thumbnail(page.pdf_bytes))).mean
        assert max(difference) < 1, f"{name} page {page.number} looks different once split: {difference}"


def test_the_real_mix_keeps_its_rotations_and_its_filled_form():
    """The cases a viewer would show wrongly if the split dropped them (the test above compares; this pins them)."""
    rotated = [PdfReader(io.BytesIO(p.pdf_bytes)).pages[0].rotation for p in split(DOCUMENTS["rotated.pdf"])]
    assert rotated == [0, 90, 270]
    form = PdfReader(io.BytesIO(split(DOCUMENTS["form.pdf"])[0].pdf_bytes)).pages[0]
    assert [subtype for subtype, has_appearance in _annotations(form) if has_appearance].count("/Widget") == 4
