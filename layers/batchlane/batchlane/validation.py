"""One way to say what a pydantic validation error is about: its first error, where and what."""

from __future__ import annotations

from pydantic import ValidationError


def first_error(exc: ValidationError, *, where: str) -> str:
    """``"loc.path: message"`` of the first error; ``where`` names the whole input when the error has no location."""
    first = exc.errors()[0]
    place = ".".join(str(p) for p in first.get("loc", ())) or where
    return f"{place}: {first.get('msg')}"
