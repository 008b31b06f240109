"""Assembly figure: assemble_10000_pages.

* assemble_10000_pages — the document pass at Assemble (filejob.assemble.write_document:
  pages.jsonl and the Markdown, both streamed) over 10,000 pages in 100 chunk results. The pages'
  text is a typeset book's (batchlane_dev.local.bookgen, read by the emulator as the lanes do:
  running heads, folios, paragraphs and words cut by page breaks), repeated with its folios
  renumbered. Baseline: reading the same chunk results alone (every PageResult parsed, nothing
  written) in the same run. Reported: seconds and peak Python memory (tracemalloc) of each, so the
  ratio is what the pass costs over reading; the uploads are consumed and counted, never held.
"""

from __future__ import annotations

import io
import json
import time
import tracemalloc
from collections.abc import Callable, Iterator
from typing import Any

from batchlane_dev.bench import figure, size, wanted

NAMES = ("assemble_10000_pages", "assemble_1000_pages", "assemble_200_pages")  # full, --quick, --smoke


class _CountingStore:
    """Chunk results in memory (read as S3 would answer them); uploads counted and dropped."""

    def __init__(self, objects: dict[str, bytes]) -> None:
        self.objects = objects
        self.written: dict[str, int] = {}

    def get_json(self, key: str) -> Any:
        return json.loads(self.objects[key])

    def put_stream(self, key: str, chunks: Iterator[bytes], content_type: str = "") -> None:
        self.written[key] = sum(len(c) for c in chunks)


def _book_pages() -> list[str]:
    from pypdf import PdfReader, PdfWriter

    from batchlane_dev.local.bedrock.model import page_markdown
    from batchlane_dev.local.bookgen import make_book_pdf

    reader = PdfReader(io.BytesIO(make_book_pdf().pdf))
    out = []
    for page in reader.pages[2:]:  # the body pages, each with its head and folio
        writer = PdfWriter()
        writer.add_page(page)
        data = io.BytesIO()
        writer.write(data)
        out.append(page_markdown(data.getvalue()))
    return out


def _chunk_results(pages: int, per_chunk: int = 100) -> dict[str, bytes]:
    source = _book_pages()
    objects = {}
    for chunk in range(0, pages, per_chunk):
        items = []
        for number in range(chunk + 1, min(pages, chunk + per_chunk) + 1):
            text = source[(number - 1) % len(source)]
            head, _, _ = text.rpartition("\n\n")  # the folio is the page's last block: renumber it
            items.append(
                {"page": number, "status": "converted", "markdown": f"{head}\n\n{number}", "servedBy": "batch", "inputTokens": 1800, "outputTokens": 700}
            )
        objects[f"jobs/bench/chunks/chunk-{chunk // per_chunk}.json"] = json.dumps({"pages": items}).encode()
    return objects


def _drain(items: Iterator[Any]) -> int:
    """Every item read and dropped: what reading alone costs."""
    count = 0
    for _ in items:
        count += 1
    return count


def _measure(run: Callable[[], Any]) -> tuple[float, float]:
    """Seconds (untraced run) and peak MiB allocated (a second, traced run)."""
    started = time.perf_counter()
    run()
    seconds = time.perf_counter() - started
    tracemalloc.start()
    run()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return seconds, peak / (1 << 20)


def _figure(name: str, pages: int) -> dict[str, Any]:
    from batchlane.filejob.assemble import read_results, write_document

    objects = _chunk_results(pages)
    keys = sorted(objects, key=lambda k: int(k.rsplit("-", 1)[1].split(".")[0]))
    store = _CountingStore(objects)
    read_s, read_mib = _measure(lambda: _drain(read_results(store, list(keys))))  # type: ignore[arg-type]
    pass_s, pass_mib = _measure(lambda: write_document(store, "bench", list(keys), {}, pages))  # type: ignore[arg-type]
    return figure(
        name,
        pass_s,
        "s",
        read_s,
        baseline_is="reading the same per-page chunk results alone (every page parsed, nothing written), same run",
        pages=pages,
        peak_mib=round(pass_mib, 2),
        baseline_peak_mib=round(read_mib, 2),
        memory_ratio=round(pass_mib / read_mib, 2) if read_mib else None,
        results_mib=round(sum(map(len, objects.values())) / (1 << 20), 2),
        markdown_mib=round(store.written["jobs/bench/output.md"] / (1 << 20), 2),
        pages_jsonl_mib=round(store.written["jobs/bench/pages.jsonl"] / (1 << 20), 2),
    )


def figures(args: Any) -> Iterator[dict[str, Any]]:
    pages = size(args, 10_000, 1_000, 200)
    name = f"assemble_{pages}_pages"
    if wanted(args, name):
        yield _figure(name, pages)
