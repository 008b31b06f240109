"""Formats beside PDF on the offline stack (issue 43), from a terminal like a user: every type through
`batchlane convert FILE` and through a folder job, against `batchlane local up` (a real daemon).

Real files we did not make (tests/data/formats: docling's MIT test data), EPUB built with pandoc from one of
them, a multi-page TIFF scan built with ImageMagick from pages pdfium rendered. A born-digital file costs $0
and its Markdown holds the headings, tables, cells and pictures python-docx / python-pptx / openpyxl read; a
picture is pages through the vision lanes; a type we do not convert is listed FILE_TYPE_UNSUPPORTED.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from decimal import Decimal
from pathlib import Path

import pypdfium2 as pdfium
import pytest
from click.testing import CliRunner
from formatscount import DATA, docx_counts, epub_counts, markdown_counts, pptx_counts, xlsx_counts

from batchlane.formats.pandoc import pandoc_path
from batchlane_dev.cli.main import main
from batchlane_dev.local.daemon import start_daemon, stop_daemon
from batchlane_dev.local.pdfgen import make_pdf

SOURCE_COUNTS = {".docx": docx_counts, ".pptx": pptx_counts, ".xlsx": xlsx_counts}


@pytest.fixture(scope="module")
def local_stack(tmp_path_factory):  # type: ignore[no-untyped-def]
    workdir = tmp_path_factory.mktemp("local")
    mp = pytest.MonkeyPatch()
    mp.setenv("BATCH_POOL_WINDOW_MINUTES", "0")  # a few pages: on-demand at once (the pool has its own tests)
    mp.delenv("DATABASE_URL", raising=False)
    mp.delenv("BATCHLANE_API_URL", raising=False)
    try:
        start_daemon(workdir, faults="")
        yield workdir
    finally:
        stop_daemon(workdir)
        mp.undo()


@pytest.fixture(autouse=True)
def _own_environment():  # type: ignore[no-untyped-def]
    import os

    from batchlane.runtime import reset_services

    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)
    reset_services()


def run(workdir: Path, *args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(main, [*args, "--workdir", str(workdir), "--user", "operator"], catch_exceptions=False)


def scanned_tiff(path: Path, pages: int = 3) -> Path:
    """A multi-page TIFF scan: pages of a PDF rendered by pdfium at 100 dpi, joined by ImageMagick (LZW), as a
    scanner's software writes them; Pillow joins them where ImageMagick is not installed."""
    document = pdfium.PdfDocument(make_pdf(pages))
    frames = [document[k].render(scale=100 / 72).to_pil().convert("L") for k in range(pages)]
    pngs = []
    for k, frame in enumerate(frames):
        pngs.append(path.parent / f"frame-{k}.png")
        frame.save(pngs[-1])
    if shutil.which("convert"):
        subprocess.run(["convert", *map(str, pngs), "-compress", "lzw", str(path)], check=True, timeout=120)
    else:  # pragma: no cover - every machine this suite runs on has ImageMagick (docs/testing.md)
        frames[0].save(path, save_all=True, append_images=frames[1:], compression="tiff_lzw")
    for png in pngs:
        png.unlink()
    return path


def epub_from(docx: Path, target: Path) -> Path:
    subprocess.run([pandoc_path(), str(docx), "--epub-title-page=false", "-o", str(target)], check=True, capture_output=True, timeout=120)
    return target


def _converted(workdir: Path, path: Path) -> dict:  # type: ignore[type-arg]
    done = run(workdir, "convert", str(path), "--json", "--force")
    assert done.exit_code == 0, done.output
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.parametrize("name", ["word_sample.docx", "powerpoint_with_image.pptx", "xlsx_01.xlsx", "table_06.html", "text_document_01.odt"])
def test_a_born_digital_file_converts_for_nothing_and_keeps_what_it_holds(local_stack, tmp_path: Path, name: str) -> None:  # type: ignore[no-untyped-def]
    source = tmp_path / name
    shutil.copyfile(DATA / name, source)
    job = _converted(local_stack, source)
    assert job["status"] == "completed" and job["costUsd"] == "0" and job["pages"]["failed"] == 0 and job["pages"]["total"] >= 1
    markdown = (tmp_path / f"{source.stem}.md").read_text(encoding="utf-8")
    assert "<!-- Page 1 -->" in markdown
    if source.suffix in SOURCE_COUNTS:
        assert markdown_counts(markdown) == SOURCE_COUNTS[source.suffix](source)
    figures = tmp_path / f"{source.stem}.images"
    for link in (line.split("](", 1)[1].split(")", 1)[0] for line in markdown.splitlines() if line.startswith("![")):
        assert (tmp_path / link).is_file() and (tmp_path / link).parent == figures  # each picture downloaded beside the Markdown


def test_renderings_asked_for_are_written_beside_the_markdown(local_stack, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    source = tmp_path / "word_sample.docx"
    shutil.copyfile(DATA / "word_sample.docx", source)
    dry = run(local_stack, "convert", str(source), "--dry-run", "--json")
    assert dry.exit_code == 0, dry.output
    estimate = json.loads(dry.stdout.splitlines()[-1])
    assert (estimate["lane"]["name"], estimate["estimate"]["costUsd"], estimate["estimate"]["holdUsd"], estimate["records"]) == ("converter", "0", "0", 0)
    done = run(local_stack, "convert", str(source), "--json", "--format", "docx", "--format", "html", "--format", "json")
    assert done.exit_code == 0, done.output
    job = json.loads(done.stdout.splitlines()[-1])
    assert sorted(Path(p).name for p in job["renderingPaths"]) == ["word_sample.blocks.jsonl", "word_sample.converted.docx", "word_sample.converted.html"]
    assert docx_counts(tmp_path / "word_sample.converted.docx") == docx_counts(source)  # the source itself is untouched beside it
    assert (tmp_path / "word_sample.docx").read_bytes() == (DATA / "word_sample.docx").read_bytes()


def test_an_epub_built_with_pandoc_converts(local_stack, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    book = epub_from(DATA / "word_sample.docx", tmp_path / "duck.epub")
    job = _converted(local_stack, book)
    assert job["status"] == "completed" and job["costUsd"] == "0"
    assert markdown_counts((tmp_path / "duck.md").read_text(encoding="utf-8")) == epub_counts(book)


def test_a_multi_page_tiff_scan_is_pages_through_the_vision_lanes(local_stack, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    scan = scanned_tiff(tmp_path / "scan.tiff", pages=3)
    dry = run(local_stack, "convert", str(scan), "--dry-run", "--json")
    assert dry.exit_code == 0, dry.output
    estimate = json.loads(dry.stdout.splitlines()[-1])
    assert (estimate["pages"]["total"], estimate["pages"]["scans"], estimate["records"]) == (3, 3, 3) and float(estimate["estimate"]["costUsd"]) > 0
    job = _converted(local_stack, scan)
    assert job["status"] == "completed" and job["pages"] == {"total": 3, "done": 3, "failed": 0, "batchServed": 0}
    assert float(job["costUsd"]) > 0  # each frame a billed vision call
    markdown = (tmp_path / "scan.md").read_text(encoding="utf-8")
    assert [f"<!-- Page {n} -->" in markdown for n in (1, 2, 3)] == [True] * 3
    pages = run(local_stack, "jobs", "pages", job["jobId"], "--json")
    assert pages.exit_code == 0, pages.output


def test_a_file_of_another_type_is_refused_before_upload(local_stack, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    notes = tmp_path / "notes.txt"
    notes.write_text("plain notes\n")
    refused = run(local_stack, "convert", str(notes), "--json")
    assert refused.exit_code == 2 and json.loads(refused.stdout.splitlines()[-1])["error"]["code"] == "FILE_TYPE_UNSUPPORTED"


def test_a_folder_of_every_type_converts_and_lists_what_it_cannot(local_stack, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    folder = tmp_path / "mixed"
    folder.mkdir()
    for name in ("word_sample.docx", "powerpoint_sample.pptx", "xlsx_05_table_with_title.xlsx", "example_03.html", "text_document_01.odt"):
        shutil.copyfile(DATA / name, folder / name)
    epub_from(DATA / "unit_test_headers.docx", folder / "headers.epub")
    (folder / "report.pdf").write_bytes(make_pdf(2))
    scanned_tiff(folder / "scan.tiff", pages=2)
    (folder / "notes.txt").write_text("plain notes\n")

    dry = run(local_stack, "convert", f"{folder}/", "--dry-run", "--json", "--include", "*")
    assert dry.exit_code == 0, dry.output
    estimate = json.loads(dry.stdout.splitlines()[-1])
    by_type = estimate["files"]["estimateByType"]
    assert sorted(by_type) == ["docx", "epub", "html", "odt", "pdf", "pptx", "tiff", "xlsx"]
    assert all(
        by_type[t] == {"files": 1, "pages": None, "method": "converter", "onDemandUsd": "0", "batchUsd": "0"}
        for t in ("docx", "pptx", "xlsx", "html", "epub", "odt")
    )
    assert (by_type["pdf"]["pages"], by_type["tiff"]["pages"]) == (2, 2) and float(by_type["tiff"]["onDemandUsd"]) > 0
    assert estimate["files"]["failing"] == {next(k for k in estimate["files"]["failing"] if k.endswith("notes.txt")): "FILE_TYPE_UNSUPPORTED"}

    by_default = run(local_stack, "convert", f"{folder}/", "--json", "--format", "docx")
    assert by_default.exit_code == 0, by_default.output  # the scan is left out (unasked vision calls), nothing fails
    job = json.loads(by_default.stdout.splitlines()[-1])
    assert job["status"] == "completed" and job["files"]["completed"] == 7
    for name in ("word_sample", "powerpoint_sample", "xlsx_05_table_with_title", "example_03", "text_document_01", "headers", "report"):
        assert (folder / f"{name}.md").read_text(encoding="utf-8").startswith("<!-- Page 1 -->"), name
    assert markdown_counts((folder / "word_sample.md").read_text(encoding="utf-8")) == docx_counts(folder / "word_sample.docx")
    assert not (folder / "scan.md").exists()
    report = {json.loads(line)["key"].rsplit("/", 1)[1]: json.loads(line) for line in run(local_stack, "jobs", "report", job["id"]).stdout.splitlines()}
    assert (report["word_sample.docx"]["lane"], Decimal(report["word_sample.docx"]["costUsd"]), report["word_sample.docx"]["laneReason"]) == (
        "converter",
        0,
        "born_digital",
    )
    assert report["report.pdf"]["lane"] == "on_demand" and Decimal(report["report.pdf"]["costUsd"]) > 0  # amounts: decimal strings
    assert docx_counts(folder / "word_sample.converted.docx") == docx_counts(folder / "word_sample.docx")  # renderings come back too

    # Asked for the pictures, and the .docx again: our own renderings (report.converted.docx) are never inputs.
    asked = run(local_stack, "convert", f"{folder}/", "--json", "--force", "--include", "*.tiff", "--include", "*.txt", "--include", "*.docx")
    assert asked.exit_code == 3, asked.output  # completed with a failure: the .txt
    listed = json.loads(asked.stdout.splitlines()[-1])
    files = json.loads(run(local_stack, "jobs", "files", listed["id"], "--json").stdout)["files"]
    found = {f["key"].rsplit("/", 1)[1]: (f["status"], (f["error"] or {}).get("code")) for f in files}
    assert sorted(found) == ["notes.txt", "scan.tiff", "word_sample.docx"]  # word_sample.converted.docx is ours: never an input
    assert (found["scan.tiff"], found["notes.txt"]) == (("completed", None), ("failed", "FILE_TYPE_UNSUPPORTED"))
    assert (folder / "scan.md").read_text(encoding="utf-8").count("<!-- Page ") == 2
