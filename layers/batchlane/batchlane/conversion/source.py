"""Chunk sources: job creation splits the PDF into one PDF per chunk; every later stage opens its own.

The chunk processor and the batch lane's prepare both page through
:func:`chunk_pages`, so their page numbers and record ids cannot disagree.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from batchlane import keys
from batchlane.formats.document import ConvertedDocument
from batchlane.pdf.fit import fit
from batchlane.pdf.split import ChunkSpan, Page, PdfDocument, open_chunk
from batchlane.ports import ChunkRow, ObjectStore


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


def store_document_sources(store: ObjectStore, job_id: str, document: ConvertedDocument, spans: list[ChunkSpan]) -> dict[int, int]:
    """A born-digital document's chunks (its pages' Markdown, JSON) and its figure files under the job's images;
    returns each chunk's size. Like :func:`store_chunk_sources`, a failed write leaves nothing behind."""
    written: list[str] = []
    sizes: dict[int, int] = {}
    try:
        for section in document.sections:
            for figure in section.figures:
                key = keys.images_prefix(job_id) + figure.name
                written.append(key)
                store.put_bytes(key, figure.path.read_bytes(), figure.media_type)
        for span in spans:
            pages = [
                {"page": s.number, "title": s.title, "markdown": s.markdown, "figures": [f.name for f in s.figures]}
                for s in document.sections[span.first_page - 1 : span.last_page]
            ]
            data = json.dumps({"fileType": document.file_type, "converter": document.converter, "pages": pages}, ensure_ascii=False).encode()
            key = keys.document_chunk_key(job_id, span.index)
            written.append(key)
            store.put_bytes(key, data, "application/json")
            sizes[span.index] = len(data)
    except Exception:
        store.delete_keys(written)
        raise
    return sizes


def document_pages(store: ObjectStore, job_id: str, chunk_row: ChunkRow) -> tuple[str, list[tuple[int, str]]]:
    """A born-digital chunk's converter and its pages (number, Markdown), as the split converted them."""
    data = store.get_json(keys.document_chunk_key(job_id, chunk_row.chunk_index))
    return str(data.get("converter") or "converter"), [(int(p["page"]), str(p["markdown"])) for p in data["pages"]]
