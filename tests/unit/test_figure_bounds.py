"""Every figure operation bounded (issue 40.2), and figures written only where they are real (issue 39.4).

Figure work runs in the bounded child (filejob/figures.py, pdf/images.py): a page drawing too many images keeps
its descriptions (FIGURES_OVER_CAP), a document past its figure count or pixel budget keeps later descriptions
(FIGURE_PIXELS_SPENT), a chunk past its time or memory bound keeps its own (FIGURE_WORK_OVER_BOUND); Assemble's
memory does not grow with the images' count. A crop all of one colour, or one that misses the drawing the model
named, is never written: the drawing is cropped where the page draws it.
"""

from __future__ import annotations

import io
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

from PIL import Image
from reportlab.lib.pagesizes import A4
from reportlab.lib.utils import ImageReader
from reportlab.pdfgen import canvas

from batchlane import keys
from batchlane.filejob.figures import BOUND_SPENT, extract_figures
from batchlane.pdf.bounded import Bound
from batchlane.pdf.images import MAX_FIGURES_PER_PAGE, OVER_CAP, PIXELS_SPENT, FigureLimits
from batchlane_dev.local.pdfgen import figure_bomb_pdf
from tests.unit.usecases.usecase_fakes import MemoryStore

CORPUS = Path(__file__).resolve().parents[1] / "corpus"


def _photos_pdf(per_page: list[int], *, side: int = 120, seed: int = 0) -> bytes:
    """Pages each drawing ``per_page[i]`` distinct noisy photos (each a figure: big enough, none repeated)."""
    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=A4)
    serial = seed
    for count in per_page:
        pdf.drawString(72, 800, "A page of photos.")
        for k in range(count):
            serial += 1
            photo = Image.effect_noise((side, side), 40 + serial % 50).convert("RGB")
            pdf.drawImage(ImageReader(photo), 40 + (k % 4) * 130, 60 + (k // 4) * 130, width=110, height=110)
        pdf.showPage()
    pdf.save()
    return buffer.getvalue()


def _store(pdf: bytes, job: str = "j1") -> MemoryStore:
    store = MemoryStore()
    store.put_bytes(keys.chunk_source_key(job, 0), pdf)
    return store


def test_a_page_drawing_one_25_megapixel_image_520_times_keeps_its_figures_as_descriptions() -> None:
    store = _store(figure_bomb_pdf())

    figures = extract_figures(store, "j1", [(0, 1, 1)])

    assert dict(figures) == {} and figures.skipped == {1: OVER_CAP}
    assert store.list_keys(keys.images_prefix("j1")) == [], "nothing decoded, nothing written"


def test_a_page_with_more_figures_than_its_cap_keeps_them_all_as_descriptions_and_one_within_it_writes_them() -> None:
    store = _store(_photos_pdf([MAX_FIGURES_PER_PAGE + 1, MAX_FIGURES_PER_PAGE]))

    figures = extract_figures(store, "j1", [(0, 1, 2)])

    assert figures.skipped == {1: OVER_CAP}
    assert list(figures) == [2] and len(figures[2]) == MAX_FIGURES_PER_PAGE


def test_past_the_documents_figure_count_and_pixel_budget_later_pages_keep_their_descriptions() -> None:
    pdf = _photos_pdf([1, 1, 1])
    by_count = extract_figures(_store(pdf), "j1", [(0, 1, 3)], limits=FigureLimits(figures_left=2))
    by_pixels = extract_figures(_store(pdf), "j1", [(0, 1, 3)], limits=FigureLimits(pixels_left=120 * 120 + 1))

    assert sorted(by_count) == [1, 2] and by_count.skipped == {3: PIXELS_SPENT}
    assert sorted(by_pixels) == [1] and by_pixels.skipped == {2: PIXELS_SPENT, 3: PIXELS_SPENT}


def test_a_chunk_past_its_memory_bound_keeps_its_figures_as_descriptions() -> None:
    store = _store(_photos_pdf([1, 1], side=1200))

    figures = extract_figures(store, "j1", [(0, 1, 2)], chunk_bound=Bound(seconds=60, memory_mb=4))

    assert dict(figures) == {} and figures.skipped == {1: BOUND_SPENT, 2: BOUND_SPENT}
    assert store.list_keys(keys.images_prefix("j1")) == []


class _CountingStore(MemoryStore):
    """A bucket that keeps the chunk PDFs but only counts what is uploaded, so the caller's memory is what is measured."""

    def __init__(self) -> None:
        super().__init__()
        self.uploaded = 0
        self.largest_part = 0

    def put_stream(self, key: str, chunks: Iterator[bytes], content_type: str = "") -> None:
        for part in chunks:
            self.largest_part = max(self.largest_part, len(part))
        self.uploaded += 1


def _peak_while_extracting(pages: int) -> tuple[int, _CountingStore]:
    store = _CountingStore()
    store.put_bytes(keys.chunk_source_key("j1", 0), _photos_pdf([4] * pages, side=160))
    tracemalloc.start()
    tracemalloc.reset_peak()
    before = tracemalloc.get_traced_memory()[0]
    extract_figures(store, "j1", [(0, 1, pages)])
    peak = tracemalloc.get_traced_memory()[1] - before
    tracemalloc.stop()
    return peak, store


def test_assembles_memory_does_not_grow_with_the_images_count() -> None:
    few, few_store = _peak_while_extracting(2)
    many, many_store = _peak_while_extracting(8)

    assert (few_store.uploaded, many_store.uploaded) == (8, 32)
    assert many_store.largest_part <= 1 << 20, "each PNG is streamed in parts of at most 1 MiB"
    assert many < few + 256 * 1024, f"four times the images, the same memory: {few} → {many} bytes"


def _drawing_in_a_form_pdf() -> bytes:
    """GeoTopo's first page in small: a title, and a drawing made of many paths inside a form XObject (pdfium gives
    the paths form coordinates), in the middle of the page."""
    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=A4)
    pdf.drawString(200, 780, "Einführung in die Geometrie und Topologie")
    pdf.beginForm("torus", lowerx=0, lowery=0, upperx=300, uppery=200)
    for k in range(40):
        pdf.ellipse(10 + k * 3, 10 + k, 290 - k * 3, 190 - k, stroke=1, fill=0)
    pdf.endForm()
    pdf.saveState()
    pdf.translate(150, 320)
    pdf.doForm("torus")
    pdf.restoreState()
    pdf.showPage()
    pdf.save()
    return buffer.getvalue()


def test_a_drawing_the_model_placed_wrongly_is_cropped_where_the_page_draws_it() -> None:
    # The offline model placed GeoTopo's torus in the page's empty lower left corner (form coordinates): that crop was
    # an all-white PNG and the torus was not captured.
    store = _store(_drawing_in_a_form_pdf())
    wrong = (0.0, 0.88, 0.5, 0.99)

    figures = extract_figures(store, "j1", [(0, 1, 1)], regions={1: [wrong]})

    [figure] = figures[1]
    image = Image.open(io.BytesIO(store.objects[keys.images_prefix("j1") + figure.name])).convert("L")
    low, high = image.getextrema()
    assert high - low > 100, "the drawing's ink is in it"
    scale = 2000 / A4[1]
    assert abs(image.width - (300 + 16) * scale) < 0.1 * image.width and abs(image.height - (200 + 16) * scale) < 0.1 * image.height


def test_a_region_where_the_page_draws_nothing_and_an_all_white_image_write_no_file() -> None:
    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=A4)
    pdf.drawString(72, 800, "Only text, and a white box drawn as an image.")
    pdf.drawImage(ImageReader(Image.new("RGB", (300, 300), "white")), 100, 300, width=200, height=200)
    pdf.showPage()
    pdf.save()
    store = _store(buffer.getvalue())

    figures = extract_figures(store, "j1", [(0, 1, 1)], regions={1: [(0.1, 0.1, 0.6, 0.3)]})

    assert dict(figures) == {} and store.list_keys(keys.images_prefix("j1")) == []


def test_a_picture_a_bound_volume_repeats_a_book_apart_is_a_figure_and_a_logo_on_pages_close_together_is_not() -> None:
    """6×GeoTopo: the torus on each title page (117 pages apart) was taken for a logo, and not written."""
    torus = Image.effect_noise((200, 200), 60).convert("RGB")
    logo = Image.effect_noise((150, 150), 30).convert("RGB")
    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=A4)
    for number in range(1, 21):
        pdf.drawString(72, 800, f"Page {number}.")
        if number in (1, 9, 17):
            pdf.drawImage(ImageReader(torus), 100, 300, width=200, height=200)
        if number in (3, 4, 5):
            pdf.drawImage(ImageReader(logo), 100, 600, width=120, height=120)
        pdf.showPage()
    pdf.save()

    figures = extract_figures(_store(buffer.getvalue()), "j1", [(0, 1, 20)])

    assert sorted(figures) == [1, 9, 17]


def test_a_photo_with_a_soft_mask_is_written_as_the_page_shows_it_not_black() -> None:
    """GeoTopo's page 24 (py-pdf/sample-files, committed in tests/corpus) draws four knots whose photos carry a soft
    mask: their raw pixels are black where the page is white. The written figure is the page's view: white around
    the knot, no black square."""
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter()
    writer.add_page(PdfReader(CORPUS / "GeoTopo-komprimiert.pdf").pages[23])
    buffer = io.BytesIO()
    writer.write(buffer)
    store = _store(buffer.getvalue())

    figures = extract_figures(store, "j1", [(0, 1, 1)])

    assert len(figures[1]) == 4, "the four knots"
    for figure in figures[1]:
        image = Image.open(io.BytesIO(store.objects[keys.images_prefix("j1") + figure.name])).convert("L")
        corners = [image.getpixel((x, y)) for x in (1, image.width - 2) for y in (1, image.height - 2)]
        assert min(corners) > 200, f"{figure.name}: its corners are {corners} (black where the page is white)"
