"""The web console in Debian's headless Chromium (Playwright), against the offline stack (issue 25).

Every wait is on what the page shows (Playwright's auto-waiting on locators), never a sleep.
axe-core (console/node_modules) checks every view: no serious or critical violation.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import tempfile
import urllib.request
import uuid
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect, sync_playwright

from batchlane_dev.local.bedrock.faults import parse_faults
from batchlane_dev.local.pdfgen import make_pdf
from tests.conftest import start_stack

ROOT = Path(__file__).resolve().parents[2]
CONSOLE = ROOT / "console"
AXE = CONSOLE / "node_modules" / "axe-core" / "axe.min.js"
CHROMIUM = "/usr/bin/chromium"
ADMIN = "admin-1;groups=batchlane-admins"
FAULTS = "time_scale=36000"
LONG = 180_000  # ms: a conversion on a loaded machine; the wait ends as soon as the page shows it


@pytest.fixture(scope="module")
def stack(migrated_url):  # type: ignore[no-untyped-def]
    if not (CONSOLE / "dist" / "index.html").is_file():  # `make test` builds it; a lone pytest run builds it too
        subprocess.run(["make", "console"], cwd=ROOT, check=True)
    stack = start_stack(migrated_url, faults=FAULTS, schedules=False)
    yield stack
    stack.stop()


@pytest.fixture(scope="module")
def browser():  # type: ignore[no-untyped-def]
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"], headless=True)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser):  # type: ignore[no-untyped-def]
    context = browser.new_context(accept_downloads=True, viewport={"width": 1200, "height": 800})
    errors: list[str] = []
    page = context.new_page()
    page.on("console", lambda m: errors.append(m.text) if "Content Security Policy" in m.text else None)
    yield page
    context.close()
    assert not errors, errors  # nothing the console does is blocked by its own CSP


def api(stack: Any, method: str, path: str, body: Any = None, *, user: str) -> tuple[int, Any]:
    request = urllib.request.Request(
        stack.env["BATCHLANE_API_URL"] + path,
        data=json.dumps(body).encode() if body is not None else None,
        method=method,
        headers={"Authorization": f"Bearer local:{user}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def axe_clean(page: Page, view: str) -> None:
    """No serious or critical accessibility violation on the view as shown."""
    page.evaluate(AXE.read_text() + "\n;0")  # DevTools evaluation: the console's CSP rightly refuses an inline script
    result = page.evaluate("async () => await axe.run(document, {resultTypes: ['violations']})")
    bad = [(v["id"], v["impact"], [n["target"] for n in v["nodes"]]) for v in result["violations"] if v["impact"] in ("serious", "critical")]
    assert not bad, f"{view}: {bad}"


def save_screenshot(png: bytes, path: Path) -> None:
    """The README's picture, kept small: 64 colours, optimised (about 60 KB instead of 175 KB). Written over
    the committed one only with BATCHLANE_UPDATE_SCREENSHOTS=1 (a test run leaves the tree clean), else beside it in /tmp."""
    from PIL import Image

    if os.environ.get("BATCHLANE_UPDATE_SCREENSHOTS") != "1":
        path = Path(tempfile.gettempdir()) / path.name
    Image.open(io.BytesIO(png)).convert("RGB").quantize(colors=64).save(path, optimize=True)


def sign_in(page: Page, stack: Any, user: str) -> None:
    page.goto(stack.env["BATCHLANE_CONSOLE_URL"])
    axe_clean(page, "sign in")
    page.get_by_label("User name").fill(user)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="New conversion")).to_be_visible()


def choose_pdf(page: Page, tmp_path: Path, pages: int) -> Path:
    pdf = tmp_path / f"report-{pages}.pdf"
    pdf.write_bytes(make_pdf(pages, title="console sample"))
    page.get_by_label("PDF file").set_input_files(pdf)
    return pdf


def test_playwright_drives_debian_chromium_headless(browser):
    """Fails loudly when the pinned Playwright and the installed Chromium stop working together."""
    assert version("playwright") == "1.65.2"
    context = browser.new_context()
    page = context.new_page()
    page.set_content("<p id=x>ok</p>")
    assert page.text_content("#x") == "ok" and "Chrome/" in page.evaluate("navigator.userAgent")
    context.close()


def test_sign_in_estimate_convert_watch_page_view_and_download(stack, page, tmp_path):
    user = f"ui-{uuid.uuid4().hex[:6]}"
    sign_in(page, stack, user)
    choose_pdf(page, tmp_path, 3)  # a small PDF goes on-demand unless Bulk is ticked: done in seconds
    page.get_by_role("button", name="Estimate").click()
    expect(page.get_by_test_id("est-pages")).to_contain_text("3 (")
    expect(page.get_by_test_id("est-lane")).to_contain_text("on-demand")
    axe_clean(page, "new conversion with its estimate")
    # two clicks in one tick (before any re-render could disable the button): one job
    page.get_by_role("button", name="Convert").evaluate("b => { b.click(); b.click(); }")
    page.wait_for_url("**/#/job/*")
    job_id = page.url.rsplit("/", 1)[1]
    expect(page.get_by_test_id("status")).to_contain_text("completed", timeout=LONG)
    expect(page.get_by_role("progressbar", name="Pages converted")).to_have_attribute("value", "3")
    axe_clean(page, "job")
    # the list holds exactly this conversion
    status, listing = api(stack, "GET", "/api/v1/files", user=user)
    assert status == 200 and [f["conversion"]["jobId"] for f in listing["files"]] == [job_id]
    with page.expect_download() as download:
        page.get_by_role("link", name="Download Markdown").click()
    downloaded = Path(download.value.path()).read_text()
    _, link = api(stack, "GET", f"/api/v1/jobs/{job_id}/markdown", user=user)
    with urllib.request.urlopen(link["url"], timeout=30) as response:
        assert downloaded == response.read().decode()
    page.get_by_role("link", name="Page view").click()
    expect(page.locator("canvas[data-rendered=true]")).to_be_visible(timeout=60_000)
    expect(page.get_by_role("region", name="Markdown of this page")).not_to_be_empty()
    axe_clean(page, "page view")
    save_screenshot(page.screenshot(), ROOT / "docs" / "console.png")
    page.get_by_role("link", name="Next page").click()
    expect(page.get_by_role("heading", name="Page 2")).to_be_visible()
    expect(page.locator("canvas[data-rendered=true]")).to_be_visible(timeout=60_000)
    page.get_by_role("link", name="Jobs", exact=True).click()
    expect(page.get_by_role("cell", name="completed")).to_be_visible()
    axe_clean(page, "jobs")


def test_a_bulk_job_waiting_for_the_batch_lane_is_cancelled_from_its_page(stack, page, tmp_path):
    sign_in(page, stack, f"ui-{uuid.uuid4().hex[:6]}")
    choose_pdf(page, tmp_path, 3)
    page.get_by_label("Bulk: half price in the batch lane, even for a small PDF (up to a day)").check()
    page.get_by_role("button", name="Convert").click()  # it waits in the batch pool (no packer runs in this stack)
    page.wait_for_url("**/#/job/*")
    expect(page.get_by_test_id("status")).to_contain_text("waiting_batch", timeout=LONG)
    expect(page.get_by_text("Waiting in the batch pool")).to_be_visible()
    page.get_by_role("button", name="Cancel").click()
    expect(page.get_by_test_id("status")).to_contain_text("cancelled", timeout=LONG)
    expect(page.get_by_role("button", name="Cancel")).to_be_disabled()


def test_a_budget_refusal_is_shown_as_a_sentence_beside_convert(stack, page, tmp_path):
    user = f"ui-{uuid.uuid4().hex[:6]}"
    assert api(stack, "PUT", f"/api/v1/admin/budgets/{user}", {"usdPerMonth": "0"}, user=ADMIN)[0] == 200
    sign_in(page, stack, user)
    choose_pdf(page, tmp_path, 3)
    page.get_by_role("button", name="Convert").click()
    expect(page.get_by_role("alert")).to_contain_text("Your budget for this month does not cover this conversion")
    expect(page.get_by_role("button", name="Convert")).to_be_enabled()
    axe_clean(page, "budget refusal")
    page.get_by_role("link", name="Budget").click()
    expect(page.get_by_test_id("budget")).to_contain_text("usdPerMonth")
    axe_clean(page, "budget")


def test_the_page_view_reads_the_stored_source_by_ranges_never_whole(stack, page, tmp_path):
    """A fresh session (no local file): pdf.js draws page 5 from Range reads of the presigned source."""
    user = f"ui-{uuid.uuid4().hex[:6]}"
    sign_in(page, stack, user)
    pdf = choose_pdf(page, tmp_path, 60)
    page.get_by_role("button", name="Convert").click()
    page.wait_for_url("**/#/job/*")
    job_id = page.url.rsplit("/", 1)[1]
    expect(page.get_by_test_id("status")).to_contain_text("completed", timeout=LONG)
    fresh = page.context.browser.new_page()  # type: ignore[union-attr]
    ranges: list[str | None] = []
    fresh.on("request", lambda r: ranges.append(r.headers.get("range")) if "/_s3/" in r.url and "source.pdf" in r.url else None)
    fresh.goto(stack.env["BATCHLANE_CONSOLE_URL"] + f"#/page/{job_id}/5")
    fresh.get_by_label("User name").fill(user)
    fresh.get_by_role("button", name="Sign in").click()
    expect(fresh.locator("canvas[data-rendered=true]")).to_be_visible(timeout=60_000)
    expect(fresh.get_by_role("region", name="Markdown of this page")).to_contain_text("page 5 of 60")
    size = pdf.stat().st_size
    fetched = [r for r in ranges if r]
    assert fetched and all(r.startswith("bytes=") for r in fetched), ranges
    spans = [tuple(int(x) for x in r[len("bytes=") :].split("-")) for r in fetched]
    assert sum(end - start + 1 for start, end in spans) < size, (spans, size)  # never the whole file for one page
    fresh.close()


def test_failed_pages_are_shown_with_their_reason_and_retried_from_the_job_page(stack, page, tmp_path):
    stack.bedrock.set_runtime_faults(parse_faults(f"{FAULTS},refuse_pages=2"))  # the model refuses page 2
    try:
        sign_in(page, stack, f"ui-{uuid.uuid4().hex[:6]}")
        choose_pdf(page, tmp_path, 3)
        page.get_by_role("button", name="Convert").click()
        page.wait_for_url("**/#/job/*")
        job_id = page.url.rsplit("/", 1)[1]
        failed = page.get_by_role("region", name="Failed pages")
        expect(failed).to_contain_text("Page 2: stop_reason=refusal", timeout=LONG)
        axe_clean(page, "job with failed pages")
        page.goto(stack.env["BATCHLANE_CONSOLE_URL"] + f"#/page/{job_id}/2")
        expect(page.get_by_role("region", name="Markdown of this page")).to_contain_text("This page failed: stop_reason=refusal")
        page.get_by_role("link", name="Back to the job").click()
    finally:
        stack.bedrock.set_runtime_faults(parse_faults(FAULTS))
    page.get_by_role("button", name="Retry failed pages").click()
    expect(failed).to_have_count(0, timeout=LONG)
    expect(page.get_by_role("button", name="Retry failed pages")).to_be_disabled()
    expect(page.get_by_test_id("status")).to_contain_text("completed")


def test_new_conversion_takes_a_word_file_and_a_scan(stack, page, tmp_path):
    """Issue 43: the console uploads any supported file. A DOCX is estimated at $0 (no model call), converts, and its
    page view shows the section's Markdown with no page image; a PNG scan's page view draws the page the split made."""
    from formatscount import DATA
    from PIL import Image

    sign_in(page, stack, f"ui-{uuid.uuid4().hex[:6]}")
    docx = tmp_path / "word_sample.docx"
    docx.write_bytes((DATA / "word_sample.docx").read_bytes())
    page.get_by_label("PDF file").set_input_files(docx)
    page.get_by_role("checkbox", name="Word (.docx)").check()
    page.get_by_role("button", name="Estimate").click()
    expect(page.get_by_test_id("est-lane")).to_contain_text("converter (no model call)")
    expect(page.get_by_test_id("est-cost")).to_contain_text("0")
    axe_clean(page, "new conversion of a Word file")
    page.get_by_role("button", name="Convert").click()
    page.wait_for_url("**/#/job/*")
    job_id = page.url.rsplit("/", 1)[1]
    expect(page.get_by_test_id("status")).to_contain_text("completed", timeout=LONG)
    page.goto(f"{stack.env['BATCHLANE_CONSOLE_URL']}#/page/{job_id}/2")
    expect(page.get_by_test_id("no-page-image")).to_be_visible(timeout=60_000)
    expect(page.get_by_role("region", name="Markdown of this page")).to_contain_text("swim")

    scan = tmp_path / "scan.png"
    Image.new("L", (850, 1100), 255).save(scan)
    page.get_by_role("link", name="New conversion").click()
    page.get_by_label("PDF file").set_input_files(scan)
    page.get_by_role("button", name="Convert").click()
    page.wait_for_url("**/#/job/*")
    expect(page.get_by_test_id("status")).to_contain_text("completed", timeout=LONG)
    page.goto(f"{stack.env['BATCHLANE_CONSOLE_URL']}#/page/{page.url.rsplit('/', 1)[1]}/1")
    expect(page.locator("canvas[data-rendered=true]")).to_be_visible(timeout=60_000)
