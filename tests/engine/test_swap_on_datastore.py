"""Host swap on a datastore: swap I/O loads the datastore and its latency is the fault cost.

The device of every test is an M/M/1 station with a 1 ms service time: ``one-ms-disk``, reads and
writes both 1 ms at queue depth 1 and 1,000 IOPS, parallelism 1, on a one-drive JBOD with 4 KiB
I/Os (the storage block size), no controller. The datastore model's latency is then exactly the
M/M/1 response time ``R = S / (1 - rho)`` with ``S = 1 ms`` and ``rho = lambda S``.
"""

from __future__ import annotations

import numpy as np
import pytest

from densim.engine import simulate
from densim.plant import resolve
from densim.errors import InputError
from densim.models import memory as M
from densim.models.devices import DeviceSpec
from densim.models.storage.vmio import DatastoreModel, SwapQueues, datastore_latency_s
from densim.spec import scenario_from_dict

DISK = {"name": "one-ms-disk", "kind": "other", "read_latency": "1 ms", "write_latency": "1 ms",
        "read_iops": 1000, "write_iops": 1000, "parallelism": 1}
S = 1e-3


def _ds():
    return DatastoreModel.build("ds", DeviceSpec.model_validate(DISK), 1, "jbod", None, 1, 4096)


def test_the_test_datastore_is_mm1():
    lat, util, sat = datastore_latency_s(_ds(), np.array([0.0, 250.0, 500.0]), 0.5)
    np.testing.assert_allclose(util, [0.0, 0.25, 0.5])
    np.testing.assert_allclose(lat, [S, S / 0.75, S / 0.5], rtol=1e-12)


def _solve(faults_per_s, other_iops):
    """One VM on one host, swapping to slot 0 of a one-slot datastore, one step."""
    f = M.FaultRates(compressed=np.zeros(1), cache=np.zeros(1), store=np.array([faults_per_s]), guest=np.zeros(1),
                     miss_ratio=np.ones(1))
    q = SwapQueues([_ds()], [0], np.array([[other_iops]]), np.array([[other_iops * 0.5]]))
    return M.solve_throughput_on_datastores(
        f, np.zeros(1, np.int64), 1, np.zeros(1, np.int64), 1, queue=q,
        costs=M.FaultCosts(software_s=0.0, writes_per_fault=1.0), overlap=1.0)


def test_hand_calculated_fixed_point_swap_alone():
    # F = 500 faults/s of unconstrained work, theta = 1, t_sw = 0, w = 1 swap-out write per fault.
    #   X = 1 / (1 + F R)                      (throughput, slowdown = 1/X)
    #   lambda = F X (1 + w) = 1000 X          (swap-in reads + swap-out writes)
    #   R = S / (1 - lambda S) = 1 ms / (1 - X)
    # => X (1 + 0.5 / (1 - X)) = 1  =>  X (1.5 - X) = 1 - X  =>  X^2 - 2.5 X + 1 = 0
    # => X = (2.5 - sqrt(6.25 - 4)) / 2 = (2.5 - 1.5) / 2 = 0.5
    # so slowdown 2, lambda = 500 IOPS, rho = 0.5, R = 2 ms (the unloaded device alone: 1 ms, X 2/3).
    tp = _solve(500.0, 0.0)
    assert tp.throughput[0] == pytest.approx(0.5, rel=1e-9)
    assert tp.slowdown[0] == pytest.approx(2.0, rel=1e-9)
    assert tp.extra["store_iops_seg"][0] == pytest.approx(500.0, rel=1e-9)
    assert tp.extra["store_latency_s"][0] == pytest.approx(2e-3, rel=1e-9)
    assert tp.fault_rate_per_s[0] == pytest.approx(250.0, rel=1e-9)  # F X


def test_hand_calculated_fixed_point_with_other_io():
    # Same VM, plus 250 IOPS of other VMs' I/O on the datastore (rho_other = 0.25):
    #   rho = 0.25 + X,  R = 1 ms / (0.75 - X),  X (1 + 0.5 / (0.75 - X)) = 1
    # => X (1.25 - X) = 0.75 - X  =>  X^2 - 2.25 X + 0.75 = 0
    # => X = (2.25 - sqrt(5.0625 - 3)) / 2 = (2.25 - 1.4361407) / 2 = 0.4069297
    # slowdown 1 / X = 2.457426; lambda_swap = 1000 X = 406.93 IOPS; rho = 0.6569297;
    # R = 1 ms / 0.3430703 = 2.914855 ms -- up from 2 ms without the other I/O.
    x = (2.25 - np.sqrt(2.25**2 - 3.0)) / 2
    assert x == pytest.approx(0.4069297, rel=1e-6)
    tp = _solve(500.0, 250.0)
    assert tp.throughput[0] == pytest.approx(x, rel=1e-9)
    assert tp.slowdown[0] == pytest.approx(2.457426, rel=1e-6)
    assert tp.extra["store_iops_seg"][0] == pytest.approx(1000 * x, rel=1e-9)
    assert tp.extra["store_latency_s"][0] == pytest.approx(2.914855e-3, rel=1e-6)


def _scenario(*, swap_datastore="swap-ds", other_iops=0.0, cache=False, **mem):
    vms = [{"name": "hot", "count": 1, "vcpus": 1, "vcpu_speed": "2000 MHz", "memory": "32 GiB",
            "profile": {"kind": "constant", "mean": 1.0},
            "workload": {"memory_profile": "all-active"}, "datastore": "swap-ds"}]
    if other_iops:
        # 4 vCPUs: it does not fit next to 'hot' (4 cores, CPU over-commit 1), so it runs on a second
        # host with memory to spare, and its I/O reaches the shared datastore from there
        vms.append({"name": "noisy", "count": 1, "vcpus": 4, "vcpu_speed": "2000 MHz", "memory": "1 GiB",
                    "profile": {"kind": "constant", "mean": 0.1}, "datastore": "swap-ds",
                    "workload": {"iops": other_iops, "read_fraction": 0.5, "memory_profile": "all-active"}})
    memory = {"model": "vsphere-like", "compression": False, "zero_page_fraction": 0.0, "min_free": False,
              "hypervisor_memory": 0, "overhead_per_vm": 0, "fault_software_time": "0 s", "writes_per_fault": 1,
              "swap_device": "one-ms-disk", **mem}
    if swap_datastore:
        memory["swap_datastore"] = swap_datastore
    if cache:
        memory.update(swap_cache_device="one-ms-disk", swap_cache_size="1 GiB")
    return scenario_from_dict({
        "name": "swap-ds",
        "parts": {"devices": [DISK], "memory_workloads": [
            {"name": "all-active", "kind": "generic", "active_fraction": 1.0, "access_rate_per_s": 1000,
             "balloon_active_share": 0.0, "compressible_fraction": 0.0, "overlap": 1.0}]},
        "cluster": {"hosts": [{"count": 2 if other_iops else 1, "memory": "16 GiB",
                               "cpu": {"sockets": 1, "cores_per_socket": 4, "base_clock": "2000 MHz"},
                               "power": {"model": "linear", "idle": "100 W", "peak": "200 W"}}]},
        "vms": vms,
        "placement": {"policy": "first-fit", "memory_overcommit": 3.0},
        "simulation": {"step": "5 min", "horizon": "10 min", "seed": 1},
        "storage": {"model": "queueing", "block_size": "4 KiB",
                    "datastores": [{"name": "swap-ds", "device": "one-ms-disk", "raid": "jbod", "drives": 1}]},
        "memory": memory,
    })


def _vm(res, name, col):
    df = res.vms
    return float(df.filter(df["vm"].str.starts_with(name))[col][0])


def test_engine_hand_calculated_swap_loads_the_datastore():
    # One 16 GiB host (no hypervisor memory, overheads or minFree), one 32 GiB VM, all of it active,
    # no balloon share, no compression: the host swaps 16 GiB of the VM's active set, so the resident
    # fraction is f = 0.5 and (random replacement) the miss ratio m = 0.5. At 100 % CPU the VM makes
    # 1,000 accesses/s, so F = 500 faults/s, all on host swap -> exactly the fixed point above:
    # X = 0.5 (slowdown 2), 250 faults/s = 250 swap-in reads + 250 swap-out writes = 500 IOPS on the
    # datastore, rho = 0.5, R = 1 ms / (1 - 0.5) = 2 ms.
    res = simulate(resolve(_scenario()))
    assert _vm(res, "hot", "mem_slowdown_max") == pytest.approx(2.0, rel=1e-5)
    assert _vm(res, "hot", "mem_fault_rate_per_s_mean") == pytest.approx(250.0, rel=1e-5)
    assert _vm(res, "hot", "io_iops_mean") == pytest.approx(500.0, rel=1e-5)  # a VM's I/O includes its swap
    assert _vm(res, "hot", "io_latency_s_mean") == pytest.approx(2e-3, rel=1e-5)
    ds = res.summary["storage"]["datastores"]["swap-ds"]
    assert ds["mean_iops"] == pytest.approx(500.0, rel=1e-5)
    assert ds["mean_latency_s"] == pytest.approx(2e-3, rel=1e-5)
    assert ds["peak_utilisation"] == pytest.approx(0.5, rel=1e-5)
    assert res.summary["memory"]["swap_datastore"] == "swap-ds"
    assert res.summary["models"]["stages"] == ["memory", "storage"]

    # the same swap on the device (today's behaviour): same 1 ms device with M/M/1 queueing, so the same
    # fault cost, but the datastore sees none of it
    dev = simulate(resolve(_scenario(swap_datastore=None)))
    assert _vm(dev, "hot", "mem_slowdown_max") == pytest.approx(2.0, rel=1e-5)
    assert dev.summary["storage"]["datastores"]["swap-ds"]["mean_iops"] == 0.0


def test_other_vms_io_on_the_datastore_raises_the_swapping_vms_fault_cost():
    # 'noisy' runs on another host (no memory pressure there) but on the same shared datastore;
    # 'hot' still has 16 GiB swapped (F = 500/s).
    quiet = simulate(resolve(_scenario(other_iops=1e-9)))
    noisy = simulate(resolve(_scenario(other_iops=250.0)))
    # 250 IOPS of other I/O: X = 0.4069297 from the hand calculation above, R = 2.914855 ms
    assert _vm(quiet, "hot", "mem_slowdown_max") == pytest.approx(2.0, rel=1e-4)
    assert _vm(noisy, "hot", "mem_slowdown_max") == pytest.approx(2.457426, rel=1e-5)
    assert _vm(noisy, "hot", "io_latency_s_mean") == pytest.approx(2.914855e-3, rel=1e-5)
    assert _vm(noisy, "noisy", "io_latency_s_mean") == pytest.approx(2.914855e-3, rel=1e-5)  # the neighbour pays too
    # without the coupling the neighbour's I/O does not touch the swapping VM
    dev_noisy = simulate(resolve(_scenario(other_iops=250.0, swap_datastore=None)))
    assert _vm(dev_noisy, "hot", "mem_slowdown_max") == pytest.approx(2.0, rel=1e-4)


def test_swap_to_a_named_datastore_loads_that_datastore_only():
    sc = _scenario(swap_datastore="swap-ds")
    d = sc.model_dump(by_alias=True)
    d["storage"]["datastores"].append({"name": "vm-ds", "device": "one-ms-disk", "raid": "jbod", "drives": 1})
    d["vms"][0]["datastore"] = "vm-ds"
    res = simulate(resolve(scenario_from_dict(d)))
    dss = res.summary["storage"]["datastores"]
    assert dss["swap-ds"]["mean_iops"] == pytest.approx(500.0, rel=1e-5)
    assert dss["vm-ds"]["mean_iops"] == 0.0
    # 'vm': each VM's own datastore
    d["memory"]["swap_datastore"] = "vm"
    res = simulate(resolve(scenario_from_dict(d)))
    dss = res.summary["storage"]["datastores"]
    assert dss["vm-ds"]["mean_iops"] == pytest.approx(500.0, rel=1e-5)
    assert "swap-ds" not in dss or dss["swap-ds"]["mean_iops"] == 0.0


def test_swap_cache_device_and_datastore_together():
    # the first 1 GiB of the host's 16 GiB swap sits on the cache device (also 1 ms, but not shared)
    res = simulate(resolve(_scenario(cache=True)))
    sd = _vm(res, "hot", "mem_slowdown_max")
    assert 1.5 < sd < 2.0  # 1/16 of the faults avoid the loaded datastore
    ds = res.summary["storage"]["datastores"]["swap-ds"]
    assert 0 < ds["mean_iops"] < 500.0


def test_bad_swap_datastore_settings_are_input_errors():
    with pytest.raises(InputError, match="unknown datastore"):
        simulate(resolve(_scenario(swap_datastore="nope")))
    sc = _scenario()
    d = sc.model_dump(by_alias=True)
    d["storage"] = {"model": "none"}
    d["vms"][0].pop("datastore")
    with pytest.raises(InputError, match="storage.model"):
        simulate(resolve(scenario_from_dict(d)))
