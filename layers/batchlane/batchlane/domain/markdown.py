"""Page markers and assembly: every page keeps its marker, in page order."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


def page_marker(page_number: int) -> str:
    return f"<!-- Page {page_number} -->"


def failed_marker(page_number: int, reason: str) -> str:
    safe = reason.replace("--", "- -").replace("\n", " ").strip() or "unknown"
    return f"<!-- Page {page_number}: failed ({safe}) -->"


def failed_page_notice(page_number: int, reason: str) -> str:
    """What a reader sees of a failed page once the Markdown is rendered (the comment above it is invisible):
    one blockquote line. Kept to this one function so every assembly path shows failures alike."""
    safe = " ".join(reason.replace("`", "'").split()) or "unknown"
    return f"> **Page {page_number} was not converted** (`{safe}`): its content is missing here."


def truncated_marker(page_number: int) -> str:
    return f"<!-- Page {page_number}: truncated -->"


@dataclass(frozen=True)
class PageText:
    page_number: int
    status: str  # converted | blank | failed | truncated
    markdown: str = ""
    reason: str | None = None


def render_page(page: PageText) -> str:
    if page.status == "failed":
        reason = page.reason or "unknown"
        return f"{failed_marker(page.page_number, reason)}\n\n{failed_page_notice(page.page_number, reason)}"
    marker = page_marker(page.page_number)
    body = page.markdown.strip()
    if page.status == "truncated":
        return f"{marker}\n\n{body}\n\n{truncated_marker(page.page_number)}" if body else f"{marker}\n\n{truncated_marker(page.page_number)}"
    return f"{marker}\n\n{body}" if body else marker


def assemble(pages: Iterable[PageText], *, expected_pages: int) -> str:
    """Join pages in order; a page number missing from ``pages`` is an error, never skipped."""
    by_number = {page.page_number: page for page in pages}
    missing = [n for n in range(1, expected_pages + 1) if n not in by_number]
    if missing:
        raise ValueError(f"{len(missing)} page(s) have no result, first {missing[:5]}")
    return "\n\n".join(render_page(by_number[n]) for n in range(1, expected_pages + 1)) + "\n"
