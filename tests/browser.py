"""Open a densim HTML report in Debian's Chromium (Playwright) and collect what the tests check."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from .conftest import chromium_path


@dataclass
class Opened:
    errors: list[str]  # console errors and uncaught page errors
    plots: int  # rendered plotly figures
    table_rows: int
    text: str  # the page's HTML after scripts ran
    page_width: int = 0  # document.documentElement.scrollWidth (px): wider than the viewport means a side scroll
    plot_heights: tuple[int, ...] = ()  # drawn height (px) of each plotly figure: 0 or a few px means it collapsed


def open_report(html: Path, wait_for: str, screenshot: Path | None = None, width: int | None = None,
                full_page: bool = False) -> Opened:
    """Load ``html`` as a file URL, wait until ``wait_for`` is rendered, and report errors and counts.

    Skips the calling test when Chromium or Playwright is missing (``make test`` installs both).
    """
    exe = chromium_path()
    if exe is None:
        pytest.skip("chromium is not installed (make test installs it)")
    pw = pytest.importorskip("playwright.sync_api")
    errors: list[str] = []
    with pw.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, headless=True, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": width, "height": 900}) if width else browser.new_page()
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(Path(html).as_uri())
        page.wait_for_selector(wait_for)
        opened = Opened(errors, page.locator(".js-plotly-plot").count(), page.locator("table tbody tr").count(),
                        page.content(), page.evaluate("document.documentElement.scrollWidth"),
                        tuple(page.evaluate("[...document.querySelectorAll('.js-plotly-plot')]"
                                            ".map(g => Math.round(g.getBoundingClientRect().height))")))
        if screenshot is not None:
            page.screenshot(path=str(screenshot), full_page=full_page)
        browser.close()
    return opened
