"""A born-digital document as converted: its pages (sections), each with its Markdown and its figure files.

What a page is depends on the type (domain/file_types.py ``page_is``): a slide, a sheet, or a top-level
heading section (the whole document when it has no heading). Figures are written to a scratch folder by the
converter (a child process) and named as the Markdown links them: ``<folder>/p<N>-<k>.<ext>``.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from pathlib import Path

MEDIA_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".bmp": "image/bmp",
    ".tif": "image/tiff",
    ".tiff": "image/tiff",
    ".webp": "image/webp",
    ".svg": "image/svg+xml",
    ".emf": "image/emf",
    ".wmf": "image/wmf",
}


@dataclass(frozen=True)
class FigureFile:
    """One picture of a page: its file name under the figure folder, and where the converter wrote it."""

    name: str
    path: Path
    media_type: str


@dataclass(frozen=True)
class Section:
    """One page of a born-digital document."""

    number: int
    title: str | None
    markdown: str
    figures: tuple[FigureFile, ...] = ()


@dataclass(frozen=True)
class ConvertedDocument:
    file_type: str
    converter: str  # e.g. "pandoc 3.9", "python-pptx 1.0.2": the pages.jsonl lane and the dry run say it
    sections: tuple[Section, ...]
    warnings: tuple[str, ...] = field(default=())


def figure_name(page: int, index: int, source_name: str) -> str:
    """``p<page>-<index><ext>``: the extension the picture has in the source (.png when it has none we know)."""
    ext = posixpath.splitext(source_name.lower())[1]
    return f"p{page}-{index}{ext if ext in MEDIA_TYPES else '.png'}"


def media_type(name: str) -> str:
    return MEDIA_TYPES.get(posixpath.splitext(name.lower())[1], "application/octet-stream")
