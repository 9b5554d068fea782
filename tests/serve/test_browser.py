"""The ``densim serve`` page in Debian's Chromium (Playwright) against a real uvicorn server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from densim.cli.main import app as cli

from ..conftest import chromium_path

pytestmark = pytest.mark.browser

A = "#pane-a"
B = "#pane-b"


@pytest.fixture
def page(served):
    exe = chromium_path()
    if exe is None:
        pytest.skip("chromium is not installed (make test installs it)")
    pw = pytest.importorskip("playwright.sync_api")
    errors: list[str] = []
    with pw.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, headless=True, args=["--no-sandbox"])
        pg = browser.new_page(viewport={"width": 1500, "height": 1000})
        pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        pg.on("pageerror", lambda e: errors.append(str(e)))
        pg.set_default_timeout(120_000)
        pg.goto(served)
        pg.wait_for_selector(f"{A} .headline[data-key]:not([data-key=''])")
        pg.errors = errors
        yield pg
        browser.close()


def headline_key(pg, pane: str) -> str:
    return pg.get_attribute(f"{pane} .headline", "data-key")


def change(pg, pane: str, path: str, text: str) -> str:
    """Type ``text`` into the control ``path`` and wait for the pane's headline to show another run."""
    before = headline_key(pg, pane)
    pg.fill(f'{pane} [data-path="{path}"]', text)
    pg.wait_for_function("([sel, k]) => { const h = document.querySelector(sel); return h.dataset.key && h.dataset.key !== k; }",
                         arg=[f"{pane} .headline", before])
    return headline_key(pg, pane)


def card(pg, pane: str, key: str) -> str:
    return pg.inner_text(f'{pane} .card[data-metric="{key}"] .v')


def test_page_loads_without_console_errors(page):
    assert page.errors == []
    assert page.locator(f"{A} .card").count() >= 7
    assert page.locator(f"{A} .js-plotly-plot").count() == 3
    assert page.locator(f"{A} .tables tbody tr").count() >= 2
    assert card(page, A, "hosts_used") == "4 / 4"  # 2 VMs of 4 GiB per 8 GiB host: 8 VMs on 4 hosts (conftest)


def test_memory_overcommit_moves_the_headline_to_what_densim_run_gives(page, served, tmp_path):
    key = change(page, A, "placement.memory_overcommit", "2")
    shown = {k: card(page, A, k) for k in ("hosts_used", "energy_kwh", "cpu_ready_pct_mean", "vms_placed")}
    assert shown["hosts_used"] == "2 / 4"  # 16 GiB / 4 GiB = 4 VMs per host -> 2 hosts
    # the scenario YAML the page offers for what is on screen, run by `densim run`
    yml = page.request.get(f"{served}/api/runs/{key}/scenario.yaml").text()
    f = tmp_path / "on-screen.yaml"
    f.write_text(yml)
    r = CliRunner().invoke(cli, ["run", str(f), "--out", str(tmp_path / "o"), "--no-report", "--no-progress", "--json"])
    assert r.exit_code == 0, r.output
    from densim.tools.serve.view import headline

    expected = {h["key"]: h["text"] for h in headline(json.loads(r.stdout))}
    assert shown == {k: expected[k] for k in shown}
    assert page.errors == []


def test_bad_value_shows_the_field_error(page, micro, tmp_path):
    page.fill(f'{A} [data-path="placement.memory_overcommit"]', "abc")
    err = page.wait_for_selector(f'{A} .field-error.shown[data-for="placement.memory_overcommit"]')
    bad = tmp_path / "bad.yaml"
    bad.write_text(Path(micro).read_text().replace("memory_overcommit: 1.0", "memory_overcommit: abc"))
    r = CliRunner().invoke(cli, ["validate", str(bad)])
    cli_line = r.stderr.strip().splitlines()[0].replace(f"densim: error: {bad}:", "")
    assert err.inner_text() == f"{micro}:{cli_line}"
    # fixing the value clears the error and runs again
    change(page, A, "placement.memory_overcommit", "2")
    assert page.locator(f"{A} .field-error.shown").count() == 0
    # Chromium logs the 422 answer as a failed resource load; nothing else went wrong
    assert page.errors and all("status of 422" in e for e in page.errors), page.errors


def test_side_by_side_shows_both(page):
    page.check("#compare")
    page.wait_for_selector(f"{B} .headline[data-key]:not([data-key=''])")
    change(page, B, "placement.memory_overcommit", "2")
    page.wait_for_selector("#diff .diff-fields td:text-is('placement.memory_overcommit')")
    assert card(page, A, "hosts_used") == "4 / 4" and card(page, B, "hosts_used") == "2 / 4"
    row = page.locator("#diff .diff-headline tr", has_text="hosts used")
    assert row.locator("td").all_inner_texts() == ["hosts used", "4 / 4", "2 / 4", "-2"]
    assert page.locator(f"{B} .js-plotly-plot").count() == 3
    assert page.errors == []


def test_failure_control_shows_the_failure_figures(page):
    # fail the largest host (all 4 alike: small-0) at the default time, half the 1 h horizon, for the default 4 h;
    # memory_overcommit 2 leaves two empty hosts, so its 4 VMs restart after 30 s + 120 s: 4 x 150 s = 10 VM-minutes
    assert page.input_value(f'{A} [data-path="failures.fail_at"]') == "0.5 h"
    change(page, A, "placement.memory_overcommit", "2")
    change(page, A, "failures.fail_largest_hosts", "1")
    assert card(page, A, "vm_minutes_down") == "10.0 (4 VMs interrupted)"
    assert card(page, A, "restart_delay_s_mean") == "150 s mean, 150 s max"
    assert card(page, A, "reservation_held") == "yes"
    page.select_option(f'{A} [data-path="failures.ha.admission"]', "n_plus_k")
    page.wait_for_selector(f'{A} .card[data-metric="reservation_held"] .k:text-is("HA reservation held (admission n_plus_k)")')
    assert page.errors == []
