"""Page sharing by guest image in the engine's memory stage (``vms[].workload.guest_image``, issue 30 item 5).

Every case: one host of 16 GiB (no hypervisor memory, no per-VM overhead, no minFree, no compression), VMs of 4 GiB
with half their memory active (``memory_active_fraction: 0.5``: 2 GiB idle each). The host is short by far more than
sharing can free, so the pipeline takes every VM's whole sharing room and ``mem_shared_gib`` is that room:

    zero + self-shared pages, from idle memory:  (z + s) m            = (0.05 + 0.03) x 4 = 0.32 GiB
    inter-VM (memory.inter_vm_sharing: true):    f (n - c) / n  of m  (f = 0.30, c = min(n, sockets))

catalog ``guest_images``: linux-server-stack z 0.05, s 0.03, f 0.30; diverse-server the same fractions, but every VM
naming it is its own image (``unique``), so n = 1 and nothing is shared between VMs.
"""

from __future__ import annotations

import numpy as np
import pytest

from densim.engine import simulate
from densim.errors import ScenarioInvalid
from densim.plant import resolve
from densim.spec import scenario_from_dict

GIB = float(1 << 30)


def _scenario(groups, *, sockets=1, inter_vm=True, lifetimes=False, memory_model="vsphere-like"):
    vms = []
    for name, count, image in groups:
        g = {"name": name, "count": count, "vcpus": 1, "vcpu_speed": "2000 MHz", "memory": "4 GiB",
             "profile": {"kind": "constant", "mean": 0.2}, "workload": {"memory_active_fraction": 0.5}}
        if image is not None:
            g["workload"]["guest_image"] = image
        if lifetimes:
            g["arrivals"] = {"over": "1 s", "lifetime": "1 h", "lifetime_sigma": 0.0}
        vms.append(g)
    return scenario_from_dict({
        "name": "image-sharing",
        "cluster": {"hosts": [{"name": "h", "count": 1, "memory": "16 GiB",
                               "cpu": {"sockets": sockets, "cores_per_socket": 16 // sockets, "base_clock": "2000 MHz"},
                               "power": {"model": "linear", "idle": "100 W", "peak": "200 W"}}]},
        "vms": vms,
        "placement": {"policy": "first-fit", "memory_overcommit": 4.0},
        "memory": {"model": memory_model, "hypervisor_memory": 0, "overhead_per_vm": 0, "min_free": False,
                   "compression": False, "zero_page_fraction": 0.05, "inter_vm_sharing": inter_vm,
                   "inter_vm_sharing_fraction": 0.0},
        "simulation": {"step": "5 min", "horizon": "30 min", "seed": 1},
        "output": {"vm_timeseries": "on" if lifetimes else "off"},
        **({"scheduling": {"lifetimes": "on"}} if lifetimes else {}),
    })


def _shared_gib(sc) -> np.ndarray:
    res = simulate(resolve(sc), seed=1)
    return res.vm_acc.sum["mem_shared_gib"] / res.ctx.grid.n_steps  # the same every step


def test_eight_vms_of_one_image_share_seven_eighths_of_its_common_pages():
    # n = 8, one socket: c = 1; 0.32 + 0.30 x 7/8 x 4 = 0.32 + 1.05 = 1.37 GiB per VM (deficit 32 - 16 = 16 GiB > 8 x 1.37)
    got = _shared_gib(_scenario([("web", 8, "linux-server-stack")]))
    np.testing.assert_allclose(got, 1.37, rtol=1e-6)


def test_one_copy_per_numa_node():
    # two sockets: c = 2 copies kept; 0.32 + 0.30 x 6/8 x 4 = 0.32 + 0.90 = 1.22 GiB per VM
    got = _shared_gib(_scenario([("web", 8, "linux-server-stack")], sockets=2))
    np.testing.assert_allclose(got, 1.22, rtol=1e-6)


def test_inter_vm_sharing_off_leaves_zero_and_self_shared_pages():
    # salting (inter-VM sharing off, ESXi's default since 6.0): (z + s) m = 0.32 GiB per VM
    got = _shared_gib(_scenario([("web", 8, "linux-server-stack")], inter_vm=False))
    np.testing.assert_allclose(got, 0.32, rtol=1e-6)


def test_image_mix_decides_what_is_shared():
    # 4 VMs of one image: 0.32 + 0.30 x 3/4 x 4 = 1.22 GiB; 4 diverse VMs (each its own image): 0.32 GiB;
    # 4 VMs naming no image: the scenario's zero_page_fraction of idle memory, 0.05 x 2 = 0.10 GiB, and
    # inter_vm_sharing_fraction 0. Deficit 48 - 16 = 32 GiB > 4 x (1.22 + 0.32 + 0.10) = 6.56 GiB.
    got = _shared_gib(_scenario([("web", 4, "linux-server-stack"), ("odd", 4, "diverse-server"), ("plain", 4, None)]))
    np.testing.assert_allclose(got[:4], 1.22, rtol=1e-6)
    np.testing.assert_allclose(got[4:8], 0.32, rtol=1e-6)
    np.testing.assert_allclose(got[8:], 0.10, rtol=1e-6)


def test_only_vms_alive_on_the_host_count():
    # twelve VMs of one image arrive within the first second; four of them live 10 min, eight an hour (the run: 30
    # min). Steps 300-600 s: all twelve alive, n = 12: 0.32 + 0.30 x 11/12 x 4 = 1.42 GiB each (deficit 48 - 16 =
    # 32 GiB > 12 x 1.42). From 900 s on only the eight: n = 8, 1.37 GiB each (deficit 16 GiB > 8 x 1.37). The
    # counts are of the VMs alive in the step, not of every VM placed on the host over the run.
    sc = _scenario([("long", 8, "linux-server-stack"), ("short", 4, "linux-server-stack")], lifetimes=True)
    sc = sc.model_copy(update={"vms": [sc.vms[0], sc.vms[1].model_copy(update={
        "arrivals": sc.vms[1].arrivals.model_copy(update={"lifetime_s": 600.0})})]})
    res = simulate(resolve(sc), seed=1)
    series = res.vm_acc.series["mem_shared_gib"]
    np.testing.assert_allclose(series[1], 1.42, rtol=1e-6)
    np.testing.assert_allclose(series[3:, :8], 1.37, rtol=1e-6)
    np.testing.assert_allclose(series[3:, 8:], 0.0)


def test_unknown_image_is_refused_with_its_field():
    with pytest.raises(ScenarioInvalid, match=r"vms\[0\]\.workload\.guest_image"):
        resolve(_scenario([("web", 2, "no-such-image")]))


def test_image_without_the_memory_model_is_refused():
    with pytest.raises(ScenarioInvalid, match=r"vms\[0\]\.workload\.guest_image.*memory\.model"):
        resolve(_scenario([("web", 2, "linux-server-stack")], memory_model="none"))
