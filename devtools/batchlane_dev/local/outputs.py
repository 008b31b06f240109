"""A job's results written beside its Markdown on the local disk: ``book.md``, ``book.pages.jsonl``, ``book.images/``.

`batchlane demo` reads them from the offline stack's bucket; `convert` and `jobs download` fetch the same
files through the API's presigned URLs (cli/jobs_commands.py). Every figure the Markdown links is there.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from batchlane import keys
from batchlane.domain.errors import NotFound
from batchlane.filejob.figures import figure_folder


def pages_path(markdown: Path) -> Path:
    """``book.md`` → ``book.pages.jsonl`` beside it (the API names the download the same way)."""
    stem = markdown.name[:-3] if markdown.name.endswith(".md") else markdown.name
    return markdown.with_name(f"{stem}.pages.jsonl")


def write_job_outputs(store: Any, job_id: str, markdown_key: str, pdf_name: str, markdown: Path) -> dict[str, Any]:
    """The Markdown, its per-page record and its figure files from ``store``; what was written."""
    markdown.parent.mkdir(parents=True, exist_ok=True)
    markdown.write_bytes(store.get_bytes(markdown_key))
    written: dict[str, Any] = {"markdownPath": str(markdown), "pagesPath": None, "imagePaths": []}
    try:
        pages_path(markdown).write_bytes(store.get_bytes(keys.pages_key(job_id)))
        written["pagesPath"] = str(pages_path(markdown))
    except NotFound:
        pass  # assembled before pages.jsonl existed
    prefix = keys.images_prefix(job_id)
    folder = markdown.parent / figure_folder(pdf_name)
    for key in store.list_keys(prefix):
        folder.mkdir(exist_ok=True)
        target = folder / key[len(prefix) :]
        target.write_bytes(store.get_bytes(key))
        written["imagePaths"].append(str(target))
    return written
