"""Where a folder job's outputs go, and which keys it must never take as inputs (pure functions).

Layouts (docs/architecture.md "Folder jobs"):
- ``alongside``: ``a/doc.pdf`` → ``a/doc.md``, next to the source (output folder = input folder);
- ``mirror``: the input tree under another folder: ``<out>/a/doc.md``;
- ``flat``: one folder per document id (the file's stem): ``<out>/doc/doc.md``; two sources
  with the same stem collide (OUTPUT_COLLISION on the later one).
An output that would land on an input's own key gets ``.converted`` before its extension.
Everything a job writes besides the Markdown lives under ``<out>/_batchlane/<job_id>/``.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

from batchlane.domain import file_types

Layout = Literal["alongside", "mirror", "flat"]
RECORD_FOLDER = "_batchlane"
OUTPUT_EXTENSION = ".md"
# PDFs and the born-digital types (no model call for their text); pictures only when ``include`` names them (each is a
# billed vision call): domain/file_types.py, docs/operations.md "Folder jobs".
DEFAULT_INCLUDE = file_types.DEFAULT_INCLUDE


@dataclass(frozen=True)
class S3Uri:
    bucket: str
    key: str

    def __str__(self) -> str:
        return f"s3://{self.bucket}/{self.key}"


MAX_KEY_BYTES = 1024  # S3's limit on a key, in UTF-8 bytes


def parse_s3_uri(uri: str) -> S3Uri:
    """``s3://bucket/key`` → S3Uri; ValueError for anything else: a control character anywhere (a NUL once reached
    PostgreSQL, which refuses it in text, and answered 500), a key over S3's 1,024 bytes."""
    if not uri.startswith("s3://"):
        raise ValueError(f"not an s3:// URI: {uri!r}")
    bucket, _, key = uri[5:].partition("/")
    if not bucket:
        raise ValueError(f"no bucket in {uri!r}")
    bad = next((ch for ch in uri if unicodedata.category(ch) == "Cc"), None)
    if bad is not None:
        raise ValueError(f"it holds a control character (U+{ord(bad):04X})")
    if len(key.encode()) > MAX_KEY_BYTES:
        raise ValueError(f"the key is longer than S3's {MAX_KEY_BYTES} bytes")
    return S3Uri(bucket, key)


def relative_key(key: str, folder_prefix: str) -> str:
    """The key below ``folder_prefix`` (a prefix ending in ``/`` or empty)."""
    return key[len(folder_prefix) :] if key.startswith(folder_prefix) else key


def record_prefix(output_prefix: str, job_id: str) -> str:
    """``<out>/_batchlane/<job_id>/``: the manifest and the report, outside any expiring prefix."""
    return f"{output_prefix}{RECORD_FOLDER}/{job_id}/"


def manifest_key(output_prefix: str, job_id: str) -> str:
    return record_prefix(output_prefix, job_id) + "manifest.json"


def report_key(output_prefix: str, job_id: str) -> str:
    return record_prefix(output_prefix, job_id) + "report.jsonl"


def report_part_key(output_prefix: str, job_id: str, part: int) -> str:
    """The report as it grows: one part per progress step with finished files (joined at the end)."""
    return record_prefix(output_prefix, job_id) + f"report/part-{part:06d}.jsonl"


# What a job writes beside the Markdown (issue 43): renderings, per-page and per-block records, figure files.
_BESIDE = re.compile(r"(\.converted\.(docx|html)|\.pages\.jsonl|\.blocks\.jsonl|\.images/p\d+-\d+\.[a-z]+)$")


def is_own_output(key: str) -> bool:
    """Keys no folder job ever converts: Markdown, what it writes beside it (``book.converted.docx``,
    ``book.images/p3-1.png``, ``book.pages.jsonl``) and anything under a ``_batchlane/`` folder."""
    lower = key.lower()
    return lower.endswith(OUTPUT_EXTENSION) or f"/{RECORD_FOLDER}/" in f"/{key}" or _BESIDE.search(lower) is not None


def matches(relative: str, include: Iterable[str], exclude: Iterable[str]) -> bool:
    """Case-insensitive globs on the key below the folder (``*`` also crosses ``/``)."""
    name = relative.lower()
    base = posixpath.basename(name)

    def hit(pattern: str) -> bool:
        pattern = pattern.lower()
        return fnmatch.fnmatchcase(name, pattern) or ("/" not in pattern and fnmatch.fnmatchcase(base, pattern))

    return any(hit(p) for p in include) and not any(hit(p) for p in exclude)


def is_supported_name(key: str) -> bool:
    """A key whose name is one of the types batchlane converts (the split checks the bytes)."""
    return file_types.by_extension(key) is not None


def _with_extension(key: str, extension: str) -> str:
    stem, ext = posixpath.splitext(key)
    return (stem if ext else key) + extension


def document_id(source_key: str) -> str:
    """The ``flat`` layout's folder: the file's name without its extension."""
    return posixpath.splitext(posixpath.basename(source_key))[0] or "document"


def output_key(source_key: str, *, input_prefix: str, output_prefix: str, layout: Layout, is_input: Callable[[str], bool] = lambda _k: False) -> str:
    """The Markdown's key for ``source_key``; never an input's own key (``.converted`` then)."""
    if layout == "alongside":
        key = _with_extension(source_key, OUTPUT_EXTENSION)
    elif layout == "mirror":
        key = output_prefix + _with_extension(relative_key(source_key, input_prefix), OUTPUT_EXTENSION)
    elif layout == "flat":
        doc = document_id(source_key)
        key = f"{output_prefix}{doc}/{doc}{OUTPUT_EXTENSION}"
    else:  # pragma: no cover - Literal
        raise ValueError(f"unknown layout {layout!r}")
    if key == source_key or is_input(key):
        stem, ext = posixpath.splitext(key)
        key = f"{stem}.converted{ext}"
    return key


def common_folder(keys: Iterable[str]) -> str:
    """The deepest folder (``.../``) holding every key: a ``files`` list's input folder."""
    folders = [k.rsplit("/", 1)[0] + "/" if "/" in k else "" for k in keys]
    if not folders:
        return ""
    prefix = posixpath.commonprefix(folders)
    return prefix[: prefix.rfind("/") + 1]
