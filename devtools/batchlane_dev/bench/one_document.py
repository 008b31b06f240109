"""one_document: how well each corpus PDF reads as one document, ours on the offline stack beside a peer's (issue 39).

Every document of the corpus (tests/corpus/README.md; the docling and Debian PDFs too where this machine has them)
is converted on one offline stack, as `batchlane demo --pdf` converts it (on-demand: the same emulated model
answers either lane), and its Markdown, pages.jsonl and figures written beside each other; the peer,
pymupdf4llm 1.28.2 (bench-only: requirements-bench.lock), converts the same PDF in the same run, a page a chunk,
each page under the same ``<!-- Page N -->`` marker so doc_metrics reads both alike, its images written as files.
Both are measured by doc_metrics.py (devtools/batchlane_dev/doc_metrics.py, vendored unchanged).

One JSON object per document: ``value`` is our share of the pages with furniture that keep some (doc_metrics'
``furniture_left`` over ``pages_with_furniture``, %), ``baseline`` the peer's; ``ours`` and ``peer`` carry every
figure, ``missed`` the targets ours misses (corpus.missed_targets), ``content`` the pages doc_metrics flags that
hold content (tests/integration/test_one_document_corpus.py names them). ``--quick`` leaves out the volume bound six
times and the documents not committed; ``--smoke`` measures the 3-page multicolumn.pdf only.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from batchlane_dev import corpus
from batchlane_dev.bench import figure, size

NAMES = ("one_document",)
PEER = "pymupdf4llm 1.28.2"
# Without requirements-bench.lock (`make test`'s smoke run of every figure): the PDF's own text layer, page by page.
FALLBACK_PEER = "pypdf's text layer, page by page (pymupdf4llm is not installed: `make bench` installs it)"
_FALLBACK_SCRIPT = """
import sys
from pypdf import PdfReader
pdf, out = sys.argv[1], sys.argv[2]
pages = [page.extract_text() or "" for page in PdfReader(pdf).pages]
open(out, "w", encoding="utf-8").write("\\n\\n".join(f"<!-- Page {n} -->\\n\\n{text.strip()}" for n, text in enumerate(pages, start=1)) + "\\n")
"""
_PEER_SCRIPT = """
import json, sys
import pymupdf4llm
pdf, out, images = sys.argv[1], sys.argv[2], sys.argv[3]
pages = pymupdf4llm.to_markdown(pdf, page_chunks=True, write_images=True, image_path=images)
text = "\\n\\n".join(f"<!-- Page {n} -->\\n\\n{page['text'].strip()}" for n, page in enumerate(pages, start=1)) + "\\n"
open(out, "w", encoding="utf-8").write(text)
"""


def _documents(args: Any) -> list[corpus.Document]:
    smoke = [corpus.BY_NAME["multicolumn"]]
    quick = [d for d in corpus.COMMITTED if d.bound == 1]
    full = [*corpus.COMMITTED, *[d for d in corpus.LOCAL if d.available()]]
    return list(size(args, full, quick, smoke))


def peer_name() -> str:
    import importlib.util

    return PEER if importlib.util.find_spec("pymupdf4llm") else FALLBACK_PEER


def _peer(pdf: Path, folder: Path) -> tuple[Path, float]:
    """The peer's Markdown of ``pdf`` in ``folder`` (its images beside it), and its seconds."""
    folder.mkdir(parents=True, exist_ok=True)
    markdown = folder / f"{pdf.stem}.md"
    script = _PEER_SCRIPT if peer_name() == PEER else _FALLBACK_SCRIPT
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", script, str(pdf), str(markdown), f"{pdf.stem}.images"], cwd=folder, check=True, capture_output=True, timeout=3600)
    return markdown, time.perf_counter() - started


def _ours(pdfs: list[tuple[str, Path]], out: Path) -> dict[str, tuple[Path, float, dict[str, Any]]]:
    """Each PDF through one offline stack (on-demand), its outputs written as the demo writes them."""
    from batchlane.runtime import services
    from batchlane_dev.local.jobs import submit_pdf, wait_for_job
    from batchlane_dev.local.outputs import write_job_outputs
    from batchlane_dev.local.stack import OfflineStack, StackOptions

    results = {}
    with tempfile.TemporaryDirectory(prefix="bench-one-document-") as workdir:
        options = StackOptions(workdir=Path(workdir), faults="time_scale=36000", database_url=os.environ.get("DATABASE_URL"), batch_lane=False, log_file=out / "handlers.log")
        with OfflineStack(options):
            svc = services()
            for name, pdf in pdfs:
                started = time.perf_counter()
                job = submit_pdf(svc, pdf.read_bytes(), name=pdf.name, owner_id=f"bench-{name}")
                final = wait_for_job(svc, job["jobId"], timeout_s=3600)
                seconds = time.perf_counter() - started
                row = svc.uow().jobs.get_job(job["jobId"])
                markdown = out / "ours" / name / f"{pdf.stem}.md"
                written = write_job_outputs(svc.store, job["jobId"], row.markdown_key, pdf.name, markdown) if row and row.markdown_key else {}
                results[name] = (markdown, seconds, {"status": final.status, **written})
    return results


def figures(args: Any) -> Iterator[dict[str, Any]]:
    logging.getLogger("batchlane").setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory(prefix="bench-corpus-") as folder:
        out = Path(folder)
        documents = [(d.name, d.path(out)) for d in _documents(args)]
        ours = _ours(documents, out)
        for name, pdf in documents:
            markdown, seconds, job = ours[name]
            mine = corpus.measure(pdf, markdown) if job["status"] == "completed" else {}
            try:
                peer_markdown, peer_seconds = _peer(pdf, out / "peer" / name)
                theirs = corpus.measure(pdf, peer_markdown)
            except subprocess.CalledProcessError as exc:  # the peer could not convert it: say so, measure ours anyway
                peer_seconds, theirs = 0.0, {"error": exc.stderr.decode(errors="replace").strip().splitlines()[-1:], "furniture_left_pct": float("nan")}
            yield figure(
                "one_document",
                mine.get("furniture_left_pct", float("nan")),
                "% of pages with furniture that keep some (doc_metrics furniture_left)",
                theirs["furniture_left_pct"],
                baseline_is=peer_name(),
                document=name,
                pages=mine.get("pages", theirs.get("pages")),
                status=job["status"],
                seconds=round(seconds, 1),
                peer_seconds=round(peer_seconds, 1),
                ours=_shown(mine),
                peer=_shown(theirs),
                missed=corpus.missed_targets(mine) if mine else ["not completed"],
                peer_missed=corpus.missed_targets(theirs) if "error" not in theirs else ["not converted"],
            )


def _shown(result: dict[str, Any]) -> dict[str, Any]:
    keys = (
        "pages_with_furniture",
        "furniture_left",
        "furniture_left_pct",
        "furniture_left_at_edges",
        "bare_numbers",
        "text_kept_pct",
        "own_page_pct",
        "pages_moved",
        "cut_sentences",
        "figure_links",
        "figure_files_missing",
        "figure_files_blank",
    )
    return {key: result[key] for key in (*keys, "error") if key in result}


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--smoke", action="store_true")
    for row in figures(parser.parse_args()):
        print(json.dumps(row), flush=True)
