"""A run split over a Dask cluster with the stages issue 34 names on at once (VMs arriving and leaving,
a host failure with HA restarts, memory, virtualization, carbon) gives the one-process result, and its
summary says how the work was split: per worker its parts, VM-steps, host-steps, compute seconds and the
bytes shipped to it and back.

The scenario is the composability one (tests/engine/test_composability.py): three 56-core hosts, twelve
16-vCPU VMs arriving over 10 min and living 40 min, first-fit puts six on host 0 and six on host 1.
Host 0 fails at 30 min for 10 min and its VMs restart on host 2. Split in 3 parts by VM count the
parts are hosts [0, 1), [1, 2) and [2, 3): the restarted instances are rows of a part their VMs never
ran in before.

Which figures are bit-identical and why: every per-VM and per-host figure (sums, peaks, series, the
hosts and VMs tables) is computed by the part holding the host from the same values in the same order
as in one process (the CPU kernel, memory and virtualization work host by host), and the whole-run
summary figures (energy, demand, CPU Ready, the failures and scheduling sections) are computed once,
on the client, from the merged per-VM and per-host arrays: bit for bit. Carbon's two sums (IT joules
and joules x gCO2/kWh) are sums over hosts and steps that each part takes over its own hosts and the
merge adds up: a different order of float64 additions, so they may differ in the last bits (relative
1e-16 per addition; here, three hosts of whole-watt power, they come out equal). They are checked to
rel 1e-12 and everything else exactly.
"""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest

from densim.engine import simulate
from densim.plant import resolve
from densim.spec.loader import scenario_from_dict
from tests.engine.test_partition_features import compose

distributed = pytest.importorskip("distributed")

pytestmark = pytest.mark.slow


def _scenario():
    d = compose("lifetimes", "virtualization", "memory", "carbon")
    d["failures"] = {"events": [{"time": "30 min", "target": "cluster-a-0", "duration": "10 min"}]}
    return resolve(scenario_from_dict(d))


def test_dask_run_with_memory_carbon_virtualization_lifetimes_failures_is_the_one_process_run():
    from distributed import LocalCluster

    from densim.tools.distributed import LOCAL_DASHBOARD

    from densim.engine.partition import plan_run
    from densim.tools.distributed import simulate_distributed

    plant = _scenario()
    one = simulate(plant)
    assert one.summary["models"]["stages"] == ["memory", "virtualization", "carbon"]
    assert one.summary["failures"]["restarts"] == 6 and one.summary["scheduling"]["completed"] > 0
    # two single-threaded worker processes: every task and result pickled across a process boundary
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=LOCAL_DASHBOARD) as cluster:
        res, info = simulate_distributed(plant, scheduler=cluster.scheduler_address, parts=3)
    assert [p.hosts for p in info.parts] == [(0, 1), (1, 2), (2, 3)]

    # every figure exact, carbon's too (its per-host sums are put side by side, then added over all hosts)
    a, b = (json.loads(json.dumps(r.summary.to_dict(), default=str)) for r in (one, res))
    b.pop("partition")
    assert a == b
    assert one.hosts.equals(res.hosts) and one.vms.equals(res.vms)
    for acc in ("vm_acc", "host_acc"):
        for kind in ("sum", "max", "series"):
            x, y = getattr(getattr(one, acc), kind), getattr(getattr(res, acc), kind)
            assert list(x) == list(y) and all(np.array_equal(x[k], y[k]) for k in x), (acc, kind)

    # how the work was split (summary.json's partition section)
    part = res.summary["partition"]
    T = one.ctx.grid.n_steps  # 60: one hour of one-minute steps
    rows = one.ctx.vms.n  # engine rows: 12 VMs' first runs + 6 restarted on host 2
    assert rows == 18 and part["workers"] == 2 and part["parts"] == 3
    assert part["vm_steps"] == rows * T and part["host_steps"] == 3 * T
    assert [p["vm_steps"] for p in part["by_part"]] == [6 * T, 6 * T, 6 * T]  # host 0's 6, host 1's 6, the 6 restarts
    ws = part["by_worker"]
    assert set(ws) == {p.worker for p in info.parts} and all(w.startswith("tcp://") for w in ws)
    assert sum(w["parts"] for w in ws.values()) == 3 and sum(w["vm_steps"] for w in ws.values()) == rows * T
    assert sum(w["host_steps"] for w in ws.values()) == 3 * T
    assert all(w["compute_s"] >= w["engine_s"] > 0 and w["cpu_s"] > 0 for w in ws.values())
    # bytes: each task carries the pickled plan (plant, placement, schedule, failure run), each result its arrays
    plan_bytes = len(pickle.dumps(plan_run(plant)[0], protocol=5))
    assert all(plan_bytes < p["bytes_in"] < plan_bytes + 200 for p in part["by_part"])
    assert part["bytes_in"] == sum(p["bytes_in"] for p in part["by_part"]) == sum(w["bytes_in"] for w in ws.values())
    assert all(p["bytes_out"] > 6 * 8 * 4 for p in part["by_part"])  # at least its rows' four float64 sums
    assert part["bytes_out"] == sum(w["bytes_out"] for w in ws.values())
