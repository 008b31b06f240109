"""Outputs on request (issue 43): ``conversionFormats`` renders the assembled Markdown as DOCX and HTML (pandoc,
the job's figures embedded) and as a per-block JSON; a rendering that cannot be produced fails alone with an error
id, never the job; a path in the Markdown is never read into a rendering."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from formatscount import DATA, docx_counts, markdown_counts

from batchlane import keys
from batchlane.domain.errors import InputError
from batchlane.filejob import outputs
from batchlane.filejob.create import normalise_options
from batchlane.formats import render
from batchlane.formats.convert_document import convert_document
from tests.unit.usecases.usecase_fakes import MemoryStore

JOB = "11111111-2222-3333-4444-555555555555"


def _assembled(tmp_path: Path, store: MemoryStore) -> str:
    """word_sample.docx converted as the split does, its pages joined under their markers as Assemble writes them."""
    document = convert_document(DATA / "word_sample.docx", "docx", folder="word_sample.images", scratch=tmp_path, max_pages=100)
    markdown = "".join(f"<!-- Page {s.number} -->\n\n{s.markdown}\n" for s in document.sections)
    store.put_bytes(keys.markdown_key(JOB), markdown.encode(), "text/markdown")
    for section in document.sections:
        for figure in section.figures:
            store.put_bytes(keys.images_prefix(JOB) + figure.name, figure.path.read_bytes(), figure.media_type)
    return markdown


def test_docx_html_and_blocks_are_written_beside_the_markdown(tmp_path: Path) -> None:
    store = MemoryStore()
    markdown = _assembled(tmp_path, store)
    record = outputs.write_renderings(
        store, JOB, {"conversionFormats": {"md": True, "docx": True, "html": True, "json": True}}, figure_folder="word_sample.images", title="word_sample"
    )
    assert {fmt: state["status"] for fmt, state in record.items()} == {"docx": "written", "html": "written", "json": "written"}
    assert store.get_json(keys.outputs_key(JOB)) == record
    rendered = tmp_path / "out.docx"
    rendered.write_bytes(store.get_bytes(keys.rendering_key(JOB, "docx")))
    assert docx_counts(rendered) == docx_counts(DATA / "word_sample.docx") == markdown_counts(markdown)  # the Word file holds what the source held
    html = store.get_bytes(keys.rendering_key(JOB, "html")).decode()
    assert html.count("<table") == 1 and "data:image/png;base64," in html and "<h1" in html  # standalone, its figure embedded
    blocks = [json.loads(line) for line in store.get_bytes(keys.rendering_key(JOB, "json")).decode().splitlines()]
    assert [b["page"] for b in blocks] == sorted(b["page"] for b in blocks) and {b["page"] for b in blocks} == {1, 2}
    assert [(b["kind"], b.get("level"), b["text"]) for b in blocks if b["kind"] == "heading"] == [("heading", 1, "Let’s swim!"), ("heading", 2, "Let’s eat")]
    assert sum(b["kind"] == "table" for b in blocks) == 1 and all(b["markdown"] for b in blocks)


def test_a_path_in_the_markdown_is_never_read_into_a_rendering(tmp_path: Path) -> None:
    secret = tmp_path / "secret.png"
    secret.write_bytes(b"\x89PNG\r\n\x1a\n" + b"SECRET-BYTES" * 50)
    markdown = f"# A page\n\n![x]({secret})\n\n![y](file://{secret})\n\n![z](word_sample.images/../../{secret.name})\n"
    done = render.render_all(markdown, ["docx", "html"], title="t", figure=lambda src: None)
    assert all(r.data is not None for r in done)
    assert all(b"SECRET-BYTES" not in (r.data or b"") and b"U0VDUkVULUJZVEVT" not in (r.data or b"") for r in done)  # nor base64 of it


def test_a_rendering_that_fails_fails_alone_with_its_error_id(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = MemoryStore()
    _assembled(tmp_path, store)
    real = render._written

    def docx_breaks(ast: dict, fmt: str, title: str) -> bytes:  # type: ignore[type-arg]
        if fmt == "docx":
            raise render.PandocFailed("memory", "heap exhausted")
        return real(ast, fmt, title)

    monkeypatch.setattr(render, "_written", docx_breaks)
    record = outputs.write_renderings(store, JOB, {"conversionFormats": {"docx": True, "html": True}}, figure_folder="word_sample.images", title="w")
    assert record["docx"] == {"status": "failed", "error": {"code": "RENDER_TOO_LARGE", "message": "The DOCX rendering could not be produced (memory)."}}
    assert record["html"]["status"] == "written"
    assert keys.rendering_key(JOB, "docx") not in store.list_keys(f"jobs/{JOB}/")  # nothing was written for it


def test_no_rendering_is_made_unless_asked(tmp_path: Path) -> None:
    store = MemoryStore()
    _assembled(tmp_path, store)
    assert outputs.write_renderings(store, JOB, {}, figure_folder="word_sample.images", title="w") == {}
    assert store.list_keys(f"jobs/{JOB}/outputs") == []


@pytest.mark.parametrize(
    ("formats", "error"),
    [({"md": False}, "md cannot be false"), ({"pdf": True}, "unknown format(s) pdf"), ({"docx": "yes"}, "true/false"), (["docx"], "true/false")],
)
def test_conversion_formats_are_checked(formats: object, error: str) -> None:
    with pytest.raises(InputError) as refused:
        normalise_options({"conversionFormats": formats})
    assert refused.value.error_id == "OPTIONS_INVALID" and error in str(refused.value)
    assert normalise_options({"conversionFormats": {"docx": True}})["conversionFormats"] == {"md": True, "docx": True}
