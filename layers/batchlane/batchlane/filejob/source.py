"""Chunk sources: job creation splits the PDF into one PDF per chunk; every later stage opens its own.

The chunk processor and the batch lane's prepare both page through
:func:`chunk_pages`, so their page numbers and record ids cannot disagree.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from batchlane import keys
from batchlane.claude.figure import FigureSource
from batchlane.domain.describe import Described, figure_index
from batchlane.formats.document import ConvertedDocument, Section
from batchlane.formats.pictures_to_describe import SizedFigure
from batchlane.pdf.fit import fit
from batchlane.pdf.page_image import PageImage
from batchlane.pdf.split import ChunkSpan, Page, PdfDocument, open_chunk
from batchlane.ports import ObjectStore
from batchlane.rows import ChunkRow


def store_chunk_sources(store: ObjectStore, job_id: str, document: PdfDocument, spans: list[ChunkSpan]) -> dict[int, int]:
    """One PDF per chunk; returns each chunk's size in bytes (the packer sizes lanes by it). If any chunk
    cannot be written (a page pdfium cannot load, a store error), the chunks already written are deleted
    before the error goes on: a failed split leaves nothing."""
    written: list[str] = []
    sizes: dict[int, int] = {}
    try:
        for span in spans:
            key = keys.chunk_source_key(job_id, span.index)
            written.append(key)  # before the put: a put that fails midway may still have landed
            data = document.chunk_pdf(span)
            store.put_bytes(key, data, "application/pdf")
            sizes[span.index] = len(data)
    except Exception:
        store.delete_keys(written)
        raise
    return sizes


def span_of(chunk_row: ChunkRow) -> ChunkSpan:
    return ChunkSpan(chunk_row.chunk_index, chunk_row.first_page, chunk_row.last_page)


def chunk_pages(store: ObjectStore, job_id: str, chunk_row: ChunkRow, *, render: bool = True) -> Iterator[Page]:
    """The chunk's pages as they will be sent: a page over the size limit comes reduced, or marked
    PAGE_TOO_LARGE (:func:`batchlane.pdf.fit.fit`), the same way for both lanes."""
    span = span_of(chunk_row)
    return (fit(page, render=render) for page in open_chunk(store.get_bytes(keys.chunk_source_key(job_id, span.index)), span).pages(span))


def store_document_sources(
    store: ObjectStore, job_id: str, document: ConvertedDocument, spans: list[ChunkSpan], *, folder: str = "", sized: Mapping[str, SizedFigure] | None = None
) -> dict[int, int]:
    """A born-digital document's chunks (its pages' Markdown, JSON) and its figure files under the job's images;
    returns each chunk's size. With ``sized`` (describeFigures) each picture as it will be sent is stored too and
    listed under its page (``describe``), and a chunk's size is what its records carry. Like
    :func:`store_chunk_sources`, a failed write leaves nothing behind."""
    written: list[str] = []
    sizes: dict[int, int] = {}
    sized = sized or {}
    try:
        for section in document.sections:
            for figure in section.figures:
                key = keys.images_prefix(job_id) + figure.name
                written.append(key)
                store.put_bytes(key, figure.path.read_bytes(), figure.media_type)
        sent_bytes: dict[str, int] = {}
        for sent in sized.values():
            if sent.path is not None:
                key = keys.figure_source_key(job_id, sent.sent_name)
                written.append(key)
                data = sent.path.read_bytes()
                store.put_bytes(key, data, sent.media_type)
                sent_bytes[sent.name] = len(data)
        for span in spans:
            pages = [_page_entry(job_id, s, sized) for s in document.sections[span.first_page - 1 : span.last_page]]
            data = json.dumps(
                {"fileType": document.file_type, "converter": document.converter, "folder": folder, "pages": pages}, ensure_ascii=False
            ).encode()
            key = keys.document_chunk_key(job_id, span.index)
            written.append(key)
            store.put_bytes(key, data, "application/json")
            sizes[span.index] = len(data) + sum(sent_bytes.get(f.name, 0) for s in document.sections[span.first_page - 1 : span.last_page] for f in s.figures)
    except Exception:
        store.delete_keys(written)
        raise
    return sizes


def _page_entry(job_id: str, section: Section, sized: Mapping[str, SizedFigure]) -> dict[str, Any]:
    entry: dict[str, Any] = {"page": section.number, "title": section.title, "markdown": section.markdown, "figures": [f.name for f in section.figures]}
    if sized:  # describeFigures: each picture to send (its stored image) or why it is not sent
        entry["describe"] = [
            {"name": f.name, "skipped": f.skipped}
            if f.path is None
            else {"name": f.name, "key": keys.figure_source_key(job_id, f.sent_name), "mediaType": f.media_type, "width": f.width, "height": f.height}
            for f in (sized[figure.name] for figure in section.figures if figure.name in sized)
        ]
    return entry


def document_pages(store: ObjectStore, job_id: str, chunk_row: ChunkRow) -> tuple[str, list[tuple[int, str]]]:
    """A born-digital chunk's converter and its pages (number, Markdown), as the split converted them."""
    data = store.get_json(keys.document_chunk_key(job_id, chunk_row.chunk_index))
    return str(data.get("converter") or "converter"), [(int(p["page"]), str(p["markdown"])) for p in data["pages"]]


def document_figures(store: ObjectStore, job_id: str, chunk_row: ChunkRow) -> tuple[str, list[FigureSource], dict[str, Described]]:
    """A born-digital chunk's pictures to describe (describeFigures): the Markdown's figure folder, each picture
    stored at the split with its image (in page order), and the pictures never sent with why (their alt text says it)."""
    data = store.get_json(keys.document_chunk_key(job_id, chunk_row.chunk_index))
    figures: list[FigureSource] = []
    skipped: dict[str, Described] = {}
    for page in data["pages"]:
        for entry in page.get("describe") or []:
            name = str(entry["name"])
            if entry.get("skipped"):
                skipped[name] = Described("skipped", reason=str(entry["skipped"]))
                continue
            image = PageImage(store.get_bytes(str(entry["key"])), str(entry["mediaType"]), int(entry["width"]), int(entry["height"]), "")
            figures.append(FigureSource(chunk_row.chunk_index, int(page["page"]), name, figure_index(name), image))
    return str(data.get("folder") or ""), figures, skipped
