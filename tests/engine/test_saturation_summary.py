"""summary.json 'saturation' and the run report's table: which resources reached 90 % busy."""

from __future__ import annotations

import numpy as np
import pytest

from densim.tools.run import write_run
from densim.engine import simulate
from densim.plant import resolve
from densim.engine.state import SaturationLog
from densim.saturation import saturation_rows
from tests.core.helpers import const_vms, host, scenario
from tests.engine.test_swap_on_datastore import _scenario


def test_log_matches_the_shared_helper_across_chunks():
    rng = np.random.default_rng(3)
    busy = rng.uniform(0.5, 1.0, size=(10, 4))
    names = ["a", "b", "c", "d"]
    log = SaturationLog(10, 60.0)
    for t0 in range(0, 10, 3):  # chunks of 3 steps
        log.add("x", names, busy[t0:t0 + 3])
    assert sorted(log.rows(), key=lambda r: r["resource"]) == saturation_rows(names, busy, kind="x", step_s=60.0)


def test_host_cpu_at_or_above_90_percent_is_listed():
    # two hosts of 4 x 2000 MHz; host 0 gets 4 vCPUs at 95 %, host 1 one vCPU at 50 %
    sc = scenario([host(count=2)], [const_vms("busy", 4, 1, 2000, 0.95), const_vms("calm", 1, 1, 2000, 0.5)], horizon="15 min")
    res = simulate(resolve(sc))
    rows = res.summary["saturation"]
    assert [r["kind"] for r in rows] == ["host CPU"]
    r = rows[0]
    assert r["resource"] == str(res.ctx.hosts.names[0])
    assert r["peak"] == pytest.approx(0.95, rel=1e-5)
    assert r["steps"] == 3 and r["duration_s"] == 900.0 and r["share_of_time"] == 1.0


def test_nothing_saturated_gives_an_empty_list_and_the_report_says_so(tmp_path):
    res = simulate(resolve(scenario([host()], [const_vms("v", 1, 1, 1000, 0.5)])))
    assert res.summary["saturation"] == []
    write_run(res, tmp_path)
    html = (tmp_path / "report.html").read_text()
    assert "No resource reached 90 % busy" in html


def test_datastore_and_swap_device_rows(tmp_path):
    # one swapping VM stalls on its own faults (rho -> 2/3 at most with theta = 1, t_sw = 0); with
    # 900 IOPS of a neighbour on the 1,000-IOPS datastore it is past 90 % busy
    from densim.spec import scenario_from_dict

    d = _scenario(other_iops=900.0).model_dump(by_alias=True)
    d["parts"]["memory_workloads"][0]["access_rate_per_s"] = 100000

    res = simulate(resolve(scenario_from_dict(d)))
    kinds = {r["kind"]: r for r in res.summary["saturation"]}
    assert "datastore" in kinds and kinds["datastore"]["resource"] == "swap-ds"
    assert kinds["datastore"]["peak"] >= 0.9
    # on the device instead, with 900 IOPS of background load on it: the swap device (one per host)
    d["memory"].pop("swap_datastore")
    d["memory"]["background_swap_iops"] = 900.0
    res = simulate(resolve(scenario_from_dict(d)))
    kinds = {r["kind"]: r for r in res.summary["saturation"]}
    assert "swap device" in kinds and kinds["swap device"]["resource"].startswith("one-ms-disk@")
    write_run(res, tmp_path)
    html = (tmp_path / "report.html").read_text()
    assert "Saturated resources" in html and "one-ms-disk@" in html
