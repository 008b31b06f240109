"""DOCX, ODT, EPUB and HTML → pages of Markdown through pandoc's document model (its JSON AST).

pandoc reads the file into its AST (headings, lists, tables, footnotes, links and equations as TeX); we cut
the top-level blocks into pages at the document's highest heading level, give each page's pictures their
figure names (the bytes come from the container itself: pandoc runs sandboxed and writes nothing), and
pandoc writes all pages at once as CommonMark with pandoc's extensions (pipe tables, ``$…$`` math, footnotes
kept beside their paragraph), split again at markers it passes through untouched.
"""

from __future__ import annotations

import base64
import binascii
import json
import posixpath
import urllib.parse
import zipfile
from pathlib import Path
from typing import Any

from batchlane.domain.errors import InputError
from batchlane.formats import guard
from batchlane.formats.document import ConvertedDocument, FigureFile, Section, figure_name, media_type
from batchlane.formats.pandoc import PandocFailed, ast_nodes, run_pandoc

READERS = {"docx": "docx", "odt": "odt", "epub": "epub", "html": "html"}
WRITER = "commonmark_x"
_MARK = "<!--batchlane-page-break-->"
Ast = dict[str, Any]
Block = dict[str, Any]


def convert_with_pandoc(path: Path, file_type: str, *, folder: str, scratch: Path, max_pages: int, seconds: float, memory_mb: int) -> ConvertedDocument:
    """The document's pages; InputError DOCUMENT_TOO_COMPLEX (bounds), DOCUMENT_CORRUPT, DOCUMENT_TOO_MANY_PAGES."""
    container = guard.zip_members(path) if file_type != "html" else None
    if container is None:
        with path.open("rb") as page:
            if guard.declares_entities(page.read(guard.DECLARATION_HEAD_BYTES)):
                raise guard.too_complex("The page declares XML entities (a billion-laughs pattern): refused.")
    ast = _pandoc_json(["-f", READERS[file_type], "-t", "json", str(path)], seconds=seconds, memory_mb=memory_mb)
    pages = split_pages(flatten_divs(ast["blocks"]))
    if len(pages) > max_pages:
        raise InputError(f"The document has {len(pages)} sections; the limit is {max_pages} pages.", error_id="DOCUMENT_TOO_MANY_PAGES")
    media = _Media(path, container)
    figures: list[list[FigureFile]] = []
    for number, blocks in enumerate(pages, start=1):
        figures.append(_name_figures(blocks, number, folder, media, scratch))
    body = [block for k, blocks in enumerate(pages) for block in ([{"t": "RawBlock", "c": ["html", _MARK]}] if k else []) + blocks]
    written = run_pandoc(
        ["-f", "json", "-t", f"{WRITER}-attributes-smart", "--wrap=none", "--reference-location=block"],
        stdin=json.dumps({**ast, "blocks": body}).encode(),
        seconds=seconds,
        memory_mb=memory_mb,
    ).decode("utf-8")
    texts = [part.strip("\n") + "\n" for part in written.split(_MARK)]
    if len(texts) != len(pages):
        raise guard.corrupt("The document's pages could not be told apart after conversion.")
    sections = tuple(Section(n, _title(blocks), text, tuple(figs)) for n, (blocks, text, figs) in enumerate(zip(pages, texts, figures, strict=True), start=1))
    return ConvertedDocument(file_type, "pandoc", sections)


def _pandoc_json(args: list[str], *, seconds: float, memory_mb: int) -> Ast:
    try:
        out = run_pandoc(args, seconds=seconds, memory_mb=memory_mb)
    except PandocFailed as exc:
        if exc.reason in ("deadline", "memory"):
            raise guard.too_complex(f"The document is too large or complex to convert within the bounds ({exc.reason}).") from exc
        raise guard.corrupt() from exc
    try:
        ast: Ast = json.loads(out)
    except ValueError as exc:
        raise guard.corrupt() from exc
    return ast


def flatten_divs(blocks: list[Block]) -> list[Block]:
    """Top-level ``Div`` wrappers (an EPUB's chapter files, an HTML page's ``<div>``/``<section>``s) opened, so their
    headings stand at the top level where pages are cut, and the writer emits no ``:::`` fences for them."""
    out: list[Block] = []
    stack = list(reversed(blocks))
    while stack:
        block = stack.pop()
        if block.get("t") == "Div":
            stack.extend(reversed(block["c"][1]))
        else:
            out.append(block)
    return out


def split_pages(blocks: list[Block]) -> list[list[Block]]:
    """Top-level blocks cut before each heading of the highest level present (what comes before the first is
    the first page); a document with no heading, or an empty one, is one page."""
    levels = [b["c"][0] for b in blocks if b.get("t") == "Header"]
    if not levels:
        return [blocks]
    top = min(levels)
    pages: list[list[Block]] = [[]]
    for block in blocks:
        if block.get("t") == "Header" and block["c"][0] == top and pages[-1]:
            pages.append([])
        pages[-1].append(block)
    return pages


def _title(blocks: list[Block]) -> str | None:
    for block in blocks:
        if block.get("t") == "Header":
            return _plain(block["c"][2])
    return None


def _plain(inlines: Any) -> str:
    out: list[str] = []
    for node in ast_nodes(inlines):
        if node.get("t") == "Str":
            out.append(node["c"])
        elif node.get("t") in ("Space", "SoftBreak", "LineBreak"):
            out.append(" ")
    return "".join(out).strip()


class _Media:
    """The pictures a document carries: members of its container (resolved like pandoc's own paths), or data: URIs."""

    def __init__(self, path: Path, members: list[zipfile.ZipInfo] | None) -> None:
        self._path = path
        self._members = {m.filename: m for m in members or [] if not m.is_dir()}

    def read(self, src: str) -> tuple[str, bytes] | None:
        """(a name with its extension, bytes) for ``src``, or None (a remote or missing picture: the link stays)."""
        if src.startswith("data:"):
            return _data_uri(src)
        if not self._members or "://" in src:
            return None
        wanted = posixpath.normpath(urllib.parse.unquote(src)).lstrip("./")
        info = self._members.get(wanted) or next((m for name, m in self._members.items() if name.endswith("/" + wanted)), None)
        if info is None:
            return None
        with zipfile.ZipFile(self._path) as archive:
            return info.filename, guard.read_member(archive, info)


def _data_uri(src: str) -> tuple[str, bytes] | None:
    head, _, data = src.partition(",")
    if ";base64" not in head:
        return None
    kind = head[5:].split(";")[0]
    ext = {"image/png": ".png", "image/jpeg": ".jpg", "image/gif": ".gif", "image/svg+xml": ".svg", "image/webp": ".webp"}.get(kind)
    if ext is None:
        return None
    try:
        return f"inline{ext}", base64.b64decode(data, validate=False)
    except (binascii.Error, ValueError):
        return None


def _name_figures(blocks: list[Block], page: int, folder: str, media: _Media, scratch: Path) -> list[FigureFile]:
    """Give this page's embedded pictures their figure names (in reading order) and write them to ``scratch``;
    image attributes (sizes in inches) are dropped, a captioned figure becomes its picture and its caption."""
    _unwrap_figures(blocks)
    figures: list[FigureFile] = []
    for node in ast_nodes(blocks):
        if node.get("t") != "Image":
            continue
        attr, _alt, target = node["c"]
        found = media.read(target[0])
        attr[1].clear()
        attr[2].clear()
        if found is None:
            continue
        name = figure_name(page, len(figures) + 1, found[0])
        out = scratch / name
        out.write_bytes(found[1])
        figures.append(FigureFile(name, out, media_type(name)))
        target[0] = f"{folder}/{name}"
    return figures


def _unwrap_figures(node: Any) -> None:
    """``Figure`` blocks (pandoc >= 3), wherever they stand, → their content then their caption as a paragraph:
    the writer then gives a plain ``![alt](src)``, not an HTML ``<figure>``."""
    if isinstance(node, dict):
        for value in node.values():
            _unwrap_figures(value)
    elif isinstance(node, list):
        out: list[Any] = []
        for item in node:
            _unwrap_figures(item)
            if isinstance(item, dict) and item.get("t") == "Figure":
                _attr, caption, content = item["c"]
                out.extend(content + [{"t": "Para", "c": b["c"]} if b.get("t") == "Plain" else b for b in caption[1]])
            else:
                out.append(item)
        node[:] = out
