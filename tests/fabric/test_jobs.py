"""Batch jobs on shared storage: hand-calculable micro-scenarios, invariants and bad input."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from densim.errors import InputError
from densim.models.devices import DeviceSpec
from densim.models.fabric import drive_s_per_byte
from densim.models.jobs import simulate_jobs
from densim.plant.core import catalog_for, run_fabric
from densim.plant.fabric import build_system
from densim.catalog.core import builtin_catalog
from densim.spec.loader import scenario_from_dict

GB = 1e9


def get_device():
    return builtin_catalog().get("devices", "intel-dc-p4600-1.6tb", DeviceSpec)


def _scenario(tenants=1, *, stage=None, slots=4, vcpus=4, vms=1, hosts=1, storage="pool", drives=1,
              weights=None, transport=None, nic="connectx-4-2x40g-roce", extra_tenant=None, provisioning="thin",
              bw_limit=None):
    """A tiny world: ``tenants`` clusters of ``hosts`` hosts with ``vms`` VMs each, one job stage."""
    stage = stage or {"name": "work", "cpu_per_byte": 1e-8}
    profile = {
        "name": "toy",
        "input": 1 * GB,
        "replication": 1,
        "io_size": "1 MiB",
        "executor_cores": slots,
        "guest_cpu_per_io": 0,
        "stages": [stage],
    }
    target = {
        "name": "toy-jbof",
        "kind": "jbof",
        "controllers": 1,
        "ports_per_controller": 4,
        "port_speed": "100 Gbit/s",
        "controller_bandwidth": "100 GB/s",
        "controller_iops": 1e9,
        "latency": 0,
        "device": "intel-dc-p4600-1.6tb",
        "device_count": drives,
    }
    letters = "abcdefgh"[:tenants]
    ten = []
    for i, x in enumerate(letters):
        t = {"name": f"t-{x}", "hosts": f"h-{x}", "vms": f"v-{x}", "job": "toy", "storage": storage,
             "transport": transport or ("local-nvme" if storage == "local" else "nvmeof-rdma")}
        if storage != "local":
            t["storage_nic"] = nic
        if weights:
            t["weight"] = weights[i]
        if bw_limit:
            t["volume_bandwidth_limit"] = bw_limit
        ten.append(t)
    fabric = {"model": "fluid", "tenants": ten, "pools": [{"name": "pool", "target": "toy-jbof", "provisioning": provisioning}]}
    if storage == "local":
        fabric["local_storage"] = {"device": "intel-dc-p4600-1.6tb", "count": drives}
    return scenario_from_dict(
        {
            "parts": {"batch_profiles": [profile], "storage_targets": [target]},
            "cluster": {"hosts": [{"name": f"h-{x}", "count": hosts, "server": "dual-platinum-8180-768g"} for x in letters]},
            "vms": [{"name": f"v-{x}", "count": vms * hosts, "vcpus": vcpus, "memory": "8 GiB",
                     "profile": {"kind": "constant", "mean": 0.0}} for x in letters],
            "fabric": fabric,
        }
    )


def test_cpu_bound_stage_time_by_hand():
    # 1 GB, 1e-8 vCPU-s per byte, 4 task slots, no I/O: each task needs 1e-8 s per byte, so the VM
    # processes 4 / 1e-8 = 4e8 B/s and the stage takes 1e9 / 4e8 = 2.5 s; the vCPUs are 100 % user.
    res = run_fabric(_scenario(storage="local"))
    t = res.tenants[0]
    assert t["runtime_s"] == pytest.approx(2.5, rel=1e-9)
    assert t["vm_cpu_user"] == pytest.approx(1.0, rel=1e-9)
    assert t["stage_bottlenecks"] == ["cpu"]


def test_storage_bound_stage_runs_at_drive_bandwidth():
    # Read 1 GB, no CPU, 64 tasks on one P4600 (3.27 GB/s read, 559K IOPS: 1 MiB reads are
    # bandwidth-limited). 64 tasks ask far more than the drive gives, so the drive is full:
    # 1e9 / 3.27e9 = 0.3058 s.
    stage = {"name": "scan", "cpu_per_byte": 0, "read_data": 1.0}
    res = run_fabric(_scenario(stage=stage, slots=64, vcpus=64, storage="local"))
    t = res.tenants[0]
    assert t["runtime_s"] == pytest.approx(1e9 / 3.27e9, rel=1e-6)
    assert t["stage_bottlenecks"] == ["h-a#0/local-drives"]
    assert t["vm_iowait"] > 0.9  # the tasks wait on the drive


def test_two_equal_tenants_share_a_saturated_pool_fairly():
    # Modelling guide §5.2: T'/T = (1 - f_io) + n f_io with f_io = 1 (storage-bound), n = 2 -> 2x.
    stage = {"name": "scan", "cpu_per_byte": 0, "read_data": 1.0}
    one = run_fabric(_scenario(1, stage=stage, slots=64, vcpus=64)).tenants[0]["runtime_s"]
    two = run_fabric(_scenario(2, stage=stage, slots=64, vcpus=64)).tenants
    assert one == pytest.approx(1e9 / 3.27e9, rel=1e-6)
    assert [t["runtime_s"] for t in two] == pytest.approx([2 * one, 2 * one], rel=1e-6)


def test_weights_by_hand():
    # Weights 2:1 on one drive of bandwidth B: rates 2B/3 and B/3 while both run.
    # Heavy finishes V at t1 = V / (2B/3) = 1.5 V/B; light has done V/2 and finishes the other V/2
    # alone at B: t2 = 1.5 V/B + 0.5 V/B = 2 V/B (the drive never idles: 2V bytes at B).
    stage = {"name": "scan", "cpu_per_byte": 0, "read_data": 1.0}
    res = run_fabric(_scenario(2, stage=stage, slots=64, vcpus=64, weights=[2, 1]))
    v_over_b = 1e9 / 3.27e9
    assert res.tenants[0]["runtime_s"] == pytest.approx(1.5 * v_over_b, rel=1e-6)
    assert res.tenants[1]["runtime_s"] == pytest.approx(2.0 * v_over_b, rel=1e-6)


def test_bandwidth_limit_caps_a_volume():
    # A 500 MB/s QoS cap per volume: 1 GB of reads take 2 s even though the drive could do 3.27 GB/s.
    stage = {"name": "scan", "cpu_per_byte": 0, "read_data": 1.0}
    res = run_fabric(_scenario(stage=stage, slots=64, vcpus=64, bw_limit="500 MB/s"))
    assert res.tenants[0]["runtime_s"] == pytest.approx(2.0, rel=1e-6)


def test_replicated_write_loads_network_and_drives():
    # write_data 1 with replication 2 on 2 hosts x 1 VM: each VM's volume stores 2 bytes per byte
    # (its own + the other's replica) and the replica crosses the network: remote share
    # (n_vms - vms_per_host)/(n_vms - 1) = 1.
    stage = {"name": "out", "cpu_per_byte": 1e-8, "write_data": 1.0, "replicate": True}
    sc = _scenario(stage=stage, hosts=2, storage="local")
    profile = {**sc.parts.batch_profiles[0], "replication": 2}
    sc = sc.model_copy(update={"parts": sc.parts.model_copy(update={"batch_profiles": [profile]})})
    res = simulate_jobs(build_system(sc, catalog_for(sc)))
    t = res.tenants[0]
    assert t["storage_mb_per_s"] * t["runtime_s"] * 1e6 == pytest.approx(2 * 1e9, rel=1e-6)  # 1 GB stored twice
    nic = next(c for c in res.components if c["component"] == "h-a#0/data-nic-tx")
    # host 0's VM sends its 0.5 GB share of replicas over its data NIC
    assert nic["mean_utilisation"] * nic["capacity"] * t["runtime_s"] == pytest.approx(0.5e9, rel=1e-6)


@settings(max_examples=12, deadline=None)
@given(
    cpu=st.floats(1e-10, 5e-8),
    read=st.floats(0.0, 2.0),
    write=st.floats(0.0, 2.0),
    drives=st.integers(1, 3),
    slots=st.integers(1, 32),
    weights=st.lists(st.floats(0.5, 3.0), min_size=3, max_size=3),
)
def test_job_invariants(cpu, read, write, drives, slots, weights):
    stage = {"name": "s", "cpu_per_byte": cpu, "read_data": read, "write_data": write}
    runs = {}
    for n in (1, 2, 3):
        sc = _scenario(n, stage=stage, slots=slots, vcpus=32, drives=drives, weights=weights[:n])
        system = build_system(sc, catalog_for(sc))
        res = simulate_jobs(system)
        runs[n] = res
        # work is conserved: every byte each job must move reached storage
        for t in res.tenants:
            assert t["storage_mb_per_s"] * t["runtime_s"] * 1e6 == pytest.approx(1e9 * (read + write), rel=1e-6, abs=1e-3)
        # no component is above capacity on average (utilisation law), nor in any interval:
        assert all(c["mean_utilisation"] <= 1 + 1e-6 for c in res.components)
        # bottleneck bound (modelling guide §0.2): the makespan is at least the drives' total busy
        # time / drive count; and the pool's drives do exactly that much work (utilisation law)
        p4600 = get_device()
        drive_s = n * 1e9 * (read * drive_s_per_byte(p4600, 2**20, False) + write * drive_s_per_byte(p4600, 2**20, True))
        makespan = max(t["runtime_s"] for t in res.tenants)
        assert makespan >= drive_s / drives * (1 - 1e-6)
        pool = next(c for c in res.components if c["component"] == "pool/drives")
        assert pool["mean_utilisation"] * drives * makespan == pytest.approx(drive_s, rel=1e-6, abs=1e-9)
    # adding a tenant never makes tenant a faster
    assert runs[2].tenants[0]["runtime_s"] >= runs[1].tenants[0]["runtime_s"] * (1 - 1e-6)
    assert runs[3].tenants[0]["runtime_s"] >= runs[2].tenants[0]["runtime_s"] * (1 - 1e-6)


def test_bad_references_name_the_field():
    sc = _scenario()
    bad = sc.model_copy(update={"fabric": sc.fabric.model_copy(update={
        "tenants": [sc.fabric.tenants[0].model_copy(update={"job": "no-such-job"})]})})
    with pytest.raises(InputError, match=r"fabric\.tenants\[0\]\.job: no batch_profile named 'no-such-job'"):
        build_system(bad, catalog_for(bad))


def test_transport_needs_matching_adapter():
    sc = _scenario(nic="x710-da2-2x10g")
    with pytest.raises(InputError, match=r"fabric\.tenants\[0\]\.storage_nic: .*nvmeof-rdma.*runs on rdma"):
        build_system(sc, catalog_for(sc))


def test_thick_volumes_must_fit_the_pool():
    # 1 VM x (375 + 100) GB thick on a single 1.6 TB drive fits; 4 VMs (1.9 TB) do not.
    one, four = _scenario(vms=1, provisioning="thick"), _scenario(vms=4, provisioning="thick")
    build_system(one, catalog_for(one))
    with pytest.raises(InputError, match=r"fabric\.pools\[0\]: tenants' volumes need 1\.90 TB"):
        build_system(four, catalog_for(four))


def test_unknown_pool_is_a_validation_error():
    from densim.errors import ScenarioInvalid

    with pytest.raises(ScenarioInvalid, match="no pool named 'nope'"):
        _scenario(storage="nope")


def test_flow_series_step_means_by_hand():
    # One flow: 2 busy vCPUs on [0, 10), 4 on [10, 30), nothing after the job ends at 30 s.
    # Step [0, 20): (2*10 + 4*10) / 20 = 3.  Step [20, 40): (4*10 + 0*10) / 20 = 2.
    from densim.models.jobs import FlowSeries

    z = np.zeros((2, 1))
    ev = FlowSeries(np.array([0.0, 10.0, 30.0]), np.array([[2.0], [4.0]]), z, z, z)
    assert ev.step_means("busy_vcpus", np.array([0.0, 20.0, 40.0]))[:, 0] == pytest.approx([3.0, 2.0])


@pytest.mark.parametrize(
    "transport,nic",
    [("nvmeof-hw", "nvmeof-hba-2x40g"), ("nvmeof-rdma", "connectx-4-2x40g-roce"), ("nvme-tcp", "connectx-4-2x40g-roce"),
     ("iscsi", "connectx-4-2x40g-roce")],
)
def test_every_transport_runs(transport, nic):
    res = run_fabric(_scenario(transport=transport, nic=nic, stage={"name": "scan", "cpu_per_byte": 0, "read_data": 1.0}, slots=1))
    assert res.tenants[0]["runtime_s"] > 0


def test_latency_orders_transports_for_a_single_task():
    # One task reading 1 GB in 1 MiB I/Os at queue depth 1 over the same adapter and enclosure:
    # each I/O waits for the transport's added latency, so hw offload (10 us) < RDMA (15 us)
    # < NVMe/TCP (35 us) < iSCSI (200 us). 954 I/Os x 185 us extra = 0.18 s more for iSCSI than hw.
    stage = {"name": "scan", "cpu_per_byte": 0, "read_data": 1.0}
    t = {}
    for transport, nic in (("nvmeof-hw", "nvmeof-hba-2x40g"), ("nvmeof-rdma", "connectx-4-2x40g-roce"),
                           ("nvme-tcp", "connectx-4-2x40g-roce"), ("iscsi", "connectx-4-2x40g-roce")):
        t[transport] = run_fabric(_scenario(transport=transport, nic=nic, stage=stage, slots=1)).tenants[0]["runtime_s"]
    assert t["nvmeof-hw"] < t["nvmeof-rdma"] < t["nvme-tcp"] < t["iscsi"]
    assert t["iscsi"] - t["nvmeof-hw"] == pytest.approx(1e9 / 2**20 * 190e-6, rel=0.05)


def test_fibre_channel_san_runs():
    from densim.tools.studies.shared_flash import scenario_dict

    d = scenario_dict("iscsi-hdd", 1)
    d["fabric"]["pools"][0]["target"] = "fc-san-64x-10k"
    d["fabric"]["tenants"][0].update(transport="fibre-channel", storage_nic="qle2692-2x16g-fc")
    res = run_fabric(scenario_from_dict(d))
    assert res.tenants[0]["stage_bottlenecks"][1] == "pool/drives"


def test_single_task_does_not_queue_behind_itself():
    # One task reading 1 GB from a local P4600 in 1 MiB I/Os at queue depth 1. Each I/O takes
    # the QD1 access latency + the transfer: 85 us + 1048576 / 3.27e9 s = 85 + 320.67 = 405.67 us,
    # with no queueing (the arrival theorem: the only request in the system never waits).
    # 1e9 / 1048576 = 953.67 I/Os -> 0.38687 s.
    stage = {"name": "scan", "cpu_per_byte": 0, "read_data": 1.0}
    res = run_fabric(_scenario(stage=stage, slots=1, storage="local"))
    per_io = 85e-6 + 2**20 / 3.27e9
    assert res.tenants[0]["runtime_s"] == pytest.approx(1e9 / 2**20 * per_io, rel=1e-6)


def test_cpu_shares_add_up():
    # Per VM: user + system + iowait + idle = 1. Per host: user + system = busy, and the VM part
    # equals the VMs' busy vCPU-seconds over the host's logical CPUs (112 on 2 x 8180).
    stage = {"name": "mix", "cpu_per_byte": 2e-9, "read_data": 1.0, "write_data": 1.0}
    res = run_fabric(_scenario(stage=stage, slots=8, vcpus=16, vms=2))
    for v in res.vms:
        assert v["user"] + v["system"] + v["iowait"] + v["idle"] == pytest.approx(1.0, abs=1e-9)
    h = res.hosts[0]
    assert h["user"] + h["system"] == pytest.approx(h["cpu_busy"], rel=1e-9)
    vm_busy = sum((v["user"] + v["system"]) * 16 for v in res.vms) / 112
    assert h["cpu_vms"] == pytest.approx(vm_busy, rel=1e-9)


def test_guest_cpu_counts_both_ends_of_every_transfer():
    # Issue 15 (host CPU accounting): 4 VMs on 2 hosts, local drives, one reduce-like stage per byte:
    # read 1 (temp), fetch 1 shuffle byte, write 1 data byte with HDFS replication 2.
    # guest_cpu_per_io 100 us (1 MiB I/Os), guest_cpu_per_network_byte 1 ns, host stack 10,000 cycles/I/O.
    #   guest block I/O: its read 1 + its write 1 + the replica a peer stores on it 1 = 3 B
    #                    -> 3 / 1,048,576 x 100 us = 2.861e-10 s
    #   guest vNIC: shuffle fetched from the 3 other VMs 3/4, served to them 3/4, replica sent 1,
    #               received 1 = 3.5 B -> 3.5e-9 s          (system total 3.786e-9 s per byte)
    #   data NIC (other host only): shuffle 2/4 + replica 2/3 = 1.1667 B
    #   host storage stack: 3 B x 10,000 cycles / 1,048,576 B / 2.5e9 Hz = 1.144e-11 s
    # Before the audit the guest paid only its own write (not the peer's replica) and only the
    # bytes that cross the data NIC, one end each: 2 x 9.537e-11 + 1.1667e-9 = 1.357e-9 s.
    from densim.models.jobs import stage_terms

    mib = 1048576
    profile = {"name": "toy", "input": 1 * GB, "replication": 2, "io_size": "1 MiB", "executor_cores": 4,
               "guest_cpu_per_io": "100 us", "guest_cpu_per_network_byte": "1 ns",
               "stages": [{"name": "reduce", "cpu_per_byte": 0, "read_temp": 1.0, "shuffle_fetch": 1.0,
                           "write_data": 1.0, "replicate": True}]}
    sc = scenario_from_dict({
        "parts": {"batch_profiles": [profile]},
        "cluster": {"hosts": [{"name": "h", "count": 2, "server": "dual-platinum-8180-768g"}]},
        "vms": [{"name": "v", "count": 4, "vcpus": 4, "memory": "8 GiB", "profile": {"kind": "constant", "mean": 0.0}}],
        "fabric": {"model": "fluid", "local_storage": {"device": "intel-dc-p4600-1.6tb", "count": 1},
                   "tenants": [{"name": "t", "hosts": "h", "vms": "v", "job": "toy", "storage": "local",
                                "transport": "local-nvme"}]},
    })
    system = build_system(sc, catalog_for(sc))
    terms = stage_terms(system, [0, 1, 2, 3], [0, 0, 0, 0])
    assert terms.cpu_sys == pytest.approx([3 / mib * 100e-6 + 3.5e-9] * 4, rel=1e-12)
    f = system.flows[0]
    assert terms.load[0, f.data_nic_tx] == pytest.approx(0.5 + 2 / 3, rel=1e-12)
    host_io = 3 * 10000 / mib / 2.5e9
    assert terms.load[0, f.host_cpu] == pytest.approx(terms.cpu_sys[0] + host_io, rel=1e-12)
