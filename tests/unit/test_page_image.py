"""The image form's encoding: PNG where it fits, JPEG for a photo, and no whole-page PNG made only to be thrown away."""

from __future__ import annotations

import io
import random

import pytest
from PIL import Image

from batchlane.pdf import page_image
from batchlane.pdf.page_image import MAX_IMAGE_BYTES, PageImageError

SIZE = (1111, 1568)  # an A4 page at the long edge Claude keeps


def _photo(size: tuple[int, int] = SIZE) -> Image.Image:
    return Image.frombytes("RGB", size, random.Random(7).randbytes(size[0] * size[1] * 3))


def _text_like() -> Image.Image:
    page = Image.new("RGB", SIZE, "white")
    line = Image.new("RGB", (900, 12), "black")
    for top in range(100, 1450, 30):
        page.paste(line, (100, top))
    return page


@pytest.fixture()
def png_saves(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """The sizes of the images saved as PNG (the probe's bands and any whole page)."""
    saves: list[tuple[int, int]] = []
    save = Image.Image.save

    def spy(self: Image.Image, fp: object, format: str | None = None, **params: object) -> None:
        if format == "PNG":
            saves.append(self.size)
        save(self, fp, format, **params)

    monkeypatch.setattr(Image.Image, "save", spy)
    return saves


def test_a_photo_page_goes_jpeg_without_encoding_the_whole_page_as_png(png_saves: list[tuple[int, int]]) -> None:
    data, media_type = page_image._encode(_photo(), 750_000)
    assert media_type == "image/jpeg" and len(data) <= 750_000
    assert Image.open(io.BytesIO(data)).size == SIZE
    assert SIZE not in png_saves and len(png_saves) == 1, "only the bands were encoded as PNG"


def test_a_text_page_stays_png(png_saves: list[tuple[int, int]]) -> None:
    data, media_type = page_image._encode(_text_like(), MAX_IMAGE_BYTES)
    assert media_type == "image/png" and Image.open(io.BytesIO(data)).size == SIZE
    assert SIZE in png_saves


def test_a_page_with_a_photo_across_one_band_still_gets_its_png_where_the_png_fits() -> None:
    page = Image.new("RGB", SIZE, "white")
    page.paste(_photo((1111, 150)), (0, 560))  # crosses the second band: the probe over-reads it fourfold
    data, media_type = page_image._encode(page, MAX_IMAGE_BYTES)
    assert media_type == "image/png" and len(data) <= MAX_IMAGE_BYTES


def test_a_photo_too_big_even_as_the_lowest_jpeg_is_a_clear_error() -> None:
    with pytest.raises(PageImageError, match="even as JPEG"):
        page_image._encode(_photo(), 50_000)


def test_a_small_image_is_not_probed_and_is_encoded_whole() -> None:
    assert not page_image._png_hopeless(_photo((64, 40)), 10)
    data, media_type = page_image._encode(_photo((64, 40)), MAX_IMAGE_BYTES)
    assert media_type == "image/png" and Image.open(io.BytesIO(data)).size == (64, 40)
