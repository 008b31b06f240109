"""A job's results on the local disk as `batchlane demo` writes them (issue 39.4): the Markdown, pages.jsonl beside
it, and every figure it links where the link points (devtools/batchlane_dev/local/outputs.py)."""

from __future__ import annotations

import re

from batchlane import keys
from batchlane_dev.local.outputs import pages_path, write_job_outputs
from tests.unit.usecases.usecase_fakes import MemoryStore


def test_the_markdown_its_pages_jsonl_and_its_figures_land_beside_each_other(tmp_path) -> None:  # type: ignore[no-untyped-def]
    store = MemoryStore()
    store.put_bytes(keys.markdown_key("j1"), b"<!-- Page 1 -->\n\n![a torus](GeoTopo.images/p1-1.png)\n")
    store.put_bytes(keys.pages_key("j1"), b'{"page": 1}\n')
    store.put_bytes(keys.images_prefix("j1") + "p1-1.png", b"\x89PNG torus")

    written = write_job_outputs(store, "j1", keys.markdown_key("j1"), "GeoTopo.pdf", tmp_path / "out" / "GeoTopo.md")

    markdown = tmp_path / "out" / "GeoTopo.md"
    [link] = re.findall(r"\]\(([^)]+)\)", markdown.read_text())
    assert (markdown.parent / link).read_bytes() == b"\x89PNG torus"
    assert pages_path(markdown) == tmp_path / "out" / "GeoTopo.pages.jsonl" and pages_path(markdown).read_text() == '{"page": 1}\n'
    assert written == {"markdownPath": str(markdown), "pagesPath": str(pages_path(markdown)), "imagePaths": [str(markdown.parent / link)]}
