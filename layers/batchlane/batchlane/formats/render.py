"""Renderings of the assembled document (``conversionFormats``): DOCX and HTML written by pandoc, and the per-block
JSON (a line per block: its page, kind, heading level, plain text and Markdown).

pandoc runs sandboxed: it reads the Markdown from stdin and nothing else. The figures the Markdown links
(``book.images/p3-1.png``, files of the job) are handed to it inline as ``data:`` URIs, so they are embedded in
the DOCX and the HTML; any other image link (a remote one a web page carried, or a path that points at this
machine) is never fetched, and stays a link. Each rendering is its own bounded pandoc run: one that fails
says why with an error id and the others, and the job, go on.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from batchlane.formats.document import media_type
from batchlane.formats.pandoc import PandocFailed, ast_nodes, run_pandoc

FORMATS = ("md", "docx", "html", "json")  # json: the per-block record (pages.jsonl is written for every job)
RENDER_SECONDS = 120.0
RENDER_MEMORY_MB = 1024
READER = "commonmark_x+raw_html"
_MARK = "<!--batchlane-block-break-->"
_PAGE = "<!-- Page "


@dataclass(frozen=True)
class Rendering:
    """One requested output: its bytes, or why it could not be produced."""

    fmt: str
    data: bytes | None = None
    error_id: str | None = None
    message: str | None = None


def requested(options: dict[str, Any]) -> list[str]:
    """The renderings a job asked for besides the Markdown (always written), in a fixed order."""
    wanted = options.get("conversionFormats") or {}
    return [fmt for fmt in FORMATS[1:] if wanted.get(fmt)]


def render_all(markdown: str, formats: list[str], *, title: str, figure: Callable[[str], bytes | None]) -> list[Rendering]:
    """Each of ``formats`` rendered from ``markdown``; ``figure(src)`` → the bytes of a linked figure of the job, or None."""
    out: list[Rendering] = []
    try:
        ast = _ast(markdown)
    except PandocFailed as exc:
        return [Rendering(fmt, error_id="RENDER_FAILED", message=f"The Markdown could not be read for rendering ({exc.reason}).") for fmt in formats]
    for fmt in formats:
        try:
            if fmt == "json":
                data = _blocks_jsonl(ast)
            else:
                data = _written(_with_inline_figures(ast, figure), fmt, title)
        except PandocFailed as exc:
            error_id = "RENDER_TOO_LARGE" if exc.reason in ("deadline", "memory") else "RENDER_FAILED"
            out.append(Rendering(fmt, error_id=error_id, message=f"The {fmt.upper()} rendering could not be produced ({exc.reason})."))
            continue
        out.append(Rendering(fmt, data))
    return out


def _ast(markdown: str) -> dict[str, Any]:
    out = run_pandoc(["-f", READER, "-t", "json"], stdin=markdown.encode("utf-8"), seconds=RENDER_SECONDS, memory_mb=RENDER_MEMORY_MB)
    ast: dict[str, Any] = json.loads(out)
    return ast


def _written(ast: dict[str, Any], fmt: str, title: str) -> bytes:
    args = ["-f", "json", "-t", fmt, "--metadata", f"title={title}", "-o", "-"]
    if fmt == "html":
        args[4:4] = ["--standalone"]
    return run_pandoc(args, stdin=json.dumps(ast).encode(), seconds=RENDER_SECONDS, memory_mb=RENDER_MEMORY_MB)


def _with_inline_figures(ast: dict[str, Any], figure: Callable[[str], bytes | None]) -> dict[str, Any]:
    """A copy whose images of the job's own figures carry their bytes as data: URIs (nothing else is ever read)."""
    copy: dict[str, Any] = json.loads(json.dumps(ast))
    for node in ast_nodes(copy):
        if node.get("t") == "Image":
            target = node["c"][2]
            data = figure(str(target[0]))
            if data is not None:
                target[0] = f"data:{media_type(str(target[0]))};base64,{base64.b64encode(data).decode()}"
    return copy


def _blocks_jsonl(ast: dict[str, Any]) -> bytes:
    """A line per top-level block: its page (from the page markers), kind, heading level, plain text and Markdown."""
    page = 0
    kept: list[tuple[int, dict[str, Any]]] = []
    for block in ast["blocks"]:
        if block.get("t") == "RawBlock" and str(block["c"][1]).startswith(_PAGE):
            digits = "".join(ch for ch in str(block["c"][1])[len(_PAGE) :] if ch.isdigit())
            page = int(digits) if digits else page
            continue
        kept.append((page, block))
    if not kept:
        return b""
    body = [b for k, (_, block) in enumerate(kept) for b in ([{"t": "RawBlock", "c": ["html", _MARK]}] if k else []) + [block]]
    written = run_pandoc(
        ["-f", "json", "-t", "commonmark_x-attributes-smart", "--wrap=none"],
        stdin=json.dumps({**ast, "blocks": body}).encode(),
        seconds=RENDER_SECONDS,
        memory_mb=RENDER_MEMORY_MB,
    ).decode("utf-8")
    texts = [part.strip("\n") for part in written.split(_MARK)]
    if len(texts) != len(kept):  # a block's own Markdown held the marker: say so rather than misalign
        texts = [""] * len(kept)
    lines = []
    for (number, block), markdown in zip(kept, texts, strict=True):
        record = {"page": number, "kind": _KINDS.get(block["t"], block["t"].lower()), "text": _plain(block), "markdown": markdown}
        if block["t"] == "Header":
            record["level"] = block["c"][0]
        lines.append(json.dumps(record, ensure_ascii=False))
    return ("\n".join(lines) + "\n").encode("utf-8")


_KINDS = {
    "Header": "heading",
    "Para": "paragraph",
    "Plain": "paragraph",
    "BulletList": "list",
    "OrderedList": "list",
    "Table": "table",
    "CodeBlock": "code",
    "BlockQuote": "quote",
    "RawBlock": "html",
    "HorizontalRule": "rule",
    "Figure": "figure",
    "Div": "group",
    "DefinitionList": "list",
    "LineBlock": "paragraph",
}


def _plain(block: dict[str, Any]) -> str:
    words: list[str] = []
    for node in ast_nodes(block):  # depth first, in reading order
        if node.get("t") == "Str":
            words.append(node["c"])
        elif node.get("t") in ("Space", "SoftBreak", "LineBreak"):
            words.append(" ")
        elif node.get("t") == "Math":
            words.append(node["c"][1])
        elif node.get("t") in ("Para", "Plain", "Header", "CodeBlock"):
            words.append(" ")  # a list's items, a quote's paragraphs: words of two blocks never run together
    return " ".join("".join(words).split())
