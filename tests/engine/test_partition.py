"""A run split by host partitions (densim.engine.partition) gives the single-process result, bit for bit."""

from __future__ import annotations

import json

import numpy as np
import pytest

from densim.engine import simulate
from densim.engine.partition import host_ranges, part_vms, simulate_in_parts
from densim.errors import InputError
from densim.plant import resolve
from tests.core.helpers import const_vms, host, scenario
from tests.engine.test_cpu_kernel import _mixed


def summary_json(res) -> str:
    d = dict(res.summary.to_dict())
    d.pop("partition", None)
    return json.dumps(d, sort_keys=True, default=str)


def same_result(a, b) -> None:
    """Every figure of two results is equal: summary, tables, accumulator arrays (a run split over Dask
    adds a ``partition`` section saying how the work was split; it is not a figure of the run)."""
    assert summary_json(a) == summary_json(b)
    assert a.hosts.equals(b.hosts) and a.vms.equals(b.vms)
    for acc in ("vm_acc", "host_acc"):
        x, y = getattr(a, acc), getattr(b, acc)
        for kind in ("sum", "max", "series"):
            dx, dy = getattr(x, kind), getattr(y, kind)
            assert list(dx) == list(dy), (acc, kind)
            for k in dx:
                assert np.array_equal(dx[k], dy[k]), (acc, kind, k)
    hs_a, hs_b = a.host_steps(), b.host_steps()
    assert (hs_a is None and hs_b is None) or hs_a.equals(hs_b)


def test_host_ranges_cover_every_host_once_and_balance_vms():
    # 10 hosts; VMs on hosts 0-3 only (4 each) and 2 VMs placed nowhere: two parts of 8 VMs each
    host_of_vm = np.array([0] * 4 + [1] * 4 + [2] * 4 + [3] * 4 + [-1, -1])
    r = host_ranges(host_of_vm, 10, 2)
    assert r[0][0] == 0 and r[-1][1] == 10 and all(a[1] == b[0] for a, b in zip(r, r[1:]))
    assert r == [(0, 2), (2, 10)]
    assert part_vms(host_of_vm, 0, 2, first=True).tolist() == [0, 1, 2, 3, 4, 5, 6, 7, 16, 17]
    assert part_vms(host_of_vm, 2, 10, first=False).tolist() == list(range(8, 16))
    assert host_ranges(host_of_vm, 3, 9) == [(0, 1), (1, 2), (2, 3)]  # never more parts than hosts


@pytest.mark.parametrize("parts", [1, 2, 3, 5])
def test_parts_give_the_single_process_result(parts):
    # overloaded hosts, CPU Ready, VMs placed nowhere, three power models, several chunks, host series
    plant = resolve(_mixed(chunk=4))
    same_result(simulate(plant), simulate_in_parts(plant, parts))


def test_vm_series_and_unused_hosts_off():
    sc = scenario([host(count=6, cores=4)], [const_vms("a", 7, 2, 2000, 0.7), const_vms("b", 5, 1, 3000, 0.9)],
                  horizon="1 h", cpu_oc=1.5, unused="off", output={"vm_timeseries": "on"})
    plant = resolve(sc)
    one = simulate(plant)
    assert one.vm_acc.keep and one.summary["hosts_powered_on"] < 6
    same_result(one, simulate_in_parts(plant, 3))


def test_swap_on_a_shared_datastore_is_refused():
    # the memory stage swaps to the storage stage's datastore 'swap-ds', one array for every host: a part
    # alone cannot compute its queue (tests/engine/test_partition_features.py has the other refusals)
    from tests.engine.test_swap_on_datastore import _scenario

    with pytest.raises(InputError, match=r"^swap-ds:memory.swap_datastore: the VMs' host swap is on datastore 'swap-ds', "
                                         r"one array \(scope: shared\)"):
        simulate_in_parts(resolve(_scenario(other_iops=0.0)), 2)


def test_planetlab_parts(traces, repo):
    from densim.plant import load_plant

    plant = load_plant(repo / "examples" / "planetlab.yaml")
    same_result(simulate(plant), simulate_in_parts(plant, 4))
