"""fit_page: a page over the per-page limit comes back under it, still showing the page; or None."""

from __future__ import annotations

import io

import pypdfium2
import pytest
from bigpages import image_page, jpeg, noise, vector_page
from PIL import ImageChops, ImageStat
from pypdf import PdfReader

from batchlane.domain.limits import MAX_PAGE_BYTES
from batchlane.pdf.fit import fit_page


def thumbnail(pdf: bytes):  # type: ignore[no-untyped-def]
    """The page as pdfium shows it, 120 px wide: what a reader (or Claude) sees, noise averaged out."""
    document = pypdfium2.PdfDocument(pdf)
    try:
        page = document[0]
        return page.render(scale=120 / page.get_size()[0]).to_pil().convert("RGB")
    finally:
        document.close()


def assert_looks_the_same(before: bytes, after: bytes) -> None:
    difference = ImageStat.Stat(ImageChops.difference(thumbnail(before), thumbnail(after))).mean
    assert max(difference) < 12, f"the reduced page looks different: mean channel difference {difference}"


def image_sizes(pdf: bytes) -> list[tuple[int, int]]:
    """Width and height of every image XObject the page draws, forms included."""
    sizes, stack = [], [PdfReader(io.BytesIO(pdf)).pages[0]["/Resources"]]
    while stack:
        for ref in stack.pop().get_object().get("/XObject", {}).values():
            xobj = ref.get_object()
            if xobj["/Subtype"] == "/Form":
                stack.append(xobj["/Resources"])
            else:
                sizes.append((int(xobj["/Width"]), int(xobj["/Height"])))
    return sizes


@pytest.mark.parametrize(
    "name, build, masked",
    [
        ("20 MP RGB JPEG", lambda: image_page(jpeg(noise((5000, 4000))), text="Scanned report page"), False),
        ("CMYK JPEG", lambda: image_page(jpeg(noise((3000, 2400), "CMYK")), text="Scanned report page"), False),
        ("grayscale JPEG in a form XObject", lambda: image_page(jpeg(noise((4000, 3000), "L")), text="Scanned report page", in_form=True), False),
        ("Flate RGB", lambda: image_page(noise((2000, 1500)), text="Scanned report page"), False),
        ("RGBA with soft mask", lambda: image_page(noise((1800, 1500), "RGBA"), mask="auto", text="Scanned report page"), True),
    ],
)
def test_a_page_heavy_with_images_is_recompressed_under_the_limit_keeping_its_text_and_look(name, build, masked):
    page = build()
    assert len(page) > MAX_PAGE_BYTES, "the test page must start over the limit"

    result = fit_page(page)

    assert result.how == "recompressed" and result.pdf_bytes is not None
    assert len(result.pdf_bytes) <= MAX_PAGE_BYTES
    reduced = PdfReader(io.BytesIO(result.pdf_bytes))
    assert "Scanned report page" in reduced.pages[0].extract_text(), "the text layer is kept"
    assert image_sizes(result.pdf_bytes) and all(max(size) <= 2048 for size in image_sizes(result.pdf_bytes))
    assert_looks_the_same(page, result.pdf_bytes)
    if masked:  # a soft mask stays attached to its image
        images = [x.get_object() for x in reduced.pages[0]["/Resources"]["/XObject"].values()]
        assert images and all("/SMask" in image for image in images)


def test_an_inline_image_page_is_rendered_to_one_image_of_the_same_size():
    page = image_page(noise((1500, 1200)), inline=True)
    assert len(page) > MAX_PAGE_BYTES

    result = fit_page(page)

    assert result.how == "rendered" and result.pdf_bytes is not None and len(result.pdf_bytes) <= MAX_PAGE_BYTES
    before, after = PdfReader(io.BytesIO(page)).pages[0], PdfReader(io.BytesIO(result.pdf_bytes)).pages[0]
    assert all(abs(float(a) - float(b)) <= 1 for a, b in zip(after.mediabox, before.mediabox, strict=True)), "same page size, to a point"
    assert_looks_the_same(page, result.pdf_bytes)


def test_a_vector_drawing_over_the_limit_is_rendered_and_a_limit_nothing_can_meet_gives_none():
    # 22,000 strokes (576 KB) against a 400 KB limit: the path a 5 MB drawing takes against the 4.5 MB one,
    # at a tenth of pdfium's render time (the image pages above hold the default limit)
    page, limit = vector_page(22_000), 400_000
    assert len(page) > limit

    rendered = fit_page(page, limit)
    assert rendered.how == "rendered" and rendered.pdf_bytes is not None and len(rendered.pdf_bytes) <= limit
    assert fit_page(page, limit, render=False).how == "too_large", "with rendering off, nothing else can shrink a drawing"
    # A limit no render level meets: every level is tried, and a small drawing proves that as well as a huge one
    unreachable = fit_page(vector_page(2_000), limit_bytes=2_000)
    assert unreachable.pdf_bytes is None and unreachable.how == "too_large" and not unreachable.fits


def test_a_page_within_the_limit_is_untouched_and_a_reduction_is_deterministic():
    small = image_page(noise((300, 200)))
    assert fit_page(small).pdf_bytes is small
    page = image_page(jpeg(noise((3000, 2400))))
    page = page + b" " * max(0, MAX_PAGE_BYTES + 1 - len(page))  # over the limit whatever the noise drew
    assert fit_page(page).pdf_bytes == fit_page(page).pdf_bytes, "both lanes must send the same bytes for the same page"


def test_an_unreadable_page_is_not_a_crash():
    assert fit_page(b"%PDF-1.4 not really a pdf" + b"0" * 2_000, limit_bytes=1_000).how == "too_large"


def test_a_reduction_out_of_time_gives_up_with_a_clear_outcome_instead_of_running_on():
    """The deadline is checked between attempts: a clock already past it ends the fit at once (no timing)."""
    from batchlane.pdf.content import Deadline

    page = image_page(noise((2000, 1500)), text="Scanned report page")
    result = fit_page(page, len(page) // 4, deadline=Deadline(0.0, clock=lambda: 0.0))
    assert (result.fits, result.how) == (False, "timed_out")
