"""The web console in Debian's headless Chromium (Playwright), against the offline stack (issues 25, 41).

Every wait is on what the page shows (Playwright's auto-waiting on locators), never a sleep. Every view is checked at
desktop and phone width (consolelib.check_view: axe-core's WCAG 2.1 AA rules with none disabled, no sideways scroll,
a screenshot to look at). One stack with no schedules, so a bulk job waits in the batch pool.
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import urllib.request
import uuid
from importlib.metadata import version
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect, sync_playwright

from batchlane_dev.local.bedrock.faults import parse_faults
from batchlane_dev.local.pdfgen import encrypted_pdf, make_pdf
from tests.browser.consolelib import CHROMIUM, LONG, ROOT, api, check_view, focused, save_screenshot, sideways_scroll, sign_in
from tests.conftest import start_stack

CONSOLE = ROOT / "console"
ADMIN = "admin-1;groups=batchlane-admins"
FAULTS = "time_scale=36000"
BOOK = Path("/work/corpus/py-pdf+sample-files/009-pdflatex-geotopo/GeoTopo-komprimiert.pdf")
BOOK_PAGES = range(22, 26)  # the book's pages 23-26: two with photographs and drawings, two of text


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
    context = browser.new_context(accept_downloads=True, viewport={"width": 1280, "height": 800})
    errors: list[str] = []
    page = context.new_page()
    page.on("console", lambda m: errors.append(m.text) if "Content Security Policy" in m.text else None)
    yield page
    context.close()
    assert not errors, errors  # nothing the console does is blocked by its own CSP


def choose_pdf(page: Page, tmp_path: Path, pages: int, *, data: bytes | None = None, name: str | None = None) -> Path:
    pdf = tmp_path / (name or f"report-{pages}.pdf")
    pdf.write_bytes(make_pdf(pages, title="console sample") if data is None else data)
    page.get_by_label("PDF file").set_input_files(pdf)
    return pdf


def book_excerpt() -> bytes:
    """Four pages of a real pdflatex book (py-pdf/sample-files GeoTopo), two of them with photographs and drawings."""
    from pypdf import PdfReader, PdfWriter

    reader, writer = PdfReader(BOOK), PdfWriter()
    for index in BOOK_PAGES:
        writer.add_page(reader.pages[index])
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def convert(page: Page) -> str:
    page.get_by_role("button", name="Convert").click()
    page.wait_for_url("**/#/job/*")
    return page.url.rsplit("/", 1)[1]


def test_playwright_drives_debian_chromium_headless(browser):
    """Fails loudly when the pinned Playwright and the installed Chromium stop working together."""
    assert version("playwright") == "1.65.2"
    context = browser.new_context()
    page = context.new_page()
    page.set_content("<p id=x>ok</p>")
    assert page.text_content("#x") == "ok" and "Chrome/" in page.evaluate("navigator.userAgent")
    context.close()


def test_sign_in_skip_link_focus_after_each_route_change_and_sign_out(stack, page):
    """The user-name field has focus; after each route change focus is on the view's heading (not <body>); the first
    Tab reaches a skip link that jumps there; Sign out ends the session."""
    page.goto(stack.env["BATCHLANE_CONSOLE_URL"])
    expect(page.get_by_label("User name")).to_be_focused()
    check_view(page, "sign in")
    page.get_by_label("User name").fill(f"ui-{uuid.uuid4().hex[:6]}")
    page.get_by_label("User name").press("Enter")
    expect(page.get_by_role("heading", name="New conversion")).to_be_visible()
    page.keyboard.press("Tab")  # signed in, the page starts at the top: the first Tab is the skip link
    skip = page.get_by_role("link", name="Skip to the main content")
    expect(skip).to_be_focused()
    expect(skip).to_be_visible()
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="New conversion")).to_be_focused()
    for link, heading in (("Jobs", "Jobs"), ("Folder jobs", "Folder jobs"), ("Budget", "Budget"), ("New conversion", "New conversion")):
        page.get_by_role("navigation", name="Main").get_by_role("link", name=link, exact=True).click()
        expect(page.get_by_role("heading", name=heading, level=1)).to_be_focused()
        assert focused(page).startswith("H1#view-title"), focused(page)
        expect(page.get_by_role("link", name=link, exact=True)).to_have_attribute("aria-current", "page")
    check_view(page, "new conversion")
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_label("User name")).to_be_focused()
    assert api(stack, "GET", "/api/v1/budget", user="x")[0] == 200  # (the API is fine; the console forgot the token)
    expect(page.get_by_role("button", name="Sign out")).to_have_count(0)


def test_convert_watch_download_jobs_list_and_the_page_view_of_a_real_book_with_its_figures(stack, page, tmp_path):
    """The page view: figures shown (their image answered 200), ← → and a page number box, no stuck loading line; on a
    phone the PDF and its Markdown stack and "Next page" stays on one line. The README's picture is this view."""
    user = f"ui-{uuid.uuid4().hex[:6]}"
    sign_in(page, stack, user)
    choose_pdf(page, tmp_path, 4, data=book_excerpt(), name="GeoTopo.pdf")
    page.get_by_role("button", name="Estimate").click()
    expect(page.get_by_test_id("est-pages")).to_contain_text("4 (", timeout=60_000)  # a survey of the upload: seconds on a busy machine
    check_view(page, "new conversion with its estimate", ready=page.get_by_role("region", name="Estimate"))
    # two clicks in one tick (before any re-render could disable the button): one job
    page.get_by_role("button", name="Convert").evaluate("b => { b.click(); b.click(); }")
    page.wait_for_url("**/#/job/*")
    job_id = page.url.rsplit("/", 1)[1]
    expect(page.get_by_test_id("status")).to_contain_text("completed", timeout=LONG)
    expect(page.get_by_role("progressbar", name="Pages converted")).to_have_attribute("value", "4")
    expect(page.get_by_test_id("next")).to_contain_text("Done: the Markdown is ready.")
    check_view(page, "job completed")
    status, listing = api(stack, "GET", "/api/v1/files", user=user)
    assert status == 200 and [f["conversion"]["jobId"] for f in listing["files"]] == [job_id]
    with page.expect_download() as download:
        page.get_by_role("link", name="Download Markdown").click()
    downloaded = Path(download.value.path()).read_text()
    _, link = api(stack, "GET", f"/api/v1/jobs/{job_id}/markdown", user=user)
    with urllib.request.urlopen(link["url"], timeout=30) as response:
        assert downloaded == response.read().decode()
    assert link["images"], "the book's photographs are figure files beside the Markdown"

    # the page view: page 2 of the excerpt (the book's page 24) has its figures
    figures: list[tuple[int, str]] = []
    page.on("response", lambda r: figures.append((r.status, r.headers.get("content-type", ""))) if "/_s3/" in r.url and "/images/" in r.url else None)
    page.get_by_role("link", name="Page view").click()
    expect(page.get_by_role("heading", name="Page 1", level=1)).to_be_focused()
    expect(page.locator("canvas[data-rendered=true]")).to_be_visible(timeout=60_000)
    expect(page.get_by_text("Loading the page view…")).to_have_count(0)  # not left under a loaded page
    page.keyboard.press("ArrowRight")
    expect(page.get_by_role("heading", name="Page 2", level=1)).to_be_visible()
    markdown = page.get_by_role("region", name="Markdown of this page")
    expect(markdown.locator("img[data-loaded=true]").first).to_be_visible(timeout=60_000)
    assert figures and all(status == 200 and kind.startswith("image/") for status, kind in figures), figures
    assert markdown.locator("img[data-loaded=true]").first.evaluate("i => i.naturalWidth") > 0
    expect(page.locator("canvas[data-rendered=true]")).to_be_visible(timeout=60_000)
    markdown.locator("img[data-loaded=true]").first.scroll_into_view_if_needed()  # its pane scrolls to the figures
    page.evaluate("() => { document.activeElement.blur(); window.scrollTo(0, 0); }")
    shot = page.screenshot()
    check_view(page, "page view", ready=page.locator("canvas[data-rendered=true]"))
    if os.environ.get("BATCHLANE_UPDATE_SCREENSHOTS") == "1":  # the README's picture: a real book's page with its figures
        save_screenshot(shot, ROOT / "docs" / "console.png")
    page.set_viewport_size({"width": 375, "height": 740})
    pane, text = page.locator("canvas").bounding_box(), markdown.bounding_box()
    assert pane and text and text["y"] >= pane["y"] + pane["height"] - 1, (pane, text)  # stacked, not side by side
    nxt = page.get_by_role("link", name="Next page").bounding_box()
    assert nxt and nxt["height"] < 48, nxt  # one line, not wrapped
    assert sideways_scroll(page) == 0
    page.set_viewport_size({"width": 1280, "height": 800})
    page.get_by_label("Page", exact=True).fill("4")
    page.get_by_label("Page", exact=True).press("Enter")
    expect(page.get_by_role("heading", name="Page 4", level=1)).to_be_focused()  # the route changed: focus on the heading
    page.keyboard.press("ArrowLeft")
    expect(page.get_by_role("heading", name="Page 3", level=1)).to_be_visible()
    page.get_by_role("link", name="Jobs", exact=True).click()
    expect(page.get_by_role("cell", name="completed")).to_be_visible()
    check_view(page, "jobs", ready=page.get_by_role("cell", name="completed"))


def test_a_failed_page_is_said_and_a_retry_says_its_cost_and_chance_before_it_charges(stack, page, tmp_path):
    """No "Done" and full bar over a failed page; Retry asks first, with what it costs and that a refusal repeats."""
    stack.bedrock.set_runtime_faults(parse_faults(f"{FAULTS},refuse_pages=2"))  # the model refuses page 2
    try:
        sign_in(page, stack, f"ui-{uuid.uuid4().hex[:6]}")
        choose_pdf(page, tmp_path, 3)
        job_id = convert(page)
        failed = page.get_by_role("region", name="Failed pages")
        expect(failed).to_contain_text("Page 2: stop_reason=refusal", timeout=LONG)
        expect(page.get_by_test_id("status")).to_contain_text("completed, 1 page failed")
        expect(page.get_by_test_id("next")).not_to_contain_text("Done: the Markdown is ready")
        expect(page.get_by_role("progressbar", name="Pages converted")).to_have_attribute("value", "2")  # not a full bar
        expect(failed).to_contain_text("a retry most likely fails the same way")
        check_view(page, "job with a failed page")
        page.goto(stack.env["BATCHLANE_CONSOLE_URL"] + f"#/page/{job_id}/2")
        expect(page.get_by_role("region", name="Markdown of this page")).to_contain_text("This page failed: stop_reason=refusal")
        page.get_by_role("link", name="Back to the job").click()
    finally:
        stack.bedrock.set_runtime_faults(parse_faults(FAULTS))
    retries: list[str] = []
    page.on("request", lambda r: retries.append(r.method) if r.url.endswith(f"/api/v1/jobs/{job_id}/retry") else None)
    page.get_by_role("button", name="Retry failed pages…").click()
    confirm = page.get_by_role("group", name="Retry failed pages")
    expect(confirm.get_by_test_id("retry-cost")).to_have_text(re.compile(r"^\$\d+\.\d{4}$"))
    expect(confirm.get_by_test_id("retry-warning")).to_contain_text("Page 2 was refused for what it contains")
    check_view(page, "retry asked first", ready=confirm)
    assert retries == [], "nothing is sent, nor charged, before the user agrees"
    confirm.get_by_role("button", name="Retry 1 page").click()
    expect(failed).to_have_count(0, timeout=LONG)  # the model no longer refuses: converted
    assert retries == ["POST"]
    expect(page.get_by_test_id("status")).to_contain_text("completed")


def test_a_failed_job_says_its_error_id_why_and_what_to_do(stack, page, tmp_path):
    """A password-protected PDF: "Failed." and a stray "0" were all the page said."""
    sign_in(page, stack, f"ui-{uuid.uuid4().hex[:6]}")
    choose_pdf(page, tmp_path, 0, data=encrypted_pdf(make_pdf(2), "secret"), name="locked.pdf")
    convert(page)
    problem = page.get_by_role("alert", name="Why it failed")
    expect(problem).to_contain_text("PDF_ENCRYPTED", timeout=LONG)
    expect(problem).to_contain_text("password-protected")
    expect(problem).to_contain_text("What to do: Remove the password")
    assert not re.search(r"^\s*0\s*$", page.locator("main").inner_text(), flags=re.M), "no stray 0"
    expect(page.get_by_role("progressbar")).to_have_count(0)
    check_view(page, "failed job", ready=problem)


def test_an_empty_file_is_refused_in_plain_words(stack, page, tmp_path):
    sign_in(page, stack, f"ui-{uuid.uuid4().hex[:6]}")
    choose_pdf(page, tmp_path, 0, data=b"", name="empty.pdf")
    page.get_by_role("button", name="Estimate").click()
    expect(page.get_by_role("alert")).to_contain_text("The file is empty")
    expect(page.get_by_role("alert")).not_to_contain_text("sizeBytes")


def test_a_bulk_job_waiting_for_the_batch_lane_is_cancelled_from_its_page(stack, page, tmp_path):
    sign_in(page, stack, f"ui-{uuid.uuid4().hex[:6]}")
    choose_pdf(page, tmp_path, 3)
    page.get_by_label("Bulk: half price in the batch lane, even for a small PDF (up to a day)").check()
    convert(page)  # it waits in the batch pool (no packer runs in this stack)
    expect(page.get_by_test_id("status")).to_contain_text("waiting batch", timeout=LONG)
    expect(page.get_by_text("Waiting in the batch pool")).to_be_visible()
    check_view(page, "job waiting for the batch lane")
    page.get_by_role("button", name="Cancel").click()
    expect(page.get_by_test_id("status")).to_contain_text("cancelled", timeout=LONG)
    expect(page.get_by_role("button", name="Cancel")).to_have_count(0)  # nothing left to cancel


def test_the_budget_is_spent_held_and_left_with_a_bar_and_a_refusal_is_a_sentence(stack, page, tmp_path):
    user = f"ui-{uuid.uuid4().hex[:6]}"
    assert api(stack, "PUT", f"/api/v1/admin/budgets/{user}", {"usdPerMonth": "0"}, user=ADMIN)[0] == 200
    sign_in(page, stack, user)
    choose_pdf(page, tmp_path, 3)
    page.get_by_role("button", name="Convert").click()
    expect(page.get_by_role("alert")).to_contain_text("Your budget for this month does not cover this conversion")
    expect(page.get_by_role("button", name="Convert")).to_be_enabled()
    check_view(page, "budget refusal", ready=page.get_by_role("alert"))
    assert api(stack, "PUT", f"/api/v1/admin/budgets/{user}", {"usdPerMonth": "25"}, user=ADMIN)[0] == 200
    page.get_by_role("link", name="Budget").click()
    budget = page.get_by_test_id("budget")
    expect(budget).to_contain_text("This month (UTC): $25.00")
    expect(page.get_by_test_id("left")).to_have_text("$25.00")
    expect(page.get_by_role("img", name=re.compile(r"Budget this month: \$0\.00 spent, \$0\.00 held, \$25\.00 left of \$25\.00"))).to_be_visible()
    expect(page.locator("main")).not_to_contain_text("usdPerMonth")  # words, not the answer's keys
    check_view(page, "budget", ready=budget)


def test_the_page_view_reads_the_stored_source_by_ranges_never_whole(stack, page, tmp_path):
    """A fresh session (no local file): pdf.js draws page 5 from Range reads of the presigned source."""
    user = f"ui-{uuid.uuid4().hex[:6]}"
    sign_in(page, stack, user)
    pdf = choose_pdf(page, tmp_path, 60)
    job_id = convert(page)
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


def test_new_conversion_takes_a_word_file_and_a_scan(stack, page, tmp_path):
    """Issue 43: the console uploads any supported file. A DOCX is estimated at $0 (no model call), its picture priced
    when asked to be described (Describe pictures), converts, and its
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
    check_view(page, "new conversion of a Word file", ready=page.get_by_role("region", name="Estimate"))
    describe = page.get_by_role("checkbox", name=re.compile("^Describe pictures"))
    describe.check()  # its picture, described by Claude: the estimate prices it at its lane (not bulk: on-demand)
    page.get_by_role("button", name="Estimate").click()
    expect(page.get_by_test_id("est-figures")).to_contain_text("1 to describe")
    expect(page.get_by_test_id("est-figures")).to_contain_text("397×397 px")
    expect(page.get_by_test_id("est-lane")).to_contain_text("on-demand")
    expect(page.get_by_test_id("est-hold")).to_contain_text("each picture's worst case")
    check_view(page, "new conversion of a Word file with its pictures described", ready=page.get_by_test_id("est-figures"))
    describe.uncheck()
    page.get_by_role("button", name="Convert").click()
    page.wait_for_url("**/#/job/*")
    job_id = page.url.rsplit("/", 1)[1]
    expect(page.get_by_test_id("status")).to_contain_text("completed", timeout=LONG)
    page.goto(f"{stack.env['BATCHLANE_CONSOLE_URL']}#/page/{job_id}/2")
    expect(page.get_by_test_id("no-page-image")).to_be_visible(timeout=60_000)
    expect(page.get_by_role("region", name="Markdown of this page")).to_contain_text("swim")
    check_view(page, "page view of a Word file", ready=page.get_by_test_id("no-page-image"))

    scan = tmp_path / "scan.png"
    Image.new("L", (850, 1100), 255).save(scan)
    page.get_by_role("link", name="New conversion").click()
    page.get_by_label("PDF file").set_input_files(scan)
    page.get_by_role("button", name="Convert").click()
    page.wait_for_url("**/#/job/*")
    expect(page.get_by_test_id("status")).to_contain_text("completed", timeout=LONG)
    page.goto(f"{stack.env['BATCHLANE_CONSOLE_URL']}#/page/{page.url.rsplit('/', 1)[1]}/1")
    expect(page.locator("canvas[data-rendered=true]")).to_be_visible(timeout=60_000)
