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
# A string with no parenthesis inside but escaped ones: most strings a page shows, matched in C.
# Anchored where a string starts only, so a failed try never scans past the string's first inner
# parenthesis, a region the one-pass walk then covers once: still linear overall.
_FLAT_STRING = re.compile(rb"\(((?:[^()\\]|\\.)*)\)", re.DOTALL)
_ESCAPE = re.compile(rb"\\(?:[0-7]{1,3}|\r\n|.)", re.DOTALL)
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

    def remaining(self) -> float:
        return self._end - self.clock()

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
    return _all_flat(data) or _walk(data, deadline)


def _all_flat(data: bytes) -> Scan | None:
    """The common page in C: every string flat (no parenthesis inside). Without an escaped ``(``
    anywhere, a failed match stops at the next ``(``, where the next try starts: linear. None when
    a ``(`` is left over (nested, unclosed, escaped): the walk answers then."""
    if b"\\(" in data:
        return None
    stripped, count = _FLAT_STRING.subn(b"()", data)
    if stripped.count(b"(") != count:
        return None
    if b"\\" not in data:
        return Scan(stripped, len(data) - len(stripped), 1)
    # Joined by a space (no escape ends a string, so none reaches into the next), the space not counted.
    return Scan(stripped, _decoded_length(b" ".join(_FLAT_STRING.findall(data))) - max(count - 1, 0), 1)


def _walk(data: bytes, deadline: Deadline | None) -> Scan:
    out: list[bytes] = []
    chars = steps = 0
    pos = 0  # data[:pos] is already in ``out`` (or dropped as string content)
    while True:
        steps += 1
        if deadline is not None and steps % _CHECK_EVERY == 0:
            deadline.check()
        at = data.find(b"(", pos)
        if at < 0:
            break
        out.append(data[pos:at])
        flat = _FLAT_STRING.match(data, at)
        if flat is not None:
            inner = flat.group(1)
            chars += _decoded_length(inner) if b"\\" in inner else len(inner)
            end = flat.end()
        else:
            end, string_chars, walked = _walk_string(data, at + 1, deadline, steps)
            steps += walked
            if end < 0:  # never closed
                return Scan(b"".join(out), chars, steps)
            chars += string_chars
        out.append(b"()")
        pos = end
    out.append(data[pos:])
    return Scan(b"".join(out), chars, steps)


def _decoded_length(inner: bytes) -> int:
    """Characters of a string's bytes: an escape or octal code is one, a line continuation none."""
    escapes = _ESCAPE.findall(inner)
    continuations = sum(1 for e in escapes if e in (b"\\\r\n", b"\\\n", b"\\\r"))
    return len(inner) - sum(map(len, escapes)) + len(escapes) - continuations


def _walk_string(data: bytes, pos: int, deadline: Deadline | None, steps: int) -> tuple[int, int, int]:
    """From just past a string's ``(``, one step per ``(``, ``)`` or ``\\``: (index past its closing
    ``)`` or -1 if never closed, characters, steps taken)."""
    depth, chars, taken, end = 1, 0, 0, len(data)
    while True:
        taken += 1
        if deadline is not None and (steps + taken) % _CHECK_EVERY == 0:
            deadline.check()
        match = _SPECIAL.search(data, pos)
        if match is None:
            return -1, 0, taken
        at = match.start()
        chars += at - pos  # plain bytes since the last special one
        byte = data[at]
        if byte == 0x5C:  # backslash: one escaped character, or a line continuation
            nxt = data[at + 1 : at + 2]
            chars += 0 if nxt in (b"\r", b"\n", b"") else 1
            pos = _after_escape(data, at + 1, end)
            continue
        pos = at + 1
        if byte == 0x28:  # "(" nested: part of the string
            depth += 1
            chars += 1
            continue
        depth -= 1  # ")"
        if depth == 0:
            return pos, chars, taken
        chars += 1


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
