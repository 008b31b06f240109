"""The renderings a job asked for (``options.conversionFormats``), written at Assemble beside its Markdown.

``md`` is always written; ``docx`` and ``html`` are rendered by pandoc from the assembled Markdown with the job's
figures embedded, ``json`` is the per-block record (formats/render.py). ``outputs.json`` says what became of each:
a rendering that cannot be produced fails alone with an error id (RENDER_FAILED, RENDER_TOO_LARGE); the job
completes with its Markdown whatever happens here.
"""

from __future__ import annotations

from typing import Any

from batchlane import keys
from batchlane.domain.errors import NotFound
from batchlane.formats import render
from batchlane.observability import logger
from batchlane.ports import ObjectStore

CONTENT_TYPES = {
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "html": "text/html; charset=utf-8",
    "json": "application/x-ndjson",
}


def write_renderings(store: ObjectStore, job_id: str, options: dict[str, Any], *, figure_folder: str, title: str) -> dict[str, Any]:
    """Each requested rendering under jobs/<id>/, and outputs.json; {} when none was asked for."""
    formats = render.requested(options)
    if not formats:
        return {}
    prefix = keys.images_prefix(job_id)

    def figure(src: str) -> bytes | None:
        if not src.startswith(figure_folder + "/") or "/" in src[len(figure_folder) + 1 :]:
            return None  # only the job's own figure files, by name: never a path the Markdown happens to hold
        try:
            return store.get_bytes(prefix + src[len(figure_folder) + 1 :])
        except NotFound:
            return None

    try:
        markdown = store.get_bytes(keys.markdown_key(job_id)).decode("utf-8")
        done = render.render_all(markdown, formats, title=title, figure=figure)
    except Exception as exc:  # a rendering never fails the job: say so per format
        logger.exception("renderings failed", job_id=job_id)
        done = [
            render.Rendering(fmt, error_id="RENDER_FAILED", message=f"The {fmt.upper()} rendering could not be produced ({type(exc).__name__}).")
            for fmt in formats
        ]
    record: dict[str, Any] = {}
    for item in done:
        if item.data is not None:
            store.put_bytes(keys.rendering_key(job_id, item.fmt), item.data, CONTENT_TYPES[item.fmt])
            record[item.fmt] = {"status": "written", "key": keys.rendering_key(job_id, item.fmt), "sizeBytes": len(item.data)}
        else:
            record[item.fmt] = {"status": "failed", "error": {"code": item.error_id, "message": item.message}}
    store.put_json(keys.outputs_key(job_id), record)
    logger.info(
        "renderings written",
        job_id=job_id,
        written=[f for f, r in record.items() if r["status"] == "written"],
        failed=[f for f, r in record.items() if r["status"] == "failed"],
    )
    return record
