"""Cheap refusals before a converter parses anything: a ZIP container's declared shape.

DOCX, PPTX, XLSX, EPUB and ODT are ZIP files. Their central directory says how many members there are and
how big each unpacks; a zip bomb (a 40 KB file that unpacks to 10 GB) or a 100,000-slide deck is refused
from it in milliseconds. The declared sizes may lie: Python's zipfile reads no more than a member declares
(and fails its CRC otherwise), and pandoc is held by its heap limit; the bounded child catches the rest.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

from batchlane.domain.errors import InputError

MAX_MEMBERS = 20_000
MAX_UNPACKED_BYTES = 1_500 * 1024 * 1024
MAX_RATIO = 200  # unpacked : packed, over the members bigger than RATIO_FLOOR_BYTES
RATIO_FLOOR_BYTES = 16 * 1024 * 1024


def too_complex(message: str) -> InputError:
    return InputError(message, error_id="DOCUMENT_TOO_COMPLEX")


def corrupt(message: str = "The document is damaged or truncated and cannot be read.") -> InputError:
    return InputError(message, error_id="DOCUMENT_CORRUPT")


def zip_members(path: Path) -> list[zipfile.ZipInfo]:
    """The container's members, refused (DOCUMENT_TOO_COMPLEX) past the member count, unpacked size or packing ratio."""
    try:
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise corrupt() from exc
    if len(members) > MAX_MEMBERS:
        raise too_complex(f"The document's container holds {len(members):,} parts; the limit is {MAX_MEMBERS:,}.")
    unpacked = sum(m.file_size for m in members)
    if unpacked > MAX_UNPACKED_BYTES:
        raise too_complex(f"The document unpacks to {unpacked // 2**20:,} MB; the limit is {MAX_UNPACKED_BYTES // 2**20:,} MB.")
    for m in members:
        if m.file_size > RATIO_FLOOR_BYTES and m.file_size > MAX_RATIO * max(m.compress_size, 1):
            raise too_complex(
                f"A part of the document ({m.filename}) unpacks {m.file_size // max(m.compress_size, 1):,} times its size: refused as a zip bomb."
            )
    _no_entity_declarations(path, [m for m in members if m.filename.lower().endswith(_XML_PARTS)])
    return members


_XML_PARTS = (".xml", ".rels", ".xhtml", ".html", ".htm", ".opf", ".ncx")
DECLARATION_HEAD_BYTES = 8192


def declares_entities(head: bytes) -> bool:
    """An internal DTD that declares entities (billion laughs, external entities): no OOXML, ODF or EPUB part needs one."""
    return b"<!ENTITY" in head.upper()


def _no_entity_declarations(path: Path, parts: list[zipfile.ZipInfo]) -> None:
    """Each XML part's head (a DTD stands before the root element): DOCUMENT_TOO_COMPLEX when one declares entities."""
    with zipfile.ZipFile(path) as archive:
        for info in parts:
            try:
                with archive.open(info) as part:
                    head = part.read(DECLARATION_HEAD_BYTES)
            except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError) as exc:
                raise corrupt(f"A part of the document ({info.filename}) cannot be read.") from exc
            if declares_entities(head):
                raise too_complex(f"A part of the document ({info.filename}) declares XML entities (a billion-laughs pattern): refused.")


def read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    """A member's bytes (never more than it declares: zipfile stops there and checks the CRC)."""
    try:
        return archive.read(info)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError) as exc:
        raise corrupt(f"A part of the document ({info.filename}) cannot be read.") from exc
