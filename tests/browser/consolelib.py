"""What every browser test of the console shares (issues 25, 41): Debian's Chromium through Playwright, sign-in, and the
check each view gets at desktop and phone width: axe-core's WCAG 2.1 A and AA rules (none disabled) pass, nothing
scrolls sideways, and a screenshot is saved to look at (``BATCHLANE_SCREENSHOTS``, else the temp folder)."""

from __future__ import annotations

import io
import json
import os
import tempfile
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, expect

ROOT = Path(__file__).resolve().parents[2]
AXE = ROOT / "console" / "node_modules" / "axe-core" / "axe.min.js"
CHROMIUM = "/usr/bin/chromium"
WIDTHS = {"desktop": (1280, 800), "phone": (375, 740)}  # the phone: an iPhone SE's CSS width
WCAG_21_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
LONG = 180_000  # ms: a conversion on a loaded machine; every wait ends as soon as the page shows it
SHOTS = Path(os.environ.get("BATCHLANE_SCREENSHOTS") or Path(tempfile.gettempdir()) / "batchlane-console-shots")


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


def axe_violations(page: Page) -> list[tuple[str, str | None, list[Any]]]:
    """axe-core's WCAG 2.1 A/AA rules on the view as shown, every impact (none is disabled)."""
    page.evaluate(AXE.read_text() + "\n;0")  # DevTools evaluation: the console's CSP rightly refuses an inline script
    result = page.evaluate(f"async () => await axe.run(document, {{runOnly: {{type: 'tag', values: {json.dumps(WCAG_21_AA)}}}, resultTypes: ['violations']}})")
    return [(v["id"], v["impact"], [n["target"] for n in v["nodes"]][:5]) for v in result["violations"]]


def sideways_scroll(page: Page) -> int:
    """How many CSS pixels the page scrolls sideways (0: none)."""
    return int(page.evaluate("() => document.documentElement.scrollWidth - document.documentElement.clientWidth"))


def check_view(page: Page, view: str, *, ready: Any = None) -> None:
    """The view at each width: accessible (WCAG 2.1 AA), no sideways scroll, a screenshot saved (``ready``: a locator
    the view shows once it has settled, waited for at each width)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    for name, (width, height) in WIDTHS.items():
        page.set_viewport_size({"width": width, "height": height})
        if ready is not None:
            expect(ready).to_be_visible()
        assert axe_violations(page) == [], f"{view} at {name}"
        assert sideways_scroll(page) == 0, f"{view} scrolls sideways at {name} ({width} px)"
        save_screenshot(page.screenshot(full_page=True), SHOTS / f"{view.replace(' ', '-')}-{name}.png")
    page.set_viewport_size({"width": WIDTHS["desktop"][0], "height": WIDTHS["desktop"][1]})


def save_screenshot(png: bytes, path: Path) -> None:
    """A picture kept small: 64 colours, optimised."""
    from PIL import Image

    Image.open(io.BytesIO(png)).convert("RGB").quantize(colors=64).save(path, optimize=True)


def focused(page: Page) -> str:
    """The focused element: its tag, id and text (``H1#view-title Jobs``)."""
    return str(page.evaluate("() => { const e = document.activeElement; return `${e.tagName}#${e.id} ${e.textContent.trim().slice(0, 60)}`; }"))


def sign_in(page: Page, stack: Any, user: str) -> None:
    page.goto(stack.env["BATCHLANE_CONSOLE_URL"])
    expect(page.get_by_label("User name")).to_be_focused()
    page.get_by_label("User name").fill(user)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="New conversion")).to_be_visible()
