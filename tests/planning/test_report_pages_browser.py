"""The plan and run reports in a real browser (Debian's Chromium through Playwright) at 1,400 px:
the answer first, no console errors, nothing wider than the page (issue 17)."""

from __future__ import annotations

import json

import pytest

from ..browser import open_report
from .fixtures import small_workload, write_rvtools_xlsx

WIDTH = 1400


def _unplaced_run(out):
    """One 2-core, 8 GiB host; 1 VM of 1 GiB fits, 1,200 VMs of 16 GiB fit nowhere."""
    from densim.engine import simulate
    from densim.plant import resolve
    from densim.spec.loader import scenario_from_dict
    from densim.tools.run import write_run

    host = {"count": 2, "cpu": {"sockets": 1, "cores_per_socket": 2, "base_clock": "2 GHz"}, "memory": "8 GiB",
            "power": {"model": "linear", "idle": "100 W", "peak": "200 W"}}
    vms = [{"name": "ok", "count": 1, "vcpus": 1, "memory": "1 GiB", "profile": {"mean": 0.2}},
           {"name": "big", "count": 1200, "vcpus": 1, "memory": "16 GiB", "profile": {"mean": 0.2}}]
    spec = scenario_from_dict({"name": "unplaced", "cluster": {"hosts": [host]}, "vms": vms,
                               "simulation": {"horizon": "1 h", "step": "5 min"}})
    write_run(simulate(resolve(spec)), out)
    return json.loads((out / "summary.json").read_text())


def test_run_report_counts_every_unplaced_vm_not_the_listed_ones(tmp_path):
    s = _unplaced_run(tmp_path)
    assert s["vms_unplaced"] == 1200 and len(s["unplaced_vms"]) == 1000  # the list is cut, the count is not
    html = (tmp_path / "report.html").read_text()
    assert "1,200 VM(s) fit nowhere" in html and "1000 VM(s)" not in html
    # one host carries the VM, the other is on with none (unused_hosts: idle by default): said, with its energy
    assert 'id="idle-hosts"' in html and "1 of the 2 hosts powered on carry no VM" in html
    # 1 busy vCPU on 2 cores never waits: CPU Ready 0 everywhere, drawn on 0..5 %, and said in words
    assert "No vCPU waited in any step" in html and '"zmax":5.0' in html.replace(" ", "")
    assert '"rangemode":"tozero"' in html.replace(" ", "")  # constant power drawn from 0 kW, not on -0.5..1


@pytest.mark.browser
def test_run_report_in_a_browser_fits_1400_px(tmp_path):
    _unplaced_run(tmp_path)
    page = open_report(tmp_path / "report.html", "#fig-ready .main-svg", width=WIDTH)
    assert page.errors == []
    assert page.page_width <= WIDTH
    assert "1,200 VM(s) fit nowhere" in page.text


@pytest.mark.browser
def test_plan_report_in_a_browser_answers_first_and_fits_1400_px(tmp_path):
    from densim.spec.plan import PlanSpec
    from densim.tools.plan.capacity import plan
    from densim.tools.plan.report import write_outputs
    from densim.workloads.formats import load_inventory

    # an RVTools export (vInfo, vCPU, vMemory, vHost and the readiness tabs) of 6 VMs over 50 steps' first sample
    inv = load_inventory(write_rvtools_xlsx(tmp_path / "e.xlsx", small_workload(6, 50), migration=True))
    spec = PlanSpec.model_validate({"qos": {"vcpus_per_core": 4.0, "ha_spare_hosts": 1}, "candidates": [
        {"name": f"{n}-core host with a rather long candidate name", "cpu": {"sockets": 2, "cores_per_socket": n, "base_clock": "2.4 GHz"},
         "memory": "128 GiB", "power": {"model": "linear", "idle": "120 W", "peak": "350 W"}, "price_usd": 900.0 * n}
        for n in (8, 16, 24)]})
    write_outputs(plan(inv, spec), tmp_path / "out")
    page = open_report(tmp_path / "out" / "report.html", "#fig-hosts .main-svg", width=WIDTH)
    assert page.errors == []
    assert page.page_width <= WIDTH
    text = page.text
    answer = text.index('id="answer"')
    assert answer < text.index("<table") and answer < text.index("<h2")
    lead = text[answer:text.index("</section>", answer)]
    assert "Buy " in lead and "USD per VM-year" in lead and "Limiting resource" in lead and "Against today (RVTools vHost tab)" in lead
    assert text.index('id="compare"') < text.index('id="ranking"')
    # the rating and the readiness counts come next to the headline, before the ranking; their tables fit too
    assert answer < text.index('id="confidence"') < text.index('id="readiness-table"') < text.index('id="ranking"')
    assert "cpu_util_mean" not in text.split("</head>")[1].split("<script>")[0]  # readable headers, no snake_case
