"""The HTML report opens in a real browser (Debian's Chromium through Playwright) without errors."""

import pytest

from ..conftest import chromium_path


@pytest.mark.browser
def test_run_report_has_no_console_errors(tmp_path):
    exe = chromium_path()
    if exe is None:
        pytest.skip("chromium is not installed (make test installs it)")
    from playwright.sync_api import sync_playwright

    from densim.builtin import builtin_path
    from densim.engine import simulate
    from densim.scenario import load_scenario

    simulate(load_scenario(builtin_path("demo.yaml"))).write(tmp_path)
    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, headless=True, args=["--no-sandbox"])
        page = browser.new_page()
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto((tmp_path / "report.html").as_uri())
        page.wait_for_selector("#fig-util .main-svg")
        assert page.locator(".js-plotly-plot").count() == 3
        assert "VMs with the worst CPU Ready" in page.content()
        page.screenshot(path=str(tmp_path / "report.png"), full_page=False)
        browser.close()
    assert errors == []
