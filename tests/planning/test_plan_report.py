"""The plan report's answer: bounds held, the limiting resource, today against proposed, the chosen
candidate over time; and the run report's counts (issue 17). Hand-calculable micro-plans."""

from __future__ import annotations

import json

import numpy as np
import pytest

from densim.spec.plan import PlanSpec
from densim.tools.plan.capacity import host_type_of, plan
from densim.tools.plan.report import chosen_series, figures, headline, headline_lines, summary_dict, write_outputs
from densim.workloads.formats import load_inventory
from densim.workloads.inventory import build_inventory

from .fixtures import small_workload, write_rvtools_xlsx

POWER_OLD = {"model": "linear", "idle": "100 W", "peak": "200 W"}
POWER_NEW = {"model": "linear", "idle": "100 W", "peak": "300 W"}


def _spec(overcommit: float = 1.0, cores: int = 4, **extra) -> PlanSpec:
    # one candidate: 4 cores at 2 GHz (no SMT), 32 GiB, by default no over-commit of vCPUs (1 per core)
    doc = {"qos": {"cpu_ready_pct": 5.0, "vcpus_per_core": overcommit},
           "candidates": [{"name": "new", "cpu": {"sockets": 1, "cores_per_socket": cores, "base_clock": "2 GHz"},
                           "memory": "32 GiB", "power": POWER_NEW, "price_usd": 5000}]}
    return PlanSpec.model_validate(doc | extra)


def _four_vms(steps: int = 4):
    # 4 VMs of 2 vCPUs and 8 GiB, each using 1,000 MHz at every step
    return build_inventory([f"v{i}" for i in range(4)], [2] * 4, [2000.0] * 4, [8 * 2**30] * 4,
                           cpu_mhz=np.full((steps, 4), 1000.0))


def test_limiting_resource_and_bounds_are_the_hand_figures():
    s = summary_dict(plan(_four_vms(), _spec()))
    a = s["answer"]
    # 8 vCPUs on 4 cores at 1 vCPU per core -> 2 hosts of 2 VMs; per host 4 vCPUs / 4 physical cores = 1.0 of 1.0:
    # vCPU slots bind (0 % headroom). Memory: 2 x 8 GiB / 32 GiB = 0.5 of 1.0. CPU demand: 2,000 / 8,000 MHz = 25 %.
    assert a["hosts"] == 2 and a["limiting"] == "vcpus"
    b = {x["key"]: x for x in a["bounds"]}
    assert b["vcpus"]["value"] == pytest.approx(1.0) and b["vcpus"]["headroom"] == pytest.approx(0.0)
    assert b["memory_configured"]["value"] == pytest.approx(0.5) and b["memory_configured"]["share"] == pytest.approx(0.5)
    assert b["cpu_demand"]["value"] == pytest.approx(25.0)
    assert b["cpu_ready"]["value"] <= 5.0
    text = headline(s)
    assert text.splitlines()[0].startswith("Buy 2 x new")
    assert "Limiting resource: vCPUs per physical core" in text and "0 % headroom" in text


def test_today_from_the_current_section_is_arithmetic_on_the_same_demand():
    spec = _spec(current=[{"name": "old", "count": 3, "cpu": {"sockets": 1, "cores_per_socket": 2, "base_clock": "2 GHz"},
                           "memory": "16 GiB", "power": POWER_OLD, "rack_units": 1}])
    c = summary_dict(plan(_four_vms(), spec))["answer"]["comparison"]
    t, p = c["today"], c["proposed"]
    assert c["source"] == "candidates file, section current"
    # today: 3 hosts x 2 cores x 2,000 MHz = 12,000 MHz for 4,000 MHz of demand -> 33.3 %; linear 100 + 100 x 1/3 W
    # per host -> 400 W. Proposed: 2 x 4 cores = 16,000 MHz -> 25 %; each host 100 + 200 x 0.25 = 150 W -> 300 W.
    assert (t["hosts"], t["cores"], p["hosts"], p["cores"]) == (3, 6, 2, 8)
    assert t["cpu_use_pct"] == pytest.approx(100 / 3) and p["cpu_use_pct"] == pytest.approx(25.0)
    assert t["power_kw"] == pytest.approx(0.4) and p["power_kw"] == pytest.approx(0.3)
    assert t["memory_tib"] == pytest.approx(48 / 1024) and t["vcpus_per_core"] == pytest.approx(8 / 6)
    assert t["rack_units"] == 3 and p["rack_units"] == 2
    last = headline_lines({"answer": summary_dict(plan(_four_vms(), spec))["answer"]})[-1]
    assert last.startswith("Against today") and "2 hosts instead of 3 (-1)" in last and "8 cores instead of 6 (+2)" in last


def test_today_from_the_rvtools_vhost_tab(tmp_path):
    # the fixture's vHost: one PowerEdge M630, 2 x 16 cores at 2,400 MHz, 256 GiB
    inv = load_inventory(write_rvtools_xlsx(tmp_path / "e.xlsx", small_workload()))
    c = summary_dict(plan(inv, _spec(overcommit=4.0, cores=16)))["answer"]["comparison"]
    assert c["source"] == "RVTools vHost tab"
    assert (c["today"]["hosts"], c["today"]["cores"]) == (1, 32)
    assert c["today"]["capacity_ghz"] == pytest.approx(32 * 2.4)
    assert c["today"]["power_kw"] is None  # vHost has no power model: not made up


def test_series_over_time_agree_with_the_plans_own_check():
    # a real-looking load: 12 VMs, 300 steps of noisy demand; the over-time series is the plan's check per bin
    rng = np.random.default_rng(5)
    cpu = np.clip(rng.normal(0.5, 0.25, size=(300, 12)), 0, 1) * 2 * 2000.0
    inv = build_inventory([f"v{i}" for i in range(12)], [2] * 12, [2000.0] * 12, [4 * 2**30] * 12, cpu_mhz=cpu)
    spec = _spec(overcommit=4.0)
    res = plan(inv, spec)
    best = res.ranked()[0]
    ser = chosen_series(res, max_points=40)
    assert ser.hours.size == 38  # ceil(300 / 40) = 8 steps per bin -> 38 bins, the last of 4 steps
    assert ser.steps.sum() == 300 and ser.hours[1] == pytest.approx(8 * inv.step_s / 3600)
    assert ser.ready_worst.max() == pytest.approx(best.ready_pct_worst, rel=1e-12)
    assert ser.util_max.max() == pytest.approx(best.cpu_util_peak, rel=1e-12)
    # mean over time of the mean over the hosts with VMs = the candidate's mean utilisation over its placed hosts
    assert np.average(ser.util_mean, weights=ser.steps) == pytest.approx(np.mean(best.per_host["cpu_util_mean"]), rel=1e-9)
    # by hand for one bin: summed demand / (hosts x 4 cores x 2,000 MHz), mean over its 8 steps
    host = host_type_of(spec.candidates[0])
    load = np.zeros((8, best.n_hosts_packed))
    np.add.at(load.T, best.host_of_vm, np.minimum(cpu[:8], 2 * 2000.0).T)
    assert ser.util_mean[0] == pytest.approx((load / host.capacity_mhz).mean())


def test_all_zero_ready_is_drawn_from_zero_to_the_bound():
    # idle VMs: CPU Ready 0 everywhere; the right axis still runs 0 .. 1.2 x the 5 % bound, never around 0
    inv = build_inventory([f"v{i}" for i in range(4)], [2] * 4, [2000.0] * 4, [8 * 2**30] * 4, cpu_mhz=np.zeros((10, 4)))
    figs = figures(plan(inv, _spec()))
    assert figs["fig-time"]["layout"]["yaxis2"]["range"] == [0, pytest.approx(6.0)]
    assert figs["fig-hosts"]["layout"]["yaxis2"]["range"] == [0, pytest.approx(6.0)]
    assert figs["fig-tradeoff"]["data"][0]["cliponaxis"] is False  # names at the edge are not cut off


def test_snapshot_has_no_time_plot_and_the_report_says_so(tmp_path):
    inv = load_inventory(write_rvtools_xlsx(tmp_path / "e.xlsx", small_workload()))
    res = plan(inv, _spec(overcommit=4.0, cores=16))
    assert chosen_series(res) is None
    summary = write_outputs(res, tmp_path / "out")
    html = (tmp_path / "out" / "report.html").read_text()
    assert "no time plot" in html and 'id="fig-time"' not in html and 'id="compare"' in html
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["answer"] == json.loads(json.dumps(summary["answer"]))


def test_partials_of_other_sections_are_included_only_when_their_data_is_there(tmp_path):
    from densim.reports import render
    from densim.tools.plan.report import report_context

    s = summary_dict(plan(_four_vms(), _spec()))
    html = render("plan.html.j2", figures={}, **report_context(s, []))  # no time_remaining/licensing/carbon: no partial needed
    assert 'id="answer"' in html and "Limiting resource" in html


def test_the_howto_current_snippet_is_valid():
    import re
    from pathlib import Path

    import yaml

    text = (Path(__file__).parents[2] / "docs" / "howto" / "capacity-plan.md").read_text()
    block = next(b for b in re.findall(r"```yaml\n(.*?)```", text, re.S) if b.startswith("current:"))
    spec = _spec(**yaml.safe_load(block))
    (g,) = spec.current
    assert (g.count, g.cpu.sockets, g.cpu.cores_per_socket, g.memory_bytes) == (24, 2, 12, 384 * 2**30)
