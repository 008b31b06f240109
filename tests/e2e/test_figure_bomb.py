"""The figure bomb (issue 40.2) on the offline stack, two owners at once.

A 26 KB PDF draws one 25-megapixel image 520 times on its one page. Before issue 40 its Assemble decoded and encoded
every draw under the process's pdfium lock: 172 s and 520 PNGs, while another owner's 3-page job took 164 s instead
of 0.8 s (every Lambda of the offline stack is a thread of one process, so the lock was everyone's). Now the figure
work runs in the bounded child, the page is over its cap (pdf/images.py ``MAX_IMAGE_OBJECTS_PER_PAGE``): nothing is
decoded, the page keeps its figures as descriptions and its pages.jsonl line says FIGURES_OVER_CAP.

The two bounds on time are generous (the hang guard of a shared, noisy machine), each several times what the jobs
take here and a third of what the bomb took before; the proof that nothing is shared is in tests/unit
(test_pdfium_lock.py: no pdfium call in Assemble's process).
"""

from __future__ import annotations

import json
import uuid
from datetime import timedelta
from typing import Any

import pytest
from click.testing import CliRunner

from batchlane import keys
from batchlane.runtime import services
from batchlane_dev.cli.main import main
from batchlane_dev.local.jobs import wait_for_job
from batchlane_dev.local.pdfgen import figure_bomb_pdf, make_pdf

JOB_S = 60  # each job ends within this of its creation (the bomb took 172 s, the other owner's job 164 s)


@pytest.fixture(scope="module")
def stack(migrated_url, stack_starter):  # type: ignore[no-untyped-def]
    started = stack_starter(migrated_url, faults="time_scale=36000", batch_lane=False, schedules=False)
    yield started
    started.stop()


def cli(stack: Any, user: str, *args: str) -> Any:
    result = CliRunner().invoke(main, [*args, "--api-url", stack.env["BATCHLANE_API_URL"], "--user", user], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def test_a_figure_bomb_ends_with_its_page_marked_and_another_owners_job_is_not_held(stack, tmp_path):  # type: ignore[no-untyped-def]
    alice, bob = f"alice-{uuid.uuid4().hex[:6]}", f"bob-{uuid.uuid4().hex[:6]}"
    (tmp_path / "bomb.pdf").write_bytes(figure_bomb_pdf())
    (tmp_path / "letter.pdf").write_bytes(make_pdf(3))

    bomb = json.loads(cli(stack, alice, "convert", str(tmp_path / "bomb.pdf"), "--detach", "--json").stdout)["jobId"]
    letter = json.loads(cli(stack, bob, "convert", str(tmp_path / "letter.pdf"), "--detach", "--json").stdout)["jobId"]
    svc = services()
    for job_id in (bomb, letter):
        assert wait_for_job(svc, job_id, timeout_s=180).status == "completed"

    times = {
        row["id"]: row["finished_at"] - row["created_at"]
        for row in svc.db.run("SELECT id::text AS id, created_at, finished_at FROM large_conversion_jobs WHERE id::text IN (:a, :b)", a=bomb, b=letter)
    }
    assert max(times.values()) < timedelta(seconds=JOB_S), times
    pages = [json.loads(line) for line in svc.store.get_bytes(keys.pages_key(bomb)).splitlines()]
    assert [(p["page"], p["status"], p["figuresSkipped"], p["figures"]) for p in pages] == [(1, "converted", "FIGURES_OVER_CAP", [])]
    assert svc.store.list_keys(keys.images_prefix(bomb)) == [], "no image decoded, none written"
    markdown = svc.store.get_bytes(keys.markdown_key(bomb)).decode()
    assert markdown.count("5000×5000 grayscale image") == 520, "the page's figures are described, not written"

    downloaded = cli(stack, alice, "jobs", "download", bomb, "-o", str(tmp_path / "out" / "bomb.md"), "--json")
    answer = json.loads(downloaded.stdout)
    assert answer["imagePaths"] == [] and (tmp_path / "out" / "bomb.pages.jsonl").read_bytes() == svc.store.get_bytes(keys.pages_key(bomb))
