"""Memory and storage quality of service in ``densim plan`` (densim.tools.plan.qos)."""

from __future__ import annotations

import numpy as np
import pytest

from densim.tools.plan import qos as plan_qos
from densim.tools.plan.capacity import PlanSpec, plan
from densim.workloads.inventory import build_inventory
from densim.catalog.core import builtin_catalog
from densim.spec.memory import MemorySettings

GIB = 2**30
CAT = builtin_catalog()
HOST = {"name": "h", "cpu": {"sockets": 1, "cores_per_socket": 16, "threads_per_core": 1, "base_clock": "2 GHz"},
        "memory": "64 GiB", "power": {"model": "linear", "idle": "100 W", "peak": "200 W"}, "price_usd": 5000}


def inventory(n=8, steps=12, active_gib=6.0, cfg_gib=8.0, util=0.5, disk_MBps=None, seed=0):
    """n VMs of 2 vCPUs at 2 GHz and cfg_gib GiB, using util of their CPU and active_gib GiB."""
    rng = np.random.default_rng(seed)
    cpu = np.full((steps, n), util * 2 * 2000.0) * rng.uniform(0.9, 1.0, (steps, n))
    mem_used = np.full((steps, n), active_gib * GIB)
    kw = {}
    if disk_MBps is not None:
        kw = dict(disk_read_Bps=np.full((steps, n), disk_MBps * 0.5e6), disk_write_Bps=np.full((steps, n), disk_MBps * 0.5e6))
    return build_inventory([f"vm{i}" for i in range(n)], np.full(n, 2), np.full(n, 2000.0), np.full(n, cfg_gib * GIB),
                           cpu_mhz=cpu, mem_used_bytes=mem_used, **kw)


def spec(**over):
    d = {"policy": "first-fit-decreasing", "windows": 12, "qos": {"cpu_ready_pct": 50, "vcpus_per_core": 8, "memory_overcommit": 1.0},
         "candidates": [HOST]}
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(d.get(k), dict):
            d[k] = {**d[k], **v}
        else:
            d[k] = v
    return PlanSpec.model_validate(d)


# ------------------------------------------------------------------------------------ storage


def test_host_io_sums_the_vms_of_each_host():
    # 3 VMs on 2 hosts, 4 KiB blocks: VM0 and VM2 on host 0 read 4,096 and 8,192 B/s (1 + 2 IOPS)
    # and write 0 and 4,096 B/s (0 + 1 IOPS): host 0 does 4 IOPS of which 3 reads; host 1 (VM1) 2 IOPS.
    r = np.array([[4096.0, 0.0, 8192.0]])
    w = np.array([[0.0, 8192.0, 4096.0]])
    iops, rd = plan_qos.host_io(np.array([0, 1, 0]), 2, r, w, 4096.0)
    np.testing.assert_allclose(iops, [[4.0, 2.0]])
    np.testing.assert_allclose(rd, [[3.0, 0.0]])


def test_iops_budget_is_the_latency_bound_inverted():
    st = plan_qos.LocalStorage(device="intel-dc-s3710-400gb", drives=2, raid="raid0")
    ds = plan_qos.datastore_model(st, CAT)
    cap = plan_qos.max_iops_at_latency(ds, st, 0.5e-3, 0.7)
    lat = lambda x: plan_qos.latency_s(ds, st, np.array([[x]]), np.array([[0.7 * x]]))[0][0, 0]  # noqa: E731
    assert lat(cap) <= 0.5e-3 < lat(cap * 1.01)
    # a bound below the idle latency leaves no budget; a larger bound a larger one
    assert plan_qos.max_iops_at_latency(ds, st, 1e-6, 0.7) == 0.0
    assert plan_qos.max_iops_at_latency(ds, st, 2e-3, 0.7) > cap


def test_plan_keeps_every_host_within_the_io_latency_bound():
    # 8 VMs at 0.1 MB/s each = 25 IOPS of 4 KiB. CPU alone (16 cores, 8 VMs of 2 vCPUs) puts all 8
    # on one host, 200 IOPS; one 7.2K SATA drive (about 110 IOPS flat out) keeps its mean latency
    # within 30 ms only up to about 78 IOPS, so at most 3 VMs share a host: 3 hosts.
    inv = inventory(disk_MBps=0.1024)
    free = plan(inv, spec()).results[0]
    sata = dict(HOST, storage={"device": "sata-7k2-2tb", "drives": 1, "raid": "jbod"})
    res = plan(inv, spec(qos={"io_latency_ms": 30.0}, candidates=[sata])).results[0]
    assert free.n_hosts == 1 and res.feasible
    assert res.n_hosts > free.n_hosts
    assert res.io_latency_worst_ms <= 30.0
    assert 75 < res.io_budget_iops < 110
    assert res.n_hosts == 3 and res.lower_bound_hosts == 3


def test_a_vm_too_busy_for_any_datastore_is_named():
    inv = inventory(n=2, disk_MBps=40.96)  # 10,000 IOPS of 4 KiB per VM on one SATA drive
    sata = dict(HOST, storage={"device": "sata-7k2-2tb"})
    res = plan(inv, spec(qos={"io_latency_ms": 30.0}, candidates=[sata])).results[0]
    assert not res.feasible and "disk I/O peak of 10,000 IOPS exceeds a host's budget" in res.reason


def test_storage_without_disk_series_is_noted_not_checked():
    sata = dict(HOST, storage={"device": "sata-7k2-2tb"})
    res = plan(inventory(), spec(candidates=[sata])).results[0]
    assert res.feasible and any("no disk read/write series" in n for n in res.notes)


# ------------------------------------------------------------------------------------ memory


def test_memory_check_is_quiet_while_memory_fits():
    host_of = np.zeros(4, dtype=np.int64)
    cpu = np.full((3, 4), 2000.0)
    s = MemorySettings(model="vsphere-like")
    mc = plan_qos.memory_check(host_of, 1, 64 * GIB, np.full(4, 8 * GIB), np.full(4, 4000.0), cpu, None, s, CAT)
    assert mc.hosts_short == 0 and (mc.slowdown_worst == 1.0).all()


def test_memory_check_slows_vms_whose_active_memory_is_swapped():
    # 8 VMs x 8 GiB on one 64 GiB host with 7.95 GiB active each: configured + overheads exceed the
    # host by about 1.7 GiB (50 MiB overhead per VM, minFree 1.26 GiB), idle memory (0.05 GiB each)
    # cannot cover it, so active pages go to swap and fault.
    host_of = np.zeros(8, dtype=np.int64)
    inv = inventory(active_gib=7.95)
    s = MemorySettings(model="vsphere-like", swap_device="fc-san-lun")
    mc = plan_qos.memory_check(host_of, 1, 64 * GIB, inv.mem_bytes, inv.capacity_mhz, inv.cpu_mhz, inv.mem_used_bytes, s, CAT)
    assert mc.hosts_short == 1 and mc.slowdown_worst[0] > 1.0 and mc.swapped_gib_peak[0] > 0


def test_plan_lowers_memory_overcommit_until_the_slowdown_bound_holds():
    # 16 VMs x 8 GiB with 7.95 GiB active on 64 GiB hosts. At 2x memory over-commit two hosts would
    # carry all 16 VMs (CPU allows 8 per host... 16 cores / 2 vCPUs), but every host would then swap
    # active memory. With a 2 % slowdown bound the plan must lower the over-commit until no VM
    # slows by more than 2 %; with a loose bound it keeps 2x.
    inv = inventory(n=16, active_gib=7.95)
    mem = {"model": "vsphere-like", "swap_device": "fc-san-lun"}
    loose = plan(inv, spec(qos={"memory_overcommit": 2.0, "memory_slowdown": 100.0, "vcpus_per_core": 2}, memory=mem)).results[0]
    tight = plan(inv, spec(qos={"memory_overcommit": 2.0, "memory_slowdown": 1.02, "vcpus_per_core": 2}, memory=mem)).results[0]
    assert loose.feasible and tight.feasible
    assert loose.memory_overcommit_used == 2.0 and loose.mem_slowdown_worst > 1.02
    assert tight.memory_overcommit_used < 2.0 and tight.mem_slowdown_worst <= 1.02
    assert tight.n_hosts > loose.n_hosts


def test_unknown_swap_device_is_an_input_error():
    from densim.errors import InputError

    with pytest.raises(InputError, match="memory.swap_device"):
        plan(inventory(), spec(memory={"model": "vsphere-like", "swap_device": "floppy"}))


def test_qos_example_runs_on_a_small_inventory(tmp_path):
    # examples/planning/candidates-qos.yaml as shipped, on 6 VMs with memory and disk series.
    from pathlib import Path

    from densim.tools.plan.capacity import load_plan_spec
    from densim.tools.plan.report import write_outputs
    from densim.workloads.formats import load_inventory

    from .fixtures import small_workload, write_generic_csv

    root = Path(__file__).resolve().parents[2]
    spec_ = load_plan_spec(root / "examples" / "planning" / "candidates-qos.yaml")
    inv = load_inventory(write_generic_csv(tmp_path / "w.csv", small_workload(6, 24)))
    assert inv.has_disk
    res = plan(inv, spec_)
    summary = write_outputs(res, tmp_path / "out")
    rows = {r["candidate"]: r for r in summary["ranking"]}
    ssd = next(r for name, r in rows.items() if "S3710" in name)
    assert ssd["feasible"] and ssd["io_latency_worst_ms"] <= spec_.qos.io_latency_ms
    assert ssd["mem_slowdown_worst"] <= spec_.qos.memory_slowdown
    assert summary["memory"]["model"] == "vsphere-like" and len(summary["storage"]) == 2
    html = (tmp_path / "out" / "report.html").read_text()
    assert "memory slowdown" in html and "mean I/O latency" in html


def test_cp_sat_is_skipped_when_affinity_groups_must_share_a_host():
    # CP-SAT's model has no affinity constraint, so it must not replace a placement that keeps the
    # groups together
    inv = inventory(n=6)
    inv = build_inventory(inv.names, inv.vcpus, inv.vcpu_mhz, inv.mem_bytes, cpu_mhz=inv.cpu_mhz,
                          mem_used_bytes=inv.mem_used_bytes, tags={"affinity": ["a", "a", "", "", "b", "b"]})
    res = plan(inv, spec(optimise={"enabled": True})).results[0]
    assert res.optimiser["status"] == "SKIPPED" and "affinity" in res.optimiser["reason"]
    assert res.host_of_vm[0] == res.host_of_vm[1] and res.host_of_vm[4] == res.host_of_vm[5]


def test_example_candidates_files_validate_against_the_published_schema():
    import json
    from pathlib import Path

    import jsonschema
    import yaml

    root = Path(__file__).resolve().parents[2]
    schema = json.loads((root / "docs" / "reference" / "plan.schema.json").read_text())
    for f in sorted((root / "examples" / "planning").glob("*.yaml")):
        jsonschema.validate(yaml.safe_load(f.read_text()), schema)
    bad = {"candidates": [dict(HOST, storage={"device": "x", "drives": 0})]}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)


def test_bad_candidate_storage_names_the_field(tmp_path):
    from densim.tools.plan.capacity import load_plan_spec
    from densim.errors import InputError

    p = tmp_path / "c.yaml"
    p.write_text("candidates:\n  - name: h\n    cpu: {cores_per_socket: 8, base_clock: 2 GHz}\n    memory: 64 GiB\n"
                 "    power: {model: linear, idle: 100 W, peak: 200 W}\n    price_usd: 1\n"
                 "    storage: {device: sata-7k2-2tb, drives: 2, raid: raid5}\n")
    with pytest.raises(InputError, match=r"candidates\[0\]\.storage: .*raid5 needs at least 3 drives, got 2"):
        load_plan_spec(p)
    sata = dict(HOST, storage={"device": "floppy-1.44mb"})
    with pytest.raises(InputError, match=r"candidates\.h\.storage.*floppy"):
        plan(inventory(disk_MBps=0.1), spec(candidates=[sata]))


def test_plan_refuses_swap_on_a_datastore(tmp_path):
    # the plan replays memory without the engine's storage stage: swap_datastore cannot be honoured
    from densim.tools.plan.capacity import load_plan_spec
    from densim.errors import InputError

    f = tmp_path / "c.yaml"
    f.write_text("candidates:\n  - {name: a, server: x}\nmemory: {model: vsphere-like, swap_datastore: vm}\n")
    with pytest.raises(InputError, match=r"memory: swap_datastore needs the engine's storage stage"):
        load_plan_spec(f)
