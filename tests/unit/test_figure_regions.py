"""Vector figures as files: the region the model gives a figure is parsed, and the rendered page is cropped to it."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from PIL import Image

from batchlane import keys
from batchlane.domain.assembly import figure_descriptions, figure_regions, link_figures, page_blocks
from batchlane.filejob.figures import extract_figures
from batchlane.pdf.images import MIN_FIGURE_PX
from batchlane_dev.cli.jobs_commands import ApiFailure, download_image
from batchlane_dev.local.bedrock.model import page_markdown
from batchlane_dev.local.pdfgen import VECTOR_CHART_PAGE, make_image_pdf, make_vector_chart_pdf
from tests.unit.usecases.usecase_fakes import MemoryStore


def test_a_description_s_region_is_parsed_and_left_out_of_the_alt_text() -> None:
    blocks = [
        "Text.",
        "*A bar chart of pages per lane (region: 0.1, 0.2, 0.9, 0.55).*",
        "*[Figure: a photo (region: 0.5, 0.5, 0.4, 0.9)]*",  # right before left: no region
        "*[Figure: a logo]*",
    ]
    assert figure_regions(blocks) == [(0.1, 0.2, 0.9, 0.55)]
    assert [text for _, text in figure_descriptions(blocks)] == ["A bar chart of pages per lane", "a photo", "a logo"]
    assert figure_regions(["*A chart (region: 0.1, 0.2, 1.5, 0.5)*", "*A chart (region: 1, 2)*"]) == []


def test_the_emulator_gives_the_vector_chart_s_region_and_assemble_crops_it_to_a_file() -> None:
    pdf = make_vector_chart_pdf()
    regions = figure_regions(page_blocks(page_markdown(pdf, visual=True)))
    assert len(regions) == 1
    left, top, right, bottom = regions[0]
    assert 0.1 < left < right < 0.85 and 0.1 < top < bottom < 0.6  # the chart, not the small box near the foot
    store = MemoryStore()
    store.put_bytes(keys.chunk_source_key("j1", 0), pdf)
    figures = extract_figures(store, "j1", [(0, 1, 3)], regions={VECTOR_CHART_PAGE: regions})
    assert list(figures) == [VECTOR_CHART_PAGE]
    [figure] = figures[VECTOR_CHART_PAGE]
    assert figure.name == f"p{VECTOR_CHART_PAGE}-1.png"
    image = Image.open(io.BytesIO(store.objects[keys.images_prefix("j1") + figure.name]))
    assert image.size == (figure.width, figure.height)
    assert image.width > 300 and image.height > 200
    assert min(image.convert("L").getdata()) < 128  # the bars are in it: ink, not an empty crop
    linked = link_figures(["*A bar chart (region: 0.2, 0.2, 0.8, 0.5)*"], figures[VECTOR_CHART_PAGE], "book.images", VECTOR_CHART_PAGE)
    assert linked == [f"![A bar chart](book.images/p{VECTOR_CHART_PAGE}-1.png)"]


def test_a_tiny_region_is_not_a_figure_and_a_region_over_an_embedded_image_is_not_cropped_again() -> None:
    store = MemoryStore()
    store.put_bytes(keys.chunk_source_key("j1", 0), make_vector_chart_pdf())
    tiny = (0.08, 0.91, 0.08 + MIN_FIGURE_PX / 2 / 2000, 0.93)  # a bullet box: under MIN_FIGURE_PX rendered
    assert extract_figures(store, "j1", [(0, 1, 3)], regions={1: [tiny], 3: [(0.0, 0.0, 1.0, 1.0)]}) == {}  # the whole page: no figure either
    pdf = make_image_pdf()
    (left, bottom, right, top), (width, height), pixels = _first_image(pdf)
    over = (left / width, 1 - top / height, right / width, 1 - bottom / height)  # the box the model saw the photo in
    store = MemoryStore()
    store.put_bytes(keys.chunk_source_key("j2", 0), pdf)
    plain = {n: [(f.width, f.height) for f in fs] for n, fs in extract_figures(store, "j2", [(0, 1, 3)]).items()}
    around = {n: [(f.width, f.height) for f in fs] for n, fs in extract_figures(store, "j2", [(0, 1, 3)], regions={1: [over]}).items()}
    assert around == plain and plain[1] == [pixels]


def _framed_photo_pdf(x: float, y: float, width: float, height: float) -> bytes:
    """One A4 page: a photo drawn at (x, y) in points from the foot (PDF's y), a stroked frame round it (a path, what the
    drawing finder sees), and a line of text."""
    from PIL import Image, ImageDraw
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.utils import ImageReader
    from reportlab.pdfgen import canvas

    photo = Image.new("RGB", (480, 320), (200, 220, 240))
    draw = ImageDraw.Draw(photo)
    for n in range(0, 480, 40):  # ink in it: not a one-colour box
        draw.rectangle((n, 40 + n // 4, n + 20, 300 - n // 5), fill=(40 + n // 3, 90, 160 - n // 4))
    data = io.BytesIO()
    photo.save(data, format="PNG")
    data.seek(0)
    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=A4, invariant=True)
    pdf.drawImage(ImageReader(data), x, y, width=width, height=height)
    pdf.setLineWidth(2)
    pdf.rect(x - 6, y - 6, width + 12, height + 12, stroke=1, fill=0)
    pdf.drawString(72, 60, "A photo near the top of the page, in a frame.")
    pdf.showPage()
    pdf.save()
    return buffer.getvalue()


@pytest.mark.parametrize(("x", "y"), [(72, 560), (300, 600), (60, 80)])  # near the top, top right, near the foot
def test_a_region_over_an_off_centre_photo_in_a_frame_writes_the_photo_once(x: float, y: float) -> None:
    # The model's region is top-down, the photo's bounds are PDF's bottom-up: the photo's centre must be flipped to
    # be found in its region. Unflipped, an off-centre photo is not found, and its frame is cropped as a drawing: twice.
    pdf = _framed_photo_pdf(x, y, 240, 160)
    (left, bottom, right, top), (width, height), pixels = _first_image(pdf)
    over = (left / width, 1 - top / height, right / width, 1 - bottom / height)  # the box the model saw the photo in
    store = MemoryStore()
    store.put_bytes(keys.chunk_source_key("j3", 0), pdf)
    figures = extract_figures(store, "j3", [(0, 1, 1)], regions={1: [over]})
    [photo] = figures[1]  # the photo, and nothing else: no crop of its frame beside it
    assert abs(photo.width - pixels[0]) <= 1 and abs(photo.height - pixels[1]) <= 1  # at about its own resolution (pdfium renders it)


def _first_image(pdf: bytes) -> tuple[tuple[float, float, float, float], tuple[float, float], tuple[int, int]]:
    """Page 1's image: its bounds in points, the page's size, its pixels."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as pdfium_c

    document = pdfium.PdfDocument(pdf)
    try:
        page = document[0]
        [image] = page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE], max_depth=3)
        return image.get_bounds(), page.get_size(), image.get_px_size()
    finally:
        document.close()


@pytest.mark.parametrize("name", ["../p1-1.png", "/etc/p1-1.png", "book.images/../../p1-1.png", "p1-1.png", "book.images/sub/p1-1.png"])
def test_the_cli_refuses_an_image_name_that_would_leave_the_markdown_s_folder(tmp_path, name) -> None:  # type: ignore[no-untyped-def]
    class NoDownloads:
        def download(self, url: str, target: Path, *, force: bool) -> int:
            raise AssertionError(f"fetched {url} to {target}")

    with pytest.raises(ApiFailure, match="not <folder>/<file>"):
        download_image(NoDownloads(), {"fileName": name, "url": "http://x/y"}, tmp_path, force=False)  # type: ignore[arg-type]
