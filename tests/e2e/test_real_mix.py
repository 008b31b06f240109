"""A real mix of PDFs converts whole in both lanes: scans, rotated pages, a form, non-Latin
scripts, text inside a form XObject, mixed page sizes (documents from tests/e2e/realmix.py).

Every page ends converted (none failed, none blank by mistake) under its own marker, with
its own words; an image-only page converts because the page is sent in the form in which
the model sees it (InvokeModel, Anthropic Messages body), not as a text layer.
"""

from __future__ import annotations

import re

import pytest
from realmix import real_mix

from batchlane.runtime import services
from batchlane_dev.local.jobs import submit_pdf, wait_for_job


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


@pytest.mark.slow
@pytest.mark.parametrize("lane", ["batch", "on-demand"])
def test_a_real_mix_of_pdfs_converts_whole(stack_factory, lane):
    stack_factory(
        "time_scale=36000,job_hours=0.5",
        batch_lane=lane == "batch",
        extra_env={"BATCH_CONVERSION_MIN_PAGES": "1", "BATCH_CONVERSION_MIN_RECORDS": "1"},
    )
    svc = services()
    documents = real_mix()
    jobs = {doc.name: submit_pdf(svc, doc.data, name=doc.name, owner_id="archivist", options={"batchLane": True})["jobId"] for doc in documents}
    for doc in documents:
        final = wait_for_job(svc, jobs[doc.name], timeout_s=180)
        job = svc.db.one("SELECT * FROM large_conversion_jobs WHERE id = CAST(:id AS uuid)", id=jobs[doc.name])
        assert final.status == "completed", (doc.name, job["status"], job["error_id"])
        assert job["pages_failed"] == 0, doc.name
        if lane == "batch":
            assert job["pages_batch"] > 0, f"{doc.name} never reached the batch lane"
        markdown = svc.store.get_bytes(job["markdown_key"]).decode()
        sections = re.split(r"<!-- Page (\d+)(?::[^>]*)? -->", markdown)[1:]
        numbers = [int(n) for n in sections[0::2]]
        assert numbers == list(range(1, len(doc.expected) + 1)), f"{doc.name}: every page once, in order"
        for number, body, expected in zip(numbers, sections[1::2], doc.expected, strict=True):
            assert body.strip(), f"{doc.name} page {number} came back empty"
            if expected is None:
                continue
            got = _words(body)
            # pypdf (which the emulated model reads) extracts right-to-left scripts in visual order.
            missing = [w for w in expected if w not in got and w[::-1] not in got]
            assert not missing, f"{doc.name} page {number} lost {missing}"
