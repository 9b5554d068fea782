"""Stages on the active-set path: a run whose VMs arrive and leave steps, in each chunk, only the VM rows
alive in it (``chunk.vm_ids``) when every stage accepts such a chunk (``accepts_active_rows``: the memory
stage without tiering or swap on a datastore, carbon). Its results are those of the same run stepping
every row in every chunk (the "full" path, forced here by wrapping ``_choose_demand``).

Tolerance: per-VM figures and the memory figures are equal to the bit (a VM not alive in a chunk adds only
exact zeros to the full path's sums: reclamation and fault sums run over a host's VMs in the same order).
The per-host CPU figures (claims, delivered, utilisation, power, energy) come from the CPU kernel's float32
per-step host sums, whose pairing of VMs moves when the rows not alive are left out: equal to 1e-6
relative (the lean active path without stages documents 2e-7 on 100,000 VMs, see Liveness.chunk_steps).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import densim.engine.run as R
from densim.engine import simulate
from densim.plant import resolve
from densim.spec.loader import scenario_from_dict
from tests.engine.test_lifetimes import write_opendc

GIB_KB = 1024 * 1024  # write_opendc's memory column is in KiB


def _run(d: dict, monkeypatch, *, full: bool, rows: list | None = None):
    """Simulate ``d`` on the active path, or with ``full`` on the path of every row; returns (result, active).
    ``rows`` collects each chunk's ``(t0, vm_ids)`` as the memory stage sees it."""
    orig = R._choose_demand
    seen = []

    def choose(*a, **k):
        dm = orig(*a, **k)
        if full:
            dm = dataclasses.replace(dm, active=False)
        seen.append(dm.active)
        return dm

    monkeypatch.setattr(R, "_choose_demand", choose)
    if rows is not None:
        from densim.engine.plugins.memory import MemoryStage

        before = MemoryStage.before_cpu

        def spy(self, ctx, chunk):
            rows.append((chunk.t0, None if chunk.vm_ids is None else chunk.vm_ids.tolist()))
            before(self, ctx, chunk)

        monkeypatch.setattr(MemoryStage, "before_cpu", spy)
    try:
        r = simulate(resolve(scenario_from_dict(d)))
    finally:
        monkeypatch.undo()
    return r, seen[0]


def _same_tables(a, f, *, host_rtol=1e-6):
    """VM tables equal to the bit, host tables and host steps to ``host_rtol`` (float32 host sums)."""
    assert a.vms.columns == f.vms.columns
    for c in a.vms.columns:
        x, y = a.vms[c], f.vms[c]
        if x.dtype.is_numeric():
            assert np.array_equal(x.to_numpy(), y.to_numpy(), equal_nan=True), c
        else:
            assert x.to_list() == y.to_list(), c
    for ta, tf in ((a.hosts, f.hosts), (a.host_steps(), f.host_steps())):
        assert ta.columns == tf.columns
        for c in ta.columns:
            if ta[c].dtype.is_numeric():
                np.testing.assert_allclose(ta[c].to_numpy().astype(float), tf[c].to_numpy().astype(float),
                                           rtol=host_rtol, atol=1e-9, err_msg=c)
            else:
                assert ta[c].to_list() == tf[c].to_list(), c


def test_one_host_two_vms_alive_in_different_steps(tmp_path, monkeypatch):
    # One 4-core host of 16 GiB, memory over-commit 2 (placement admits 24 GiB). Task A (12 GiB) lives
    # 0..60 min, B (12 GiB) 30..90 min; C (40 GiB) is larger than any host and fails: never alive. 5-min
    # steps, 18 of them; chunks of 3 steps (15 min): A alone in chunks 0 and 1, both in 2 and 3, B alone
    # in 4 and 5. Only in the overlap (steps 6..11) are 24 GiB of guests on a host whose guest capacity
    # is below 16 GiB: the host reclaims and swaps there and nowhere else.
    d = write_opendc(tmp_path / "w", [(1, 0, 1, 1000, 12 * GIB_KB), (2, 1800, 1, 1000, 12 * GIB_KB),
                                      (3, 0, 1, 1000, 40 * GIB_KB)],
                     [(1, 3600, 1000), (2, 3600, 1000), (3, 3600, 1000)])
    host = {"name": "h", "count": 1, "cpu": {"sockets": 1, "cores_per_socket": 4, "base_clock": "2 GHz"},
            "memory": "16 GiB", "power": {"model": "linear", "idle": "100 W", "peak": "200 W"}}
    sc = {"name": "micro", "cluster": {"hosts": [host]},
          "vms": [{"name": "t", "trace": {"format": "opendc", "path": str(d)},
                   "workload": {"memory_profile": "enterprise-server-load"}}],
          "placement": {"memory_overcommit": 2.0},
          "memory": {"model": "vsphere-like", "workload": "enterprise-server-load"},
          "simulation": {"step": "5 min", "chunk_steps": 3},
          "output": {"vm_timeseries": "off", "host_timeseries": "on"}}
    rows: list = []
    a, active = _run(sc, monkeypatch, full=False, rows=rows)
    assert active
    assert a.ctx.grid.n_steps == 18 and a.summary["scheduling"]["failed"] == 1
    # the chunks' rows: A (row 0) alone, both, B (row 1) alone; C (row 2) in none
    assert rows == [(0, [0]), (3, [0]), (6, [0, 1]), (9, [0, 1]), (12, [1]), (15, [1])]
    swapped = a.host_steps()["host_mem_swapped_gib"].to_numpy()
    assert (swapped[6:12] > 0).all() and not swapped[:6].any() and not swapped[12:].any()
    v = a.vms
    # A holds its 12 GiB alone for 6 steps, less in the 6 steps of the overlap, nothing after: mean over 18 steps
    res_a = float(v["mem_resident_gib_mean"][0])
    assert 12.0 * 6 / 18 < res_a < 12.0 * 12 / 18
    # C never lived: no memory, and no stretch (1, the value of a step a VM is not alive), as on the full path
    assert float(v["mem_resident_gib_mean"][2]) == 0.0 and float(v["mem_slowdown_max"][2]) == 1.0
    f, active_f = _run(sc, monkeypatch, full=True)
    assert not active_f
    _same_tables(a, f)
    assert a.summary.to_dict()["memory"] == f.summary.to_dict()["memory"]


def test_a_vm_not_alive_holds_no_memory_on_a_host_not_short(tmp_path):
    # Two 16 GiB hosts, over-commit 2 (32 GiB admitted each). A and B (12 GiB) overlap on host 0 (short of
    # memory at their peak); C (12 GiB) arrives at 40 min while both are alive: 36 GiB do not fit host 0,
    # it goes to host 1, alone, for 30 min (steps 8..13 of 18). With VM time series (every row stepped),
    # C holds 12 GiB in its 6 steps and 0 in the other 12: mean 12 x 6 / 18 = 4 GiB. (It held 12 GiB in
    # every step before the fix: only the VMs on hosts short of memory were masked by their life.)
    d = write_opendc(tmp_path / "w", [(1, 0, 1, 1000, 12 * GIB_KB), (2, 1800, 1, 1000, 12 * GIB_KB),
                                      (3, 2400, 1, 1000, 12 * GIB_KB)],
                     [(1, 3600, 1000), (2, 3600, 1000), (3, 1800, 1000)])
    host = {"name": "h", "count": 2, "cpu": {"sockets": 1, "cores_per_socket": 4, "base_clock": "2 GHz"},
            "memory": "16 GiB", "power": {"model": "linear", "idle": "100 W", "peak": "200 W"}}
    sc = scenario_from_dict({
        "name": "c", "cluster": {"hosts": [host]},
        "vms": [{"name": "t", "trace": {"format": "opendc", "path": str(d)},
                 "workload": {"memory_profile": "enterprise-server-load"}}],
        "placement": {"policy": "first-fit", "memory_overcommit": 2.0},
        "memory": {"model": "vsphere-like", "workload": "enterprise-server-load"},
        "simulation": {"step": "5 min"}, "output": {"vm_timeseries": "on"}})
    r = simulate(resolve(sc))
    assert r.ctx.vms.host.tolist() == [0, 0, 1]
    assert r.summary["memory"]["hosts_short_of_memory"] == ["h-0"]
    steps = r.vm_steps().sort(["step", "vm"])
    res_c = steps["mem_resident_gib"].to_numpy().reshape(-1, 3)[:, 2]
    assert np.allclose(res_c[8:14], 12.0) and not res_c[:8].any() and not res_c[14:].any()
    assert float(r.vms["mem_resident_gib_mean"][2]) == pytest.approx(4.0, rel=1e-6)


def _arrivals(n: int, chunk: int) -> dict:
    """``n`` VMs arriving over a day on hosts short of memory (over-commit 1.5), memory model and carbon on."""
    prof = {"kind": "diurnal", "mean": 0.4, "amplitude": 0.2, "noise": 0.1}
    arr = {"over": "1 d", "lifetime": "4 h", "lifetime_sigma": 1.0}
    return {
        "name": "arrivals",
        "cluster": {"hosts": [{"name": "h", "count": max(2, n // 20),
                               "cpu": {"sockets": 1, "cores_per_socket": 8, "base_clock": "2 GHz"},
                               "memory": "64 GiB", "power": {"model": "linear", "idle": "100 W", "peak": "250 W"}}]},
        # 'vm' takes its active memory from the profile's memory usage (a source channel), 'mem' from oltp-sql
        "vms": [{"name": "vm", "count": n - n // 5, "vcpus": 2, "vcpu_speed": "2 GHz", "memory": "8 GiB",
                 "profile": prof, "arrivals": arr},
                {"name": "mem", "count": n // 5, "vcpus": 2, "vcpu_speed": "2 GHz", "memory": "24 GiB",
                 "profile": {**prof, "mean": 0.6}, "arrivals": arr, "workload": {"memory_profile": "oltp-sql"}}],
        "placement": {"policy": "first-fit", "memory_overcommit": 1.5},
        "scheduling": {"lifetimes": "on", "queue": "fifo"},
        "memory": {"model": "vsphere-like"},
        "carbon": {"grid_gco2_per_kwh": 250},
        "simulation": {"step": "5 min", "seed": 3, "chunk_steps": chunk},
        "output": {"vm_timeseries": "off", "host_timeseries": "on"},
    }


@pytest.mark.parametrize("chunk", [5, 16])
def test_memory_and_carbon_on_alive_rows_equal_every_row(monkeypatch, chunk):
    # 200 VMs over a day on 10 hosts: several hosts reclaim and swap, some VMs slow down; chunks of 5 or
    # 16 steps. Stepping only each chunk's alive rows gives the full path's tables and summary.
    sc = _arrivals(200, chunk)
    a, active = _run(sc, monkeypatch, full=False)
    f, active_f = _run(sc, monkeypatch, full=True)
    assert active and not active_f
    m = a.summary["memory"]
    assert m["hosts_swapping"] and m["vms_slowed"] > 0  # the memory model is at work, not all-fit
    _same_tables(a, f)
    sa, sf = a.summary.to_dict(), f.summary.to_dict()
    assert sa["memory"] == sf["memory"] and sa["scheduling"] == sf["scheduling"]
    for k, v in sf["totals"].items():
        assert sa["totals"][k] == pytest.approx(v, rel=1e-6, abs=1e-9), k
    for k in ("it_energy_kwh", "operational_kg", "vm_years"):
        assert sa["carbon"][k] == pytest.approx(sf["carbon"][k], rel=1e-6), k


def test_tiering_and_vm_series_keep_every_row(monkeypatch):
    # the NVMe tier indexes every row (its per-VM arrays are (steps, VMs)): a run with memory.tiering stays on
    # chunks of every row; so does a run keeping per-VM time series
    sc = _arrivals(40, 5)
    tiered = {**sc, "memory": {"model": "vsphere-like", "tiering": {"device": "intel-dc-p4600-1.6tb", "ratio": "1:1"}}}
    r, active = _run(tiered, monkeypatch, full=False)
    assert not active and "tiering" in r.summary["memory"]
    series = {**sc, "output": {"vm_timeseries": "on", "host_timeseries": "off"}}
    _, active = _run(series, monkeypatch, full=False)
    assert not active
    _, active = _run(sc, monkeypatch, full=False)
    assert active
