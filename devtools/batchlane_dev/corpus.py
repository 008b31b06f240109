"""The one-document corpus: real PDFs we did not make, converted and measured (issue 39; docs/testing.md).

Each document is converted the way the offline stack converts it, without the stack's servers: the PDF is
split and chunked by the product's own code (pdf/split.py, filejob/source.py), each page is read by the
offline model emulator (the same ``page_markdown`` the stack's Bedrock emulator answers with), and the
product's Assemble code (filejob/assemble.py, filejob/figures.py) writes the Markdown, pages.jsonl and
the figure files into a memory bucket; they land on disk beside each other as `batchlane demo` writes them
(local/outputs.py). :func:`measure` is doc_metrics.py (vendored unchanged from the project's shared tools).
`make bench --only one_document` runs the same documents through the whole offline stack.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from batchlane import keys
from batchlane.claude import PageResult
from batchlane.domain.errors import NotFound
from batchlane.filejob.assemble import described_regions, read_results, write_document
from batchlane.filejob.figures import Figures, extract_figures, figure_folder
from batchlane.filejob.source import store_chunk_sources
from batchlane.pdf.fit import fit
from batchlane.pdf.split import open_chunk, open_pdf, plan_chunks
from batchlane_dev import doc_metrics
from batchlane_dev.local.bedrock.model import page_markdown
from batchlane_dev.local.outputs import write_job_outputs

ROOT = Path(__file__).resolve().parents[2]
CORPUS_DIR = ROOT / "tests" / "corpus"
PAGES_PER_CHUNK = 50
MAX_PAGES = 10_000


@dataclass(frozen=True)
class Document:
    """A corpus PDF: where it comes from, under which licence, and whether it is built from another one."""

    name: str
    file: str  # under tests/corpus/, or an absolute path of a document only this machine has
    source: str
    licence: str
    bound: int = 1  # the file bound this many times into one volume (built at run time with pypdf)

    def path(self, workdir: Path) -> Path:
        base = Path(self.file) if Path(self.file).is_absolute() else CORPUS_DIR / self.file
        return bind(base, self.bound, workdir) if self.bound > 1 else base

    def available(self) -> bool:
        return (Path(self.file) if Path(self.file).is_absolute() else CORPUS_DIR / self.file).exists()


# Committed under tests/corpus/ (tests/corpus/README.md says where each comes from and its licence).
COMMITTED = (
    Document("geotopo", "GeoTopo-komprimiert.pdf", "py-pdf/sample-files 009-pdflatex-geotopo (Martin Thoma), pdflatex, 117 pages", "CC BY-SA 4.0"),
    Document("geotopo-bound-6x", "GeoTopo-komprimiert.pdf", "the same book bound six times with pypdf (702 pages)", "CC BY-SA 4.0", bound=6),
    Document("libtasn1", "libtasn1.pdf", "Debian libtasn1-doc 4.19.0, Texinfo, 36 pages", "GNU FDL 1.3"),
    Document("multicolumn", "multicolumn.pdf", "py-pdf/sample-files 026-latex-multicolumn, pdflatex, 3 pages", "CC BY-SA 4.0"),
    Document("book-headings", "book-headings.pdf", "LaTeX book class, \\pagestyle{headings}, twoside (latex/build.py)", "LPPL (kantlipsum)"),
    Document("twocolumn-paper", "twocolumn-paper.pdf", "LaTeX two-column article, fancyhdr head and foot (latex/build.py)", "LPPL (lipsum)"),
    Document("longtable-report", "longtable-report.pdf", "LaTeX report, longtable over pages, \\pagestyle{headings} (latex/build.py)", "LPPL (kantlipsum)"),
)
# Read from where this machine has them (not committed: licences of their own); the bench uses them when present.
LOCAL = (
    Document("docling-redp5110", "/work/corpus/docling-project+docling/tests/data/pdf/sources/redp5110_sampled.pdf", "docling tests: an IBM Redbook, sampled", "IBM"),
    Document("docling-amt-handbook", "/work/corpus/docling-project+docling/tests/data/pdf/sources/amt_handbook_sample.pdf", "docling tests: FAA handbook sample", "US government work"),
    Document("docling-normal-4pages", "/work/corpus/docling-project+docling/tests/data/pdf/sources/normal_4pages.pdf", "docling tests: a two-column paper", "arXiv"),
    Document("docling-multi-page", "/work/corpus/docling-project+docling/tests/data/pdf/sources/multi_page.pdf", "docling tests: a multi-page document", "docling"),
    Document("shared-mime-info-spec", "/usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf", "Debian shared-mime-info, DocBook", "GPL"),
    Document("lm-info", "/usr/share/doc/fonts-lmodern/lm-info.pdf", "Debian fonts-lmodern, LaTeX", "GUST Font License"),
)
BY_NAME = {d.name: d for d in COMMITTED + LOCAL}
TARGETS = {
    "text_kept_pct": 99.5,  # at least
    "own_page_pct": 99.0,  # at least
    "pages_moved": 0,
    "bare_numbers": 0,
    "figure_files_missing": 0,
    "figure_files_blank": 0,
    "furniture_left_pct": 2.0,  # at most, of the pages with furniture
}


def bind(pdf: Path, times: int, workdir: Path) -> Path:
    """``pdf`` bound ``times`` times into one volume (pypdf), written once into ``workdir``."""
    from pypdf import PdfWriter

    target = workdir / f"{pdf.stem}-bound-{times}x.pdf"
    if not target.exists():
        writer = PdfWriter()
        for _ in range(times):
            writer.append(str(pdf))
        with target.open("wb") as stream:
            writer.write(stream)
    return target


@dataclass
class MemoryBucket:
    """The deployment's bucket, in memory: what Assemble reads and writes (ports.ObjectStore, the parts it uses)."""

    bucket: str = "corpus"
    objects: dict[str, bytes] = field(default_factory=dict)

    def put_bytes(self, key: str, data: bytes, content_type: str = "") -> None:
        self.objects[key] = data

    def put_stream(self, key: str, chunks: Iterator[bytes], content_type: str = "") -> None:
        self.objects[key] = b"".join(chunks)

    def get_bytes(self, key: str) -> bytes:
        if key not in self.objects:
            raise NotFound(key)
        return self.objects[key]

    def put_json(self, key: str, value: Any) -> None:
        self.objects[key] = json.dumps(value).encode()

    def get_json(self, key: str) -> Any:
        return json.loads(self.get_bytes(key))

    def download_to(self, key: str, path: Path, *, max_bytes: int | None = None) -> int:
        path.write_bytes(self.get_bytes(key))
        return path.stat().st_size

    def list_keys(self, prefix: str) -> list[str]:
        return sorted(k for k in self.objects if k.startswith(prefix))


def emulated_page(page: Any) -> PageResult:
    """One page as the offline stack's model answers it (a PDF document block: visual)."""
    if page.blank:
        return PageResult(page.number, "blank")
    if page.failure:
        return PageResult(page.number, "failed", reason=page.failure)
    return PageResult(page.number, "converted", page_markdown(page.pdf_bytes, visual=True), served_by="on_demand")


def emulated_results(pdf: Path) -> list[PageResult]:
    """Every page of ``pdf`` as the offline model answers it, split and fitted as the chunk processor sends it."""
    store = MemoryBucket()
    document = open_pdf(pdf.read_bytes(), max_pages=MAX_PAGES)
    spans = plan_chunks(document.page_count, PAGES_PER_CHUNK)
    store_chunk_sources(store, "pages", document, spans)  # type: ignore[arg-type]
    return [emulated_page(fit(page)) for span in spans for page in open_chunk(store.get_bytes(keys.chunk_source_key("pages", span.index)), span).pages(span)]


def convert_offline(pdf: Path, markdown: Path, *, results: list[PageResult] | None = None, figures: bool = True) -> dict[str, Any]:
    """``pdf`` → ``markdown`` with pages.jsonl and figures beside it, by the product's split and Assemble code.

    ``results``: the pages' answers when they are known already (a volume bound of one book's pages answers as the
    book does, page for page: the emulator reads only the page); ``figures=False`` leaves the figures as descriptions.
    """
    store = MemoryBucket()
    job_id = str(uuid.uuid4())
    document = open_pdf(pdf.read_bytes(), max_pages=MAX_PAGES)
    spans = plan_chunks(document.page_count, PAGES_PER_CHUNK)
    store_chunk_sources(store, job_id, document, spans)  # type: ignore[arg-type]
    result_keys: list[str | None] = []
    for span in spans:
        if results is not None:
            chunk = [PageResult.from_json({**r.to_json(), "page": n}) for n, r in zip(range(span.first_page, span.last_page + 1), results[span.first_page - 1 : span.last_page], strict=True)]
        else:
            chunk = [emulated_page(fit(page)) for page in open_chunk(store.get_bytes(keys.chunk_source_key(job_id, span.index)), span).pages(span)]
        key = keys.chunk_result_key(job_id, span.index)
        store.put_json(key, {"jobId": job_id, "chunkIndex": span.index, "pages": [r.to_json() for r in chunk]})
        result_keys.append(key)
    found = Figures()
    if figures:
        regions = described_regions(read_results(store, result_keys))  # type: ignore[arg-type]
        found = extract_figures(store, job_id, [(s.index, s.first_page, s.last_page) for s in spans], regions=regions)  # type: ignore[arg-type]
    write_document(
        store,  # type: ignore[arg-type]
        job_id,
        result_keys,
        {},
        document.page_count,
        figures=found,
        figure_folder=figure_folder(pdf.name),
        figures_skipped=found.skipped,
    )
    return write_job_outputs(store, job_id, keys.markdown_key(job_id), pdf.name, markdown)


def measure(pdf: Path, markdown: Path, *, lines: list[list[str]] | None = None) -> dict[str, Any]:
    """doc_metrics.py's figures, with the share of furniture left and :func:`edge_furniture_left` beside them.
    ``lines``: the PDF's text layer as doc_metrics reads it, when it is known already."""
    with _quiet():
        lines = lines if lines is not None else doc_metrics.page_lines(pdf)
        reader = doc_metrics.page_lines
        doc_metrics.page_lines = lambda _: lines  # type: ignore[assignment,misc]  # read once: measure reads it too
        try:
            result = doc_metrics.measure(pdf, markdown)
        finally:
            doc_metrics.page_lines = reader  # type: ignore[assignment,misc]
        result["furniture_left_pct"] = round(100 * result["furniture_left"] / result["pages_with_furniture"], 2) if result["pages_with_furniture"] else 0.0
        result["furniture_left_at_edges"] = edge_furniture_left(lines, markdown)
        result["bare_number_pages"] = bare_number_pages(markdown)
    return result


def edge_furniture_left(lines: list[list[str]], markdown: Path) -> list[int]:
    """The pages whose Markdown section still opens or ends with a running head or foot doc_metrics finds.

    doc_metrics also counts a short paragraph anywhere in the section that holds the head's words (its
    ``furniture_left``): on a book whose running title is the section's name, that counts the section's own
    heading ("### 1.2 Metrische Räume" under the head "7 1.2. METRISCHE RÄUME") and sentences opening with the
    name ("Überlagerungen sind surjektiv."). This count keeps the same test for the section's first and last
    paragraphs only: where a head or foot the pass left would stand.
    """
    furniture = doc_metrics.furniture(lines)
    sections = doc_metrics.sections(markdown.read_text(encoding="utf-8"))
    left = []
    for number, heads in enumerate(furniture, start=1):
        paragraphs = doc_metrics.paragraphs(sections.get(number, ""))
        edges = {doc_metrics.letters(p) for p in paragraphs[:1] + paragraphs[-1:]}
        if any(doc_metrics.letters(h) and any(doc_metrics.letters(h) in e and len(e) <= len(doc_metrics.letters(h)) + 40 for e in edges) for h in heads):
            left.append(number)
    return left


def bare_number_pages(markdown: Path) -> list[int]:
    """The pages doc_metrics counts in ``bare_numbers`` (a first or last paragraph that is only a number), by number."""
    import re

    out = []
    for number, section in doc_metrics.sections(markdown.read_text(encoding="utf-8")).items():
        paragraphs = doc_metrics.paragraphs(section)
        edges = paragraphs[:1] + (paragraphs[-1:] if len(paragraphs) > 1 else [])
        if any(re.fullmatch(r"[-–—\s]*\d{1,4}[-–—\s]*", p) for p in edges):
            out.append(number)
    return out


def missed_targets(result: dict[str, Any]) -> list[str]:
    """Each target (TARGETS) the figures miss, as ``name value`` (furniture by :func:`edge_furniture_left`)."""
    missed = []
    for name in ("text_kept_pct", "own_page_pct"):
        if result[name] is not None and result[name] < TARGETS[name]:
            missed.append(f"{name} {result[name]}")
    for name in ("pages_moved", "bare_numbers", "figure_files_missing", "figure_files_blank"):
        if result[name] > TARGETS[name]:
            missed.append(f"{name} {result[name]}")
    edge_pct = 100 * len(result["furniture_left_at_edges"]) / result["pages_with_furniture"] if result["pages_with_furniture"] else 0.0
    if edge_pct > TARGETS["furniture_left_pct"]:
        missed.append(f"furniture_left_at_edges {result['furniture_left_at_edges'][:12]} ({edge_pct:.1f} %)")
    return missed


class _quiet:
    """pypdf's warnings about fonts (fontTools not installed) are noise here."""

    def __enter__(self) -> None:
        import logging

        self._level = logging.getLogger("pypdf").level
        logging.getLogger("pypdf").setLevel(logging.ERROR)

    def __exit__(self, *exc: object) -> None:
        import logging

        logging.getLogger("pypdf").setLevel(self._level)


def main(argv: list[str]) -> int:
    """``python -m batchlane_dev.corpus OUT_DIR [NAME ...]``: convert and measure, one JSON line per document."""
    import tempfile

    out = Path(argv[0]) if argv else Path(tempfile.mkdtemp(prefix="corpus-"))
    names = argv[1:] or [d.name for d in COMMITTED + LOCAL if d.available()]
    out.mkdir(parents=True, exist_ok=True)
    for name in names:
        document = BY_NAME[name]
        pdf = document.path(out)
        markdown = out / name / f"{pdf.stem}.md"
        with _quiet():
            convert_offline(pdf, markdown)
        result = measure(pdf, markdown)
        print(json.dumps({"document": name, **result, "missed": missed_targets(result)}), flush=True)
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))


