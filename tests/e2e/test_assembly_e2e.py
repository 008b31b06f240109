"""A typeset book through both lanes on the offline stack: one document, its per-page record beside it."""

from __future__ import annotations

import io
import json
import re
import urllib.request

import pytest
from PIL import Image

from batchlane import keys
from batchlane.api import results
from batchlane.runtime import services
from batchlane_dev.local.bookgen import BOOK_TITLE, make_book_pdf
from batchlane_dev.local.jobs import submit_pdf, wait_for_job

MARKER = re.compile(r"<!-- Page \d+ -->")
FIGURE_LINK = re.compile(r"!\[[^\]]*\]\([^)]*\)")


@pytest.mark.parametrize("lane", ["batch", "on-demand"])
def test_a_book_converts_to_one_document_in_both_lanes(stack_factory, lane):
    book = make_book_pdf(figures=True)
    stack_factory(
        "time_scale=36000,job_hours=0.5",
        batch_lane=lane == "batch",
        extra_env={"BATCH_CONVERSION_MIN_PAGES": "1", "BATCH_CONVERSION_MIN_RECORDS": "1", "BATCHLANE_PAGES_PER_CHUNK": "8"},
    )
    svc = services()
    job_id = submit_pdf(svc, book.pdf, name="book.pdf", owner_id="reader")["jobId"]
    raw_id = submit_pdf(svc, book.pdf, name="book.pdf", owner_id="reader", options={"assembly": "none"})["jobId"]
    for jid in (job_id, raw_id):
        assert wait_for_job(svc, jid, timeout_s=300).status == "completed"
    markdown = svc.store.get_bytes(keys.markdown_key(job_id)).decode()

    # Furniture gone, the title page's title kept once; no folio stands alone.
    blocks = [b.strip().lstrip("#").strip() for b in markdown.split("\n\n")]
    assert not [b for b in blocks if b in book.heads and b != BOOK_TITLE] and blocks.count(BOOK_TITLE) == 1
    assert not [b for b in blocks if b.isdigit()]
    # Every body word once, in order; paragraphs cut by a page break carry the marker inline; hyphens rejoined.
    body = FIGURE_LINK.sub(" ", markdown[markdown.index("<!-- Page 3 -->") :])
    assert MARKER.sub(" ", body).replace("#", " ").split() == book.body_words
    assert len(re.findall(r"\w <!-- Page \d+ --> \w", markdown)) >= len(book.cut_pages) - 2
    assert not [w for w in book.cut_words if f"{w[:3]}-" in markdown]

    # Figures are files beside the Markdown, linked with the model's description; the banner on every page is none.
    links = re.findall(r"!\[([^\]]*)\]\(book\.images/(p(\d+)-1\.png)\)", markdown)
    assert sorted(int(n) for _, _, n in links) == book.figure_pages and all(alt.startswith("320×200") for alt, _, _ in links)
    assert "*[Figure:" not in markdown
    images = svc.store.list_keys(keys.images_prefix(job_id))
    assert sorted(k.rsplit("/", 1)[1] for k in images) == sorted(name for _, name, _ in links)
    assert Image.open(io.BytesIO(svc.store.get_bytes(images[0]))).size == (320, 200)

    # The download lists each figure file as the Markdown names it, with a URL that fetches it.
    answer = results.markdown_download(svc, svc.downloads(), "reader", job_id)
    assert sorted(i["fileName"] for i in answer["images"]) == sorted(f"book.images/{name}" for _, name, _ in links)
    with urllib.request.urlopen(answer["images"][0]["url"], timeout=30) as response:
        assert Image.open(io.BytesIO(response.read())).size == (320, 200)
    assert answer["pages"]["fileName"] == "book.pages.jsonl"

    # The per-page record: a line per page, its lane, tokens and its own Markdown before assembly.
    lines = [json.loads(line) for line in svc.store.get_bytes(keys.pages_key(job_id)).decode().splitlines()]
    assert [line["page"] for line in lines] == list(range(1, book.pages + 1))
    assert {line["status"] for line in lines} == {"converted"}
    assert {line["lane"] for line in lines} == {"batch" if lane == "batch" else "on_demand"}
    assert all(line["inputTokens"] > 0 and line["outputTokens"] > 0 for line in lines)
    assert any(line["markdown"].startswith("## Chapter 1. Introduction") for line in lines), "the page's own Markdown, heads and all"
    assert [line["page"] for line in lines if line["figures"]] == book.figure_pages
    assert lines[3]["figures"][0]["src"] == "book.images/p4-1.png" and lines[3]["figures"][0]["width"] == 320

    # assembly: none keeps the page-by-page output.
    raw = svc.store.get_bytes(keys.markdown_key(raw_id)).decode()
    assert "## Chapter 1. Introduction" in raw and re.search(r"\n\n1\n\n", raw)
    assert raw.startswith("<!-- Page 1 -->\n\nA Short Book on Assembly\n\n<!-- Page 2 -->")
