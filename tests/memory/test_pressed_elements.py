"""The memory stage runs its pipeline only on the (step, VM) elements that can differ from "all fits"
(``MemoryStage._pressed``): in a run whose VMs arrive and leave, a VM alive in a step on a host whose alive
VMs' memory may exceed its capacity then. Every other element holds its configured memory with no fault, which
is what the pipeline gives it (deficit 0: nothing shared, ballooned, compressed or swapped, so no fault, which
comes only from reclaimed memory), so leaving it out must not move a bit. These tests run the same scenarios with
the selection switched off (every element through the pipeline, as before the change) and compare every table.
"""

from __future__ import annotations

import numpy as np
import pytest

from densim.engine import simulate
from densim.engine.plugins import memory as MP
from densim.plant import resolve
from densim.spec import scenario_from_dict


def _scenario(images: bool) -> dict:
    # 200 VMs arriving over a day on 10 hosts of 64 GiB at memory over-commit 1.5: hosts are short of memory
    # in some steps and not in others, so both kinds of element occur in one chunk
    prof = {"kind": "diurnal", "mean": 0.4, "amplitude": 0.2, "noise": 0.1}
    arr = {"over": "1 d", "lifetime": "4 h", "lifetime_sigma": 1.0}
    vm = {"name": "vm", "count": 160, "vcpus": 2, "vcpu_speed": "2 GHz", "memory": "8 GiB", "profile": prof,
          "arrivals": arr}
    if images:
        vm["workload"] = {"guest_image": "linux-server-stack"}
    return {
        "name": "pressed",
        "cluster": {"hosts": [{"name": "h", "count": 10, "cpu": {"sockets": 2, "cores_per_socket": 4, "base_clock": "2 GHz"},
                               "memory": "64 GiB", "power": {"model": "linear", "idle": "100 W", "peak": "250 W"}}]},
        "vms": [vm, {"name": "mem", "count": 40, "vcpus": 2, "vcpu_speed": "2 GHz", "memory": "24 GiB",
                     "profile": {**prof, "mean": 0.6}, "arrivals": arr, "workload": {"memory_profile": "oltp-sql"}}],
        "placement": {"policy": "first-fit", "memory_overcommit": 1.5},
        "scheduling": {"lifetimes": "on", "queue": "fifo"},
        "memory": {"model": "vsphere-like", "inter_vm_sharing": images},
        "simulation": {"step": "5 min", "seed": 3, "chunk_steps": 16},
        "output": {"vm_timeseries": "off", "host_timeseries": "on"},
    }


def _run(d: dict, monkeypatch, *, select: bool, kept: list | None = None):
    orig = MP.MemoryStage._pressed

    def pressed(self, cfg_t, cap_t, live, cell, n, H, idx):
        sel = orig(self, cfg_t, cap_t, live, cell, n, H, idx)
        if kept is not None:
            kept.append((n * idx.size, n * idx.size if sel is None else sel.size, int((live > 0).sum())))
        return sel if select else None

    monkeypatch.setattr(MP.MemoryStage, "_pressed", pressed)
    return simulate(resolve(scenario_from_dict(d)), seed=3)


def _same(a, b):
    for ta, tb in ((a.vms, b.vms), (a.hosts, b.hosts), (a.host_steps(), b.host_steps())):
        assert ta.columns == tb.columns
        for c in ta.columns:
            x, y = ta[c], tb[c]
            if x.dtype.is_numeric():
                assert np.array_equal(x.to_numpy(), y.to_numpy(), equal_nan=True), c
            else:
                assert x.to_list() == y.to_list(), c
    assert a.summary.to_dict()["memory"] == b.summary.to_dict()["memory"]
    assert a.summary.to_dict()["totals"] == b.summary.to_dict()["totals"]


@pytest.mark.parametrize("images", [False, True])
def test_leaving_out_unpressed_elements_moves_no_bit(monkeypatch, images):
    kept: list = []
    a = _run(_scenario(images), monkeypatch, select=True, kept=kept)
    b = _run(_scenario(images), monkeypatch, select=False)
    m = a.summary["memory"]
    assert m["hosts_swapping"] and m["vms_slowed"] > 0  # the pipeline is at work
    # the selection left out elements in some block: alive VMs on host-steps not short, and VMs not alive
    assert any(s < alive for _, s, alive in kept) and any(s < total for total, s, _ in kept)
    _same(a, b)


def test_a_miss_ratio_at_full_residency_faults_nothing_without_reclaimed_memory(monkeypatch):
    # a miss-ratio curve with m(1) > 0 (a measured table whose last point is not 0) still takes no fault on a
    # host-step that is not short: faults come only from memory the pipeline reclaimed (fault_rates splits
    # r m(f) over the reclaimed tiers), and there is none there. So the selection may leave such VMs out too.
    orig_miss = MP.MemoryStage._miss

    def miss(self, group, f):
        return orig_miss(self, group, f) + 0.01  # every profile misses 1 % more, also at f = 1

    monkeypatch.setattr(MP.MemoryStage, "_miss", miss)
    a = _run(_scenario(False), monkeypatch, select=True)
    b = _run(_scenario(False), monkeypatch, select=False)
    _same(a, b)
    assert a.summary["memory"]["vms_slowed"] > 0
