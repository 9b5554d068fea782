"""The HTML report opens in a real browser (Debian's Chromium through Playwright) without errors."""

import pytest

from ..browser import open_report


@pytest.mark.browser
def test_run_report_has_no_console_errors(tmp_path):
    from densim.builtin import builtin_path
    from densim.engine import simulate
    from densim.plant import resolve
    from densim.spec import load_scenario
    from densim.tools.run import write_run

    write_run(simulate(resolve(load_scenario(builtin_path("demo.yaml")))), tmp_path)
    page = open_report(tmp_path / "report.html", "#fig-util .main-svg", screenshot=tmp_path / "report.png")
    assert page.errors == []
    assert page.plots == 3
    assert "VMs with the worst CPU Ready" in page.text
