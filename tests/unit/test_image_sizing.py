"""Page images sized for Claude (issue 42.2): rendered within 1.15 megapixels and 1,568 px (Anthropic, "Vision"),
and an image's tokens counted after Claude's own scaling, by the budget and by the emulator alike."""

from __future__ import annotations

import io
import math

import pytest
from PIL import Image

from batchlane.domain import vision
from batchlane.pdf.page_image import render_page_image
from batchlane.pdf.split import open_pdf, plan_chunks
from batchlane_dev.local.bedrock.model import SeenImage, see_image

LIBTASN1 = "/usr/share/doc/libtasn1-doc/libtasn1.pdf"  # US Letter
MIME_SPEC = "/usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf"  # A4


def _first_page(path: str) -> bytes:
    with open(path, "rb") as handle:
        data = handle.read()
    document = open_pdf(data, max_pages=500)
    return next(iter(document.pages(plan_chunks(document.page_count, 1)[0]))).pdf_bytes


@pytest.mark.parametrize("path", [LIBTASN1, MIME_SPEC], ids=["letter", "a4"])
def test_a_real_page_is_rendered_at_the_size_claude_reads_it(path):
    # Given a real Letter or A4 page in the image form
    image = render_page_image(_first_page(path))
    # Then it is within 1.15 megapixels and 1,568 px (before 42.2: 1,568 px long, 1.7-1.9 megapixels, scaled again by Claude)
    assert image.width * image.height <= vision.PAGE_IMAGE_MAX_PIXELS, image
    assert max(image.width, image.height) <= vision.CLAUDE_MAX_LONG_EDGE_PX
    assert vision.claude_scaled(image.width, image.height) == (image.width, image.height), "Claude would scale it again"
    # and as large as that allows: the text stays as sharp as Claude can use
    assert image.width * image.height >= 0.99 * vision.PAGE_IMAGE_MAX_PIXELS
    assert Image.open(io.BytesIO(image.data)).size == (image.width, image.height)


def test_claude_scales_by_its_long_edge_and_its_area_as_anthropic_lists():
    # Anthropic's table: sizes that are not scaled
    for size in ((1092, 1092), (951, 1268), (896, 1344), (819, 1456)):
        assert vision.claude_scaled(*size) == size
    # an A4 scan at 150 dpi (1240 x 1754, 1.75 megapixels) is scaled to the page-shaped limit: ~1,608 tokens, not 2,900
    assert vision.image_tokens(1240, 1754) == 1608
    assert math.ceil(1240 * 1754 / 750) == 2900
    # a wide image first by its long edge, then by its area
    width, height = vision.claude_scaled(3136, 1568)
    assert width <= 1568 and width * height <= vision.CLAUDE_MAX_IMAGE_PIXELS and abs(width / height - 2) < 0.01
    # a small image is never scaled up
    assert vision.claude_scaled(400, 300) == (400, 300) and vision.image_tokens(400, 300) == 160


def test_the_emulator_bills_an_oversize_image_after_claudes_scaling():
    # Given a scan sent larger than Claude reads it
    buffer = io.BytesIO()
    Image.new("L", (1240, 1754), 255).save(buffer, "PNG")
    seen = see_image(buffer.getvalue())
    # Then the emulator bills what Claude bills (Anthropic "Vision": scaled down first), keeping the size it was sent at
    assert (seen.width, seen.height) == (1240, 1754)
    assert seen.tokens == vision.image_tokens(1240, 1754) == 1608
    assert SeenImage(800, 600, "", None).tokens == 640  # within the limits: width x height / 750 as sent
