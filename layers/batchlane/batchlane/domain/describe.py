"""Pictures of born-digital documents described by Claude (``describeFigures``): the pure rules.

What a picture's request may cost (each one's worst case is what the job holds), what it is expected to cost
(the dry run), the size Claude reads a picture at, and how an answer becomes the figure's alt text in the
Markdown, at the picture's place. docs/formats.md "Pictures described"; decision 0029.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from html import escape as html_escape
from html import unescape as html_unescape

from batchlane.domain.budget import PROMPT_TOKENS_PER_REQUEST
from batchlane.domain.cost import Usage
from batchlane.domain.vision import claude_scaled, image_tokens

__all__ = ["claude_scaled", "image_tokens"]  # how Claude sizes and counts a picture: domain/vision.py, written once

OPTION = "describeFigures"
# A description is a few sentences; a chart's values may take a paragraph more. The answer's cap, in every lane.
FIGURE_MAX_TOKENS = 1024
# What the dry run expects an answer to take (about three sentences); the hold counts the cap.
EXPECTED_DESCRIPTION_TOKENS = 150
# The media types Claude reads (Anthropic "Vision": JPEG, PNG, GIF, WebP). Other pictures are made PNG when Pillow
# reads them (BMP, TIFF); a vector picture (EMF, WMF, SVG) is left as it is, not described.
SENT_MEDIA_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
NOT_DESCRIBABLE = "FIGURE_FORMAT_UNSUPPORTED"  # a picture Claude cannot be sent (a vector format Pillow cannot draw)
UNREADABLE = "FIGURE_CORRUPT"  # a picture whose bytes cannot be decoded


def worst_usage(width: int, height: int) -> Usage:
    """The most one picture's request may use: the picture, the prompt, a whole answer (what the hold counts)."""
    return Usage(image_tokens(width, height) + PROMPT_TOKENS_PER_REQUEST, FIGURE_MAX_TOKENS)


def expected_usage(width: int, height: int) -> Usage:
    """What one picture's request is expected to use (the dry run): the picture, the prompt, a short answer."""
    return Usage(image_tokens(width, height) + PROMPT_TOKENS_PER_REQUEST, EXPECTED_DESCRIPTION_TOKENS)


_FIGURE_NAME = re.compile(r"^p(\d+)-(\d+)\.[A-Za-z0-9]+$")


def figure_index(name: str) -> int:
    """``p3-2.png`` → 2: the figure's place on its page (its record id's ``f<k>``); ValueError for another name."""
    match = _FIGURE_NAME.match(name)
    if not match:
        raise ValueError(f"not a figure file name: {name!r}")
    return int(match.group(2))


@dataclass(frozen=True)
class Described:
    """What became of one picture: ``described`` (its text), ``truncated`` (text cut at the cap), ``failed``
    (why), or ``skipped`` (never sent: why)."""

    status: str
    text: str = ""
    reason: str | None = None

    def alt_text(self, original: str) -> str:
        """The figure's alt text: the description on one line; a picture not described keeps the document's own
        alt text and says why."""
        if self.status in ("described", "truncated") and self.text.strip():
            line = _one_line(self.text)
            return line + (" (description cut short)" if self.status == "truncated" else "")
        why = "not described: " + (self.reason or self.status)
        return f"{_one_line(original)} ({why})" if original.strip() else f"({why})"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _markdown_alt(text: str) -> str:
    """Alt text safe inside ``![…]``: brackets and backslashes escaped, on one line."""
    return re.sub(r"([\\\[\]])", r"\\\1", _one_line(text))


def with_descriptions(markdown: str, folder: str, outcomes: Mapping[str, Described]) -> str:
    """``markdown`` with each described picture's alt text replaced where it stands: ``![alt](folder/name)`` and
    ``<img src="folder/name" alt="…">`` (pandoc's form inside an HTML table). Pictures not in ``outcomes`` and
    every other byte are left as they were."""
    if not outcomes:
        return markdown
    prefix = re.escape(folder.rstrip("/") + "/")
    names = "|".join(re.escape(n) for n in sorted(outcomes, key=len, reverse=True))

    def markdown_image(match: re.Match[str]) -> str:
        outcome = outcomes[match.group("name")]
        original = re.sub(r"\\([\\\[\]])", r"\1", match.group("alt"))
        return f"![{_markdown_alt(outcome.alt_text(original))}]({match.group('target')}"

    pattern = re.compile(r"!\[(?P<alt>(?:\\.|\[[^\]]*\]|[^\]\\\[])*)\]\((?P<target>" + prefix + r"(?P<name>" + names + r")(?=[\s)]))")
    markdown = pattern.sub(markdown_image, markdown)

    def html_image(match: re.Match[str]) -> str:
        tag = match.group(0)
        outcome = outcomes[match.group("name")]
        alt = re.search(r'\salt="([^"]*)"', tag)
        original = html_unescape(alt.group(1)) if alt else ""
        replacement = f' alt="{html_escape(outcome.alt_text(original), quote=True)}"'
        if alt:
            return tag[: alt.start()] + replacement + tag[alt.end() :]
        return tag[:-1].rstrip("/").rstrip() + replacement + (" />" if tag.endswith("/>") else ">")

    tag = re.compile(r"<img\b[^>]*\ssrc=\"" + prefix + r"(?P<name>" + names + r")\"[^>]*>")
    return tag.sub(html_image, markdown)
