"""Read a page's content stream in one linear pass: its literal strings, under a byte bound and a deadline.

The regex this replaces (``\\((?:\\\\.|[^\\\\)])*\\)``) retried every ``(`` of an unbalanced run to its
end: quadratic, 27 s for a 587-byte page of 40k ``(`` (issue 15). :func:`strip_literal_strings`
walks the bytes once, from one ``(``, ``)`` or ``\\`` to the next (PDF 32000-1, 7.3.4.2: nested
balanced parentheses, ``\\`` escapes, ``\\ddd`` octal, ``\\`` + end of line continues the line).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

# Bytes of a page's decoded content stream that are read for the blank check and the text estimate.
# A dense text page is 10-100 KB and a detailed vector map a few MB; past this the page is not
# called blank and its estimate is marked unknown (the planner's default). docs/architecture.md, "Hostile PDFs".
MAX_CONTENT_SCAN_BYTES = 4 * 1024 * 1024
# Time one page's content read may take before it is handled as "estimate unknown" (never a hang).
PAGE_READ_BUDGET_S = 2.0

_SPECIAL = re.compile(rb"[()\\]")
_OCTAL = b"01234567"
_CHECK_EVERY = 4096  # steps between two looks at the clock


class BudgetExceeded(Exception):
    """A per-page PDF operation ran past its deadline: the caller treats the page as unknown."""


@dataclass
class Deadline:
    """A time budget checked inside loops (no threads, no signals); ``clock`` injectable for tests."""

    seconds: float
    clock: Callable[[], float] = time.monotonic
    _end: float = field(init=False)

    def __post_init__(self) -> None:
        self._end = self.clock() + self.seconds

    def expired(self) -> bool:
        return self.clock() >= self._end

    def check(self) -> None:
        if self.expired():
            raise BudgetExceeded(f"over the {self.seconds} s budget")


@dataclass(frozen=True)
class Scan:
    stripped: bytes  # the stream with each closed literal string replaced by ``()`` and an unclosed one cut off
    text_chars: int  # characters of the closed literal strings (an escape or octal code counts once)
    steps: int  # loop iterations: at most one per ``(``, ``)`` or ``\\`` scanned, plus one


def strip_literal_strings(data: bytes, deadline: Deadline | None = None) -> Scan:
    """One pass over ``data``. A string never closed runs to the end of the data, as a PDF reader
    reads it: it is dropped, and its characters are not counted (no operator can show it)."""
    out: list[bytes] = []
    chars = steps = 0
    depth = 0  # nesting inside the current literal string; 0 outside
    string_chars = 0
    copied = 0  # data[:copied] is already in ``out`` (or dropped as string content)
    pos = 0
    end = len(data)
    while True:
        steps += 1
        if deadline is not None and steps % _CHECK_EVERY == 0:
            deadline.check()
        match = _SPECIAL.search(data, pos)
        if match is None:
            break
        at = match.start()
        byte = data[at]
        if depth:
            string_chars += at - pos  # plain bytes since the last special one
            if byte == 0x5C:  # backslash: one escaped character, or a line continuation
                pos = _after_escape(data, at + 1, end)
                nxt = data[at + 1 : at + 2]
                string_chars += 0 if nxt in (b"\r", b"\n") else 1 if nxt else 0
                continue
            if byte == 0x28:  # "(" nested
                depth += 1
                string_chars += 1
            else:  # ")"
                depth -= 1
                if depth == 0:
                    out.append(b"()")
                    chars += string_chars
                    copied = at + 1
                else:
                    string_chars += 1
            pos = at + 1
            continue
        if byte == 0x28:  # a string starts
            out.append(data[copied:at])
            depth, string_chars = 1, 0
        pos = at + 1  # outside a string ``)`` and ``\\`` are ordinary bytes
    if not depth:
        out.append(data[copied:])
    return Scan(b"".join(out), chars, steps)


def _after_escape(data: bytes, start: int, end: int) -> int:
    """Where scanning resumes after the backslash at ``start - 1``."""
    if start >= end:
        return end
    nxt = data[start]
    if nxt in _OCTAL:  # \d, \dd or \ddd: one character
        stop = start + 1
        while stop < min(start + 3, end) and data[stop] in _OCTAL:
            stop += 1
        return stop
    if nxt == 0x0D and data[start + 1 : start + 2] == b"\n":  # \ CR LF: the line continues
        return start + 2
    return start + 1
