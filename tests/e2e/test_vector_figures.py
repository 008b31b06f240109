"""A chart drawn in vectors becomes a file (issue 26 point 4): the emulator gives its region, Assemble crops the
rendered page to it, the Markdown links it, and the CLI's `convert` and `jobs download` put it beside the Markdown,
with the job's pages.jsonl (issue 39.4)."""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

import pytest
from click.testing import CliRunner
from PIL import Image

from batchlane import keys
from batchlane.runtime import services
from batchlane_dev.cli.main import main
from batchlane_dev.local.pdfgen import VECTOR_CHART_PAGE, make_vector_chart_pdf


@pytest.fixture(scope="module")
def stack(migrated_url, stack_starter):  # type: ignore[no-untyped-def]
    started = stack_starter(migrated_url, faults="time_scale=36000", batch_lane=False, schedules=False)
    yield started
    started.stop()


def run(stack: Any, user: str, *args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(main, [*args, "--api-url", stack.env["BATCHLANE_API_URL"], "--user", user], catch_exceptions=False)


def test_a_vector_chart_is_cropped_to_a_file_linked_from_the_markdown_and_downloaded_beside_it(stack, tmp_path):
    user = f"fig-{uuid.uuid4().hex[:8]}"
    pdf = tmp_path / "report.pdf"
    pdf.write_bytes(make_vector_chart_pdf())
    converted = run(stack, user, "convert", str(pdf), "--interval", "0.1", "--json")
    assert converted.exit_code == 0, converted.output
    job_id = json.loads(converted.stdout)["jobId"]
    name = f"p{VECTOR_CHART_PAGE}-1.png"
    markdown = (tmp_path / "report.md").read_text()
    assert re.findall(r"!\[([^\]]*)\]\(report\.images/([^)]+)\)", markdown) == [("vector drawing of 7 shapes", name)]  # region not in the alt
    on_disk = tmp_path / "report.images" / name
    assert on_disk.is_file()
    store = services().store
    assert (tmp_path / "report.pages.jsonl").read_bytes() == store.get_bytes(keys.pages_key(job_id)), "issue 39.4: pages.jsonl beside the Markdown"
    with Image.open(on_disk) as image:
        assert image.width > 300 and image.height > 200

    # `jobs download -o elsewhere/book.md` puts the figure where that Markdown's link points.
    target = tmp_path / "elsewhere" / "book.md"
    target.parent.mkdir()
    downloaded = run(stack, user, "jobs", "download", job_id, "-o", str(target))
    assert downloaded.exit_code == 0, downloaded.output
    beside = tmp_path / "elsewhere" / "report.images" / name
    assert beside.read_bytes() == on_disk.read_bytes() == services().store.get_bytes(keys.images_prefix(job_id) + name)
    assert "1 figure file(s) beside it" in downloaded.stdout
    assert (tmp_path / "elsewhere" / "book.pages.jsonl").read_bytes() == store.get_bytes(keys.pages_key(job_id))
