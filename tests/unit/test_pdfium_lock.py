"""Every pdfium call the package makes holds PDFIUM_LOCK (pdfium is not thread-safe, not even across documents).

Offline, Lambdas run as threads of one process; the dry-run survey once ran pdfium outside the lock, and under
a 1,000-file folder job pdfium's state broke for every later document ("Data format error" on good files).
The test wraps each of pypdfium2's raw functions with a check and runs every path of batchlane.pdf.
"""

from __future__ import annotations

import gc
import io
import threading
import traceback
from collections.abc import Iterator
from pathlib import Path

import pypdfium2.raw as raw
import pytest
from PIL import Image
from reportlab.pdfgen import canvas

from batchlane.pdf.fit import fit_page
from batchlane.pdf.split import PDFIUM_LOCK, open_chunk, open_pdf_file
from batchlane.pdf.survey import survey_pdf
from batchlane_dev.local.pdfgen import make_pdf


@pytest.fixture
def unlocked_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The pdfium functions called without the lock, with where from."""
    # What an earlier test in this process left for the collector is finalized now, before the check: a
    # finalizer it owes would otherwise run inside this test's gc.collect() and be counted against it.
    gc.collect()
    calls: list[str] = []

    def checked(name: str, function: object) -> object:
        def call(*args: object, **kwargs: object) -> object:
            if not PDFIUM_LOCK._is_owned():  # type: ignore[attr-defined]  # RLock's own-thread check
                calls.append(f"{name} from {traceback.format_stack(limit=3)[0].strip()}")
            return function(*args, **kwargs)  # type: ignore[operator]

        return call

    for name in dir(raw):
        function = getattr(raw, name)
        if name.startswith(("FPDF", "FORM_")) and callable(function) and not isinstance(function, type):
            monkeypatch.setattr(raw, name, checked(name, function))
    yield calls


def _photo_page() -> bytes:
    """One page carrying a noisy photo: larger than a small limit, so fit renders it with pdfium."""
    image = Image.effect_noise((600, 600), 80).convert("RGB")
    buffer = io.BytesIO()
    c = canvas.Canvas(buffer)
    c.drawInlineImage(image, 50, 50, width=400, height=400)
    c.showPage()
    c.save()
    return buffer.getvalue()


def test_the_split_the_chunk_pages_the_survey_and_the_render_call_pdfium_only_under_the_lock(tmp_path: Path, unlocked_calls: list[str]) -> None:
    path = tmp_path / "doc.pdf"
    path.write_bytes(make_pdf(12, blank_every=4))
    with path.open("rb") as stream:
        document = open_pdf_file(stream, max_pages=100)
        [first, second] = document.chunks(6)
        chunk_bytes = document.chunk_pdf(second)
        pages = list(document.pages(first))
        document.close()
    chunk = open_chunk(chunk_bytes, second)
    chunk_pages = list(chunk.pages(second))
    chunk.close()
    survey = survey_pdf(path, max_pages=100)
    photo = _photo_page()
    rendered = fit_page(photo, limit_bytes=len(photo) // 4, render=True)

    assert len(pages) == len(chunk_pages) == 6 and survey.pages == 12 and rendered.pdf_bytes is not None
    assert unlocked_calls == []


def test_the_check_sees_a_call_made_outside_the_lock(unlocked_calls: list[str]) -> None:
    document = raw.FPDF_CreateNewDocument()  # straight to pdfium, as the old survey did
    with PDFIUM_LOCK:
        raw.FPDF_CloseDocument(document)
    assert [call.split()[0] for call in unlocked_calls] == ["FPDF_CreateNewDocument"]


def test_surveys_in_many_threads_all_see_their_pages(tmp_path: Path) -> None:
    paths = []
    for n in range(1, 9):
        path = tmp_path / f"doc-{n}.pdf"
        path.write_bytes(make_pdf(5 * n))
        paths.append((path, 5 * n))
    seen: dict[int, int] = {}

    def survey(path: Path, pages: int) -> None:
        for _ in range(5):
            seen[pages] = survey_pdf(path, max_pages=100).pages

    threads = [threading.Thread(target=survey, args=item) for item in paths]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen == {pages: pages for _, pages in paths}


def test_figure_extraction_calls_no_pdfium_in_this_process_so_holds_no_shared_lock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 40: decoding and encoding a document's images ran in-process under PDFIUM_LOCK, one owner's figure bomb
    holding every other owner's pdfium work; now all of it runs in the bounded child (a process of its own)."""
    from batchlane import keys
    from batchlane.filejob.figures import extract_figures
    from batchlane_dev.local.pdfgen import make_image_pdf
    from tests.unit.usecases.usecase_fakes import MemoryStore

    gc.collect()
    calls: list[str] = []

    def recorded(name: str, function: object) -> object:
        def call(*args: object, **kwargs: object) -> object:
            calls.append(name)
            return function(*args, **kwargs)  # type: ignore[operator]

        return call

    for name in dir(raw):
        function = getattr(raw, name)
        if name.startswith(("FPDF", "FORM_")) and callable(function) and not isinstance(function, type):
            monkeypatch.setattr(raw, name, recorded(name, function))
    store = MemoryStore()
    store.put_bytes(keys.chunk_source_key("j1", 0), make_image_pdf())

    figures = extract_figures(store, "j1", [(0, 1, 3)])

    assert sum(map(len, figures.values())) == 2, "the figures were still written"
    assert calls == [], "no pdfium call in the calling process"
