"""Page text made safe for the Markdown: it cannot become HTML, a comment, a page marker or a script link.

Text comes from the model, which reads it off the page: a PDF can say ``<script>`` or ``<!-- Page 99 -->``.
Outside code, every ``<`` is written ``&lt;`` but for a short allowlist (``<sup>``, ``<sub>``, ``<br>``, their
closing tags, and ``<https://…>`` / ``<mailto:…>`` autolinks); a link to a ``javascript:``, ``vbscript:``,
``data:`` or ``file:`` address loses its scheme. Code spans and fenced code keep their content as text (it
renders as text there); only a page-marker lookalike in them is broken by a zero-width space, so that a
tool splitting on ``<!-- Page N -->`` still finds only the real markers. Idempotent.
"""

from __future__ import annotations

import re

_ALLOWED = re.compile(r"</?(?:sup|sub)>|<br\s*/?>|<(?:https?|mailto):[^\s<>]*>", re.IGNORECASE)
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SCRIPT_LINK = re.compile(r"(\]\(\s*<?\s*)((?:javascript|vbscript|data|file)\s*:)", re.IGNORECASE)
_MARKER_LOOKALIKE = re.compile(r"<!--(?=\s*page\b)", re.IGNORECASE)
_CODE_RUN = re.compile(r"`+")
ZERO_WIDTH_SPACE = "\u200b"


def safe_markdown(text: str) -> str:
    """``text`` with no raw HTML, comment or page marker outside code (module docstring); code spans and fences kept."""
    if "<" not in text and ":" not in text:
        return text  # nothing to neutralise: the common page
    out: list[str] = []
    fence: str | None = None  # the opening fence's run (```` ``` ```` or ``~~~``) while inside a fenced block
    for line in text.split("\n"):
        opening = _FENCE.match(line)
        if fence is None and opening:
            fence = opening.group(1)
            out.append(_in_code(line))
        elif fence is not None:
            if line.strip().startswith(fence[0] * len(fence)) and set(line.strip()) == {fence[0]}:
                fence = None
            out.append(_in_code(line))
        else:
            out.append(_outside_fences(line))
    return "\n".join(out)


def _in_code(text: str) -> str:
    return _MARKER_LOOKALIKE.sub(f"<!{ZERO_WIDTH_SPACE}--", text)


def _outside_fences(line: str) -> str:
    """A line's code spans kept (marker lookalikes broken), the rest made safe."""
    parts: list[str] = []
    position = 0
    while True:
        opening = _CODE_RUN.search(line, position)
        if opening is None:
            break
        closing = _find_closing(line, opening)
        if closing is None:  # an unmatched run of backticks is literal text
            parts.append(_text(line[position : opening.end()]))
            position = opening.end()
            continue
        parts.append(_text(line[position : opening.start()]))
        parts.append(_in_code(line[opening.start() : closing]))
        position = closing
    parts.append(_text(line[position:]))
    return "".join(parts)


def _find_closing(line: str, opening: re.Match[str]) -> int | None:
    """Where the code span opened by ``opening`` ends (after its closing run of as many backticks), else None."""
    width = len(opening.group(0))
    for run in _CODE_RUN.finditer(line, opening.end()):
        if len(run.group(0)) == width:
            return run.end()
    return None


def _text(text: str) -> str:
    if "<" in text:
        pieces = []
        position = 0
        for index in (i for i, ch in enumerate(text) if ch == "<"):
            if index < position:
                continue
            allowed = _ALLOWED.match(text, index)
            pieces.append(text[position:index])
            if allowed:
                pieces.append(allowed.group(0))
                position = allowed.end()
            else:
                pieces.append("&lt;")
                position = index + 1
        pieces.append(text[position:])
        text = "".join(pieces)
    return _SCRIPT_LINK.sub(r"\1unsafe-\2", text) if "](" in text else text
