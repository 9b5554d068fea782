"""GPUs as a placement resource (issue 33): MIG layouts, vGPU sizes, passthrough, pack vs spread, refusals.

Every case is small enough to follow by hand; the arithmetic is in the comments. A MIG mask is 8 bits,
bit i = memory slice i occupied.
"""

from __future__ import annotations

import numpy as np
import pytest

from densim.catalog.core import builtin_catalog
from densim.errors import InputError, ScenarioInvalid
from densim.models.gpu import GpuSpec
from densim.placement import place
from densim.placement.gpu import PASS, VGPU, build_problem
from densim.plant import plant_from_dict
from densim.plant.hosts import HostGroupPlant
from densim.spec.gpu import VmGpu

GIB = 2.0**30
CAT = builtin_catalog()


def _gpu(name):
    return CAT.get("gpus", name, GpuSpec)


def _hosts(*groups):
    """Host groups (gpu model name or None, GPUs per host, host count) -> (plant groups, group of each host)."""
    out, of = [], []
    for i, (model, n, count) in enumerate(groups):
        out.append(HostGroupPlant(i, f"g{i}", None, None, count, _gpu(model) if model else None, n if model else 0))
        of += [i] * count
    return out, np.array(of)


def _place(groups, requests, policy="first-fit", gpu_policy="pack", vcpus=None, cpu_cap=None):
    """Place one VM per request (a VmGpu dict or None) onto the hosts; returns (host per VM, problem)."""
    hosts, of = _hosts(*groups)
    reqs = [VmGpu.model_validate(r) if r is not None else None for r in requests]
    p = build_problem(hosts, of, reqs, np.arange(len(reqs)), policy=gpu_policy)
    V, H = len(reqs), of.size
    vc = np.ones(V) if vcpus is None else np.asarray(vcpus, float)
    cc = np.full(H, 64.0) if cpu_cap is None else np.asarray(cpu_cap, float)
    host = place(policy, vc, np.full(V, GIB), cc, np.full(H, 1024 * GIB), gpu=p)
    return host, p


# ---------------------------------------------------------------------------------------------- catalog
def test_catalog_has_the_issue_gpus_with_a_source_each():
    names = set(CAT.names("gpus"))
    for n in ("nvidia-l4", "nvidia-l40s", "nvidia-a100-80gb-sxm", "nvidia-h100-sxm", "nvidia-h200-sxm", "amd-instinct-mi300x"):
        assert n in names
        g = _gpu(n)
        assert g.source and g.fp16_tflops > 0 and g.memory_bandwidth_bps > 0 and 0 < g.idle_power_w < g.max_power_w
    a100 = _gpu("nvidia-a100-80gb-sxm")
    # NVIDIA's A100 placements, in memory slices: 1g at 0..6, 2g at 0/2/4, 3g (4 slices) at 0/4, 4g and 7g at 0
    assert a100.mig("1g.10gb").starts == [0, 1, 2, 3, 4, 5, 6]
    assert a100.mig("2g.20gb").starts == [0, 2, 4]
    assert (a100.mig("3g.40gb").starts, a100.mig("3g.40gb").memory_slices) == ([0, 4], 4)
    assert a100.mig("4g.40gb").starts == [0] and a100.mig("7g.80gb").memory_slices == 8
    assert a100.fp8_tflops is None  # Ampere has no FP8 unit
    assert not _gpu("nvidia-l4").mig_profiles and not _gpu("amd-instinct-mi300x").mig_profiles
    # L4: 24 GiB / 12 GiB = 2 vGPUs per GPU; 5 GiB is not an L4 profile
    assert _gpu("nvidia-l4").vgpus_per_gpu(12 * GIB) == 2 and _gpu("nvidia-l4").vgpus_per_gpu(5 * GIB) == 0


# ---------------------------------------------------------------------------------------------- MIG
def test_mig_fits_by_count_but_not_by_layout():
    # one host, one A100 80GB. Three 1g.10gb then one 4g.40gb: 3 + 4 = 7 compute slices (of 7) and
    # 3 x 1 + 4 = 7 memory slices (of 8): fits by count. By layout: the 1g instances take the lowest free
    # valid starts 0, 1, 2 (mask 0b00000111); 4g.40gb may start only at 0 and needs slices 0-3: no room.
    host, p = _place([("nvidia-a100-80gb-sxm", 1, 1)], [{"mode": "mig", "profile": "1g.10gb"}] * 3
                     + [{"mode": "mig", "profile": "4g.40gb"}])
    assert host.tolist() == [0, 0, 0, -1]
    assert p.vm_mig_start.tolist() == [0, 1, 2, -1]
    assert p.gused[0, 0] == 0b00000111
    # the same count with a 3g.40gb instead: it may start at 4 (slices 4-7 free) -> mask 0b11110111
    host, p = _place([("nvidia-a100-80gb-sxm", 1, 1)], [{"mode": "mig", "profile": "1g.10gb"}] * 3
                     + [{"mode": "mig", "profile": "3g.40gb"}])
    assert host.tolist() == [0, 0, 0, 0] and p.vm_mig_start[3] == 4 and p.gused[0, 0] == 0b11110111
    # first-fit-decreasing places the 4g.40gb first (4/8 of a GPU > 1/8): start 0, then the 1g at the
    # lowest free starts 4, 5, 6 -> all four fit (mask 0b01111111)
    host, p = _place([("nvidia-a100-80gb-sxm", 1, 1)], [{"mode": "mig", "profile": "1g.10gb"}] * 3
                     + [{"mode": "mig", "profile": "4g.40gb"}], policy="first-fit-decreasing")
    assert host.tolist() == [0, 0, 0, 0] and p.vm_mig_start.tolist() == [4, 5, 6, 0] and p.gused[0, 0] == 0b01111111


def test_mig_second_gpu_takes_what_the_first_cannot():
    # two A100s in one host: the 4g.40gb that no longer fits GPU 0 (slices 0-2 taken) goes to GPU 1 at start 0
    host, p = _place([("nvidia-a100-80gb-sxm", 2, 1)], [{"mode": "mig", "profile": "1g.10gb"}] * 3
                     + [{"mode": "mig", "profile": "4g.40gb"}])
    assert host.tolist() == [0, 0, 0, 0]
    assert p.vm_gpu.tolist() == [0, 0, 0, 1] and p.vm_mig_start[3] == 0
    assert p.gused[0].tolist() == [0b0111, 0b1111]


def test_mig_profile_only_on_hosts_whose_gpu_has_it():
    # host 0 has L40S (no MIG), host 1 an H100: the 3g.40gb instance can only go to host 1
    host, _ = _place([("nvidia-l40s", 4, 1), ("nvidia-h100-sxm", 1, 1)], [{"mode": "mig", "profile": "3g.40gb"}] * 3)
    # H100: 3g.40gb at 0 and at 4 -> two instances; the third fits nowhere
    assert host.tolist() == [1, 1, -1]


# ---------------------------------------------------------------------------------------------- vGPU, passthrough
def test_vgpu_one_size_per_gpu_and_pack_keeps_a_gpu_whole():
    # one host with 2 x L4 (24 GiB): a 12 GiB vGPU profile gives floor(24 / 12) = 2 vGPUs per GPU.
    # pack: both 12 GiB vGPUs share GPU 0 (the fuller one after the first), GPU 1 stays free for the
    # passthrough VM. An 8 GiB vGPU then fits nowhere: GPU 0 holds 12 GiB vGPUs (one size per GPU),
    # GPU 1 is passed through, although GPU 0's memory is used up and no GPU memory is free anyway.
    reqs = [{"mode": "vgpu", "memory": "12 GiB"}] * 2 + [{"mode": "passthrough", "count": 1}, {"mode": "vgpu", "memory": "8 GiB"}]
    host, p = _place([("nvidia-l4", 2, 1)], reqs, gpu_policy="pack")
    assert host.tolist() == [0, 0, 0, -1]
    assert p.vm_gpu.tolist() == [0, 0, 1, -1]
    assert p.gmode[0].tolist() == [VGPU, PASS] and p.gused[0, 0] == 2
    # spread: the two 12 GiB vGPUs go one per GPU (the emptiest first), so no GPU is left whole and
    # the passthrough VM fits nowhere; the 8 GiB vGPU has no free GPU either
    host, p = _place([("nvidia-l4", 2, 1)], reqs, gpu_policy="spread")
    assert host.tolist() == [0, 0, -1, -1]
    assert p.vm_gpu.tolist() == [0, 1, -1, -1]


def test_vgpu_size_fragmentation_by_count():
    # one L4: 8 GiB vGPUs, floor(24 / 8) = 3 per GPU. After two 8 GiB vGPUs, 8 GiB of the GPU's memory is
    # free, but a 4 GiB vGPU does not fit: the GPU runs 8 GiB vGPUs only (no mixed sizes)
    host, p = _place([("nvidia-l4", 1, 1)], [{"mode": "vgpu", "memory": "8 GiB"}] * 2 + [{"mode": "vgpu", "memory": "4 GiB"},
                                                                                       {"mode": "vgpu", "memory": "8 GiB"}])
    assert host.tolist() == [0, 0, -1, 0]
    assert p.gused[0, 0] == 3  # the third 8 GiB vGPU took the last third


def test_passthrough_whole_gpus_first_fit():
    # host 0: 2 x H100, host 1: 4 x H100. first-fit: 2 GPUs -> host 0 (2 - 2 = 0 free); 3 GPUs -> host 1
    # (4 - 3 = 1); 1 GPU -> host 0 has none, host 1 its last one; one more GPU fits nowhere (6 of 6 taken)
    reqs = [{"mode": "passthrough", "count": n} for n in (2, 3, 1, 1)]
    host, p = _place([("nvidia-h100-sxm", 2, 1), ("nvidia-h100-sxm", 4, 1)], reqs)
    assert host.tolist() == [0, 1, 1, -1]
    assert p.vm_gpu.tolist() == [0, 0, 3, -1]  # first GPU of each VM's set
    assert (p.gmode == PASS).sum() == 6


def test_gpu_fit_and_cpu_fit_both_hold():
    # host 0 has the GPU but only 4 vCPUs of capacity; the 8-vCPU GPU VM cannot go there and host 1 has no GPU
    host, _ = _place([("nvidia-l40s", 1, 1), (None, 0, 1)], [{"mode": "passthrough", "count": 1}, None],
                     vcpus=[8, 8], cpu_cap=[4, 64])
    assert host.tolist() == [-1, 1]


def test_first_fit_decreasing_places_gpu_requests_first():
    # one H100 host, one passthrough GPU. In the given order the 1g.10gb MIG VM turns the GPU into MIG mode
    # first and the passthrough VM fits nowhere; first-fit-decreasing puts the larger GPU request
    # (1 whole GPU > 1/8 of one) first: the passthrough VM gets the GPU and the MIG VM fits nowhere
    reqs = [{"mode": "mig", "profile": "1g.10gb"}, {"mode": "passthrough", "count": 1}]
    assert _place([("nvidia-h100-sxm", 1, 1)], reqs)[0].tolist() == [0, -1]
    assert _place([("nvidia-h100-sxm", 1, 1)], reqs, policy="first-fit-decreasing")[0].tolist() == [-1, 0]


def test_best_and_worst_fit_count_the_gpu_column():
    # two hosts with one L40S each, equal CPU and memory. A 24 GiB vGPU goes to host 0 (tie: lowest index).
    # best-fit: the second 24 GiB vGPU to host 0 too (its GPU half used: the least free space);
    # worst-fit: to host 1 (a whole free GPU: the most free space)
    reqs = [{"mode": "vgpu", "memory": "24 GiB"}] * 2
    assert _place([("nvidia-l40s", 1, 2)], reqs, policy="best-fit")[0].tolist() == [0, 0]
    assert _place([("nvidia-l40s", 1, 2)], reqs, policy="worst-fit")[0].tolist() == [0, 1]


def test_a_policy_without_gpu_support_is_refused():
    hosts, of = _hosts(("nvidia-l4", 1, 1))
    p = build_problem(hosts, of, [VmGpu(mode="passthrough", count=1)], np.zeros(1, np.int64))
    from densim.placement.gpu import place_gpu

    with pytest.raises(InputError, match="does not place GPU requests"):
        place_gpu("timeseries", np.ones(1), np.ones(1), np.ones(1), np.ones(1), p)


# ---------------------------------------------------------------------------------------------- scenarios
def _scenario(**extra):
    sc = {
        "name": "gpu-micro",
        "cluster": {"hosts": [{"name": "a100", "count": 2, "gpus": {"model": "nvidia-a100-80gb-sxm", "count": 1},
                               "cpu": {"sockets": 1, "cores_per_socket": 32, "threads_per_core": 1, "base_clock": "2 GHz"},
                               "memory": "512 GiB", "power": {"model": "linear", "idle": "200 W", "peak": "400 W"}}]},
        "vms": [{"name": "mig", "count": 4, "vcpus": 4, "vcpu_speed": "2 GHz", "memory": "16 GiB",
                 "profile": {"kind": "constant", "mean": 0.5}, "gpu": {"mode": "mig", "profile": "3g.40gb"}},
                {"name": "cpu-only", "count": 2, "vcpus": 2, "vcpu_speed": "2 GHz", "memory": "8 GiB",
                 "profile": {"kind": "constant", "mean": 0.5}}],
        "simulation": {"horizon": "2 h", "step": "1 h"},
    }
    sc.update(extra)
    return sc


def test_a_run_places_mig_instances_on_hosts_with_gpus():
    from densim.engine import simulate

    sc = _scenario()
    sc["vms"][0]["count"] = 5
    res = simulate(plant_from_dict(sc), seed=1)
    # 5 x 3g.40gb: two per A100 (starts 0 and 4), one A100 per host -> 2 + 2 placed, the fifth fits nowhere
    # although both hosts have 32 - 2 x 4 = 24 vCPUs and plenty of memory left; the 2 CPU-only VMs are placed
    s = res.summary
    assert (s["vms_total"], s["vms_placed"], s["vms_unplaced"]) == (7, 6, 1)
    assert s["unplaced_vms"] == ["mig-4"]


def test_run_context_keeps_each_vms_gpu():
    from densim.engine.run import place_vms
    from densim.engine.state import build_context

    ctx = build_context(plant_from_dict(_scenario()), seed=1)
    place_vms(ctx)
    assert ctx.vms.host.tolist() == [0, 0, 1, 1, 0, 0]
    assert ctx.gpu.vm_mig_start.tolist() == [0, 4, 0, 4, -1, -1]
    assert ctx.gpu.gused[:, 0].tolist() == [0xFF, 0xFF]


def test_unknown_mig_profile_and_no_gpu_hosts_are_refused():
    sc = _scenario()
    sc["vms"][0]["gpu"] = {"mode": "mig", "profile": "3g.20gb"}
    with pytest.raises(ScenarioInvalid, match=r"vms\[0\]\.gpu\.profile.*no host's GPU offers MIG profile '3g.20gb'"):
        plant_from_dict(sc)
    sc = _scenario()
    del sc["cluster"]["hosts"][0]["gpus"]
    with pytest.raises(ScenarioInvalid, match=r"vms\[0\]\.gpu.*no host has GPUs"):
        plant_from_dict(sc)
    sc = _scenario()
    sc["vms"][0]["gpu"] = {"mode": "passthrough", "count": 2}
    with pytest.raises(ScenarioInvalid, match=r"2 GPUs per VM, but the most GPUs in one host is 1"):
        plant_from_dict(sc)


def _balanced(second_has_gpu: bool):
    # two 4-core hosts of 8,000 MHz; first-fit puts four 1-vCPU VMs at 1,800 MHz, each with an 8 GiB vGPU, on host 0
    # (one L40S takes six): utilisation 0.9 and 0, stdev 0.45 (the case of tests/engine/test_migration.py)
    def grp(name, gpu):
        g = {"name": name, "count": 1, "cpu": {"sockets": 1, "cores_per_socket": 4, "threads_per_core": 1,
                                               "base_clock": "2 GHz"},
             "memory": "64 GiB", "power": {"model": "linear", "idle": "100 W", "peak": "200 W"}}
        if gpu:
            g["gpus"] = {"model": "nvidia-l40s", "count": 1}
        return g

    sc = {"name": "gpu-balance", "cluster": {"hosts": [grp("a", True), grp("b", second_has_gpu)]},
          "vms": [{"name": "v", "count": 4, "vcpus": 1, "vcpu_speed": "2 GHz", "memory": "4 GiB",
                   "profile": {"kind": "constant", "mean": 0.9}, "gpu": {"mode": "vgpu", "memory": "8 GiB",
                                                                          "utilisation": 0.5}}],
          "placement": {"policy": "first-fit"},
          "migration": {"model": "precopy", "bandwidth": "10 Gbit/s", "dirty_rate": 0,
                        "balance": {"threshold": 0.1, "interval": "5 min", "budget_per_interval": 4}},
          "simulation": {"step": "1 min", "horizon": "30 min"}}
    from densim.engine import simulate

    return simulate(plant_from_dict(sc), seed=1)


def test_the_balancer_moves_a_vm_with_a_gpu_only_where_a_gpu_can_take_it():
    # the balancer's moves are events of the placement loop, with the GPU fit test: with an L40S on host b it moves two
    # VMs there (stdev 0.45 -> 0), each taking a vGPU of b's GPU; without a GPU on b nothing can move (every check
    # triggers at stdev 0.45 and finds no destination)
    r = _balanced(True)
    m = r.summary["migration"]
    assert m["migrations"] == 2 and m["imbalance_last"] == pytest.approx(0.0, abs=1e-9)
    moved = r.ctx.vms.host >= 0
    assert sorted(zip(r.ctx.vms.host[moved].tolist(), r.ctx.gpu.vm_gpu[moved].tolist())) == [(0, 0)] * 4 + [(1, 0)] * 2
    assert r.summary["gpu"]["gpus_with_tenants"] == 2 and r.summary["gpu"]["vms_with_gpu"] == 4
    r = _balanced(False)
    m = r.summary["migration"]
    assert m["migrations"] == 0 and m["balance_triggered"] == 5 and m["imbalance_last"] == pytest.approx(0.45)


# ---------------------------------------------------------------------------------------------- GPUs over time
def _problem(groups, requests):
    hosts, of = _hosts(*groups)
    reqs = [VmGpu.model_validate(r) if r is not None else None for r in requests]
    return build_problem(hosts, of, reqs, np.arange(len(reqs))), of.size


def test_mig_slices_given_back_at_a_departure_let_a_waiting_instance_in():
    from densim.placement.online import schedule

    # one A100 (8 memory slices). VM 0, a 1g.10gb, arrives at 0 s for 100 s: slice 0. VM 1, a 4g.40gb (start 0 only),
    # arrives at 10 s: slices 0-3 are not free, although 1 + 4 <= 7 compute slices -> it waits (fifo); VM 2, a 3g.40gb
    # (starts 0 or 4), arrives at 20 s and waits behind it (fifo). At 100 s VM 0 leaves and gives slice 0 back: VM 1
    # takes slices 0-3 (start 0), VM 2 slices 4-7 (start 4)
    p, H = _problem([("nvidia-a100-80gb-sxm", 1, 1)], [{"mode": "mig", "profile": "1g.10gb"},
                                                       {"mode": "mig", "profile": "4g.40gb"},
                                                       {"mode": "mig", "profile": "3g.40gb"}])
    sch = schedule([0.0, 10.0, 20.0], [100.0, 50.0, 1000.0], np.ones(3), np.full(3, GIB), np.full(H, 64.0),
                   np.full(H, 1024 * GIB), gpu=p)
    assert sch.start_s.tolist() == [0.0, 100.0, 100.0]
    assert p.vm_mig_start.tolist() == [0, 0, 4] and p.vm_gpu.tolist() == [0, 0, 0]
    # at the end (until inf: every VM left) the GPU is free again
    assert p.gmode.tolist() == [[0]] and p.gused.tolist() == [[0]]


def test_a_restart_waits_for_a_free_gpu_not_only_for_cpu_room():
    from densim.placement.failover import failover

    # two hosts with one L4 each; two VMs asking for a whole GPU (passthrough): first-fit puts VM 0 on host 0, VM 1 on
    # host 1 (host 0 has CPU room but no free GPU). Host 0 is down 100..600 s: VM 0 stops; host 1 has CPU room for it
    # but its GPU is VM 1's, so the restart waits for the repair and takes host 0's GPU again at 600 s
    p, H = _problem([("nvidia-l4", 1, 2)], [{"mode": "passthrough", "count": 1}] * 2)
    cc, mc = np.full(H, 64.0), np.full(H, 1024 * GIB)
    init = place("first-fit", np.ones(2), np.full(2, GIB), cc, mc, gpu=p)
    assert init.tolist() == [0, 1]
    fo = failover(np.zeros(2), np.full(2, np.inf), np.ones(2), np.full(2, GIB), cc, mc, down_host=[0],
                  down_start_s=[100.0], down_end_s=[600.0], initial=init, until=3600.0, gpu=p)
    assert fo.out_placed_s.tolist() == [600.0] and fo.out_host.tolist() == [0]
    # instances: VM 0 on host 0 (0..100 s), VM 1 on host 1, VM 0 again on host 0 from 600 s, each holding GPU 0
    assert fo.inst_host.tolist() == [0, 1, 0] and fo.inst_start_s.tolist() == [0.0, 0.0, 600.0]
    assert fo.inst_gpus.tolist() == [1, 1, 1]
    # without the GPU column the restart goes to host 1 at once (the old, GPU-blind answer)
    blind = failover(np.zeros(2), np.full(2, np.inf), np.ones(2), np.full(2, GIB), cc, mc, down_host=[0],
                     down_start_s=[100.0], down_end_s=[600.0], initial=init, until=3600.0)
    assert blind.out_placed_s.tolist() == [100.0] and blind.out_host.tolist() == [1]


def test_an_evacuation_lands_only_where_a_gpu_can_take_the_vm():
    from densim.placement import timeline as TL
    from densim.placement.failover import Maintenance, failover

    # hosts 0 and 2 have one L40S (48 GiB: six 8 GiB vGPUs), host 1 none. Two 8 GiB vGPU VMs on host 0 (pack: one GPU).
    # Host 0 enters maintenance at 100 s: worst-fit by CPU and memory alone would pick host 1 (it comes first among
    # equals); the GPU fit test leaves host 2. Both land there on its one GPU (same size: 2 of 6 vGPUs), and host 0's
    # GPU is free once they land
    hosts, of = _hosts(("nvidia-l40s", 1, 1), (None, 0, 1), ("nvidia-l40s", 1, 1))
    p = build_problem(hosts, of, [VmGpu.model_validate({"mode": "vgpu", "memory": "8 GiB"})], np.zeros(2, np.int64))
    H = of.size
    cc, mc = np.full(H, 64.0), np.full(H, 1024 * GIB)
    init = place("first-fit", np.ones(2), np.full(2, GIB), cc, mc, gpu=p)
    assert init.tolist() == [0, 0]
    mt = Maintenance(host=np.array([0]), at_s=np.array([100.0]), demand_mhz=np.zeros((1, 2)), link_bps=1.25e9)
    fo = failover(np.zeros(2), np.full(2, np.inf), np.ones(2), np.full(2, GIB), cc, mc, down_host=[], down_start_s=[],
                  down_end_s=[], initial=init, until=3600.0, maintenance=mt, core_mhz=np.full(H, 2000.0), gpu=p)
    assert fo.mig[:, TL.M_DST].tolist() == [2.0, 2.0] and (fo.mig[:, TL.M_STATUS] == TL.M_LANDED).all()
    assert fo.inst_host.tolist() == [0, 0, 2, 2] and fo.inst_gpus.tolist() == [1, 1, 1, 1]
    assert p.gmode[:, 0].tolist() == [0, 0, VGPU] and p.gused[:, 0].tolist() == [0, 0, 2]


# ---------------------------------------------------------------------------------------------- GPU power
def _power_scenario(**extra):
    # one host drawing a flat 200 W (idle = peak) with 2 x L4 (idle 16 W, max 72 W), 2 steps of 1 h
    sc = {
        "name": "gpu-power",
        "cluster": {"hosts": [{"name": "l4", "count": 1, "gpus": {"model": "nvidia-l4", "count": 2},
                               "cpu": {"sockets": 1, "cores_per_socket": 16, "threads_per_core": 1, "base_clock": "2 GHz"},
                               "memory": "256 GiB", "power": {"model": "linear", "idle": "200 W", "peak": "200 W"}}]},
        "vms": [{"name": "train", "count": 1, "vcpus": 4, "vcpu_speed": "2 GHz", "memory": "16 GiB",
                 "profile": {"kind": "constant", "mean": 0.5}, "gpu": {"mode": "passthrough", "count": 1, "utilisation": 0.5}},
                {"name": "infer", "count": 1, "vcpus": 4, "vcpu_speed": "2 GHz", "memory": "16 GiB",
                 "profile": {"kind": "constant", "mean": 0.25}, "gpu": {"mode": "vgpu", "memory": "12 GiB"}}],
        "simulation": {"horizon": "2 h", "step": "1 h"},
    }
    sc.update(extra)
    return sc


def test_gpu_energy_by_hand():
    from densim.engine import simulate

    res = simulate(plant_from_dict(_power_scenario(carbon={"grid_gco2_per_kwh": 500})), seed=1)
    g = res.summary["gpu"]
    # GPU 0, passthrough at u = 0.5: 16 + (72 - 16) x 0.5 = 44 W. GPU 1, one 12 GiB vGPU whose VM gives no
    # utilisation: its CPU utilisation, the constant profile's 0.25 -> 16 + 56 x 0.25 = 30 W. 74 W x 7,200 s
    # = 532,800 J = 0.148 kWh
    assert g["energy_kwh"] == pytest.approx(0.148)
    assert (g["gpus"], g["gpus_with_tenants"], g["vms_with_gpu"], g["vms_with_gpu_unplaced"]) == (2, 2, 2, 0)
    assert g["mean_busy"] == pytest.approx((0.5 + 0.25) / 2)
    # in the host's energy: (200 + 74) W x 7,200 s = 1.9728e6 J = 0.548 kWh, and so in carbon: 0.548 x 500 g = 0.274 kg
    assert res.summary["totals"]["energy_kwh"] == pytest.approx(0.548)
    assert res.summary["carbon"]["operational_kg"] == pytest.approx(0.274)


def test_gpu_power_of_mig_instances_and_idle_gpus():
    from densim.engine import simulate

    sc = _power_scenario()
    sc["cluster"]["hosts"][0]["gpus"] = {"model": "nvidia-h100-sxm", "count": 2}
    sc["vms"] = [{"name": "mig", "count": 2, "vcpus": 2, "vcpu_speed": "2 GHz", "memory": "8 GiB",
                  "profile": {"kind": "constant", "mean": 0.5}, "gpu": {"mode": "mig", "profile": "3g.40gb", "utilisation": 1.0}}]
    res = simulate(plant_from_dict(sc), seed=1)
    # pack: both 3g.40gb on GPU 0 (starts 0 and 4), fully busy -> 2 x 3/7 of the GPU busy:
    # 70 + (700 - 70) x 6/7 = 610 W; GPU 1 idle: 70 W. 680 W x 7,200 s = 4.896e6 J = 1.36 kWh
    assert res.summary["gpu"]["energy_kwh"] == pytest.approx(1.36)
    assert res.summary["gpu"]["gpus_with_tenants"] == 1


def test_gpus_of_a_failed_host_draw_nothing_while_it_is_down():
    from densim.engine import simulate

    # the host is down for the first hour of two (a failure at 0 s for 1 h): its two L4 draw nothing then; in the
    # second hour the VMs are restarted (no GPU requests: the GPUs stay idle at 16 W each): 2 x 16 W x 3,600 s
    # = 0.032 kWh (before GPU power over time, this run was refused)
    sc = _power_scenario()
    for v in sc["vms"]:
        del v["gpu"]
    sc["failures"] = {"events": [{"time": "0 s", "target": "l4-0", "duration": "1 h"}]}
    res = simulate(plant_from_dict(sc), seed=1)
    assert res.summary["gpu"]["energy_kwh"] == pytest.approx(0.032)
    assert np.asarray(res.host_acc.series["gpu_power_w"])[:, 0].tolist() == [0.0, 32.0]


def test_vms_table_names_each_vms_gpu():
    from densim.engine import simulate

    res = simulate(plant_from_dict(_scenario()), seed=1)
    t = res.vms
    # 4 x 3g.40gb on 2 hosts with one A100 each: GPU 0 of each host, starts 0 and 4; the CPU-only VMs have none
    assert t["gpu_mode"].to_list() == ["mig"] * 4 + [""] * 2
    assert t["gpu"].to_list() == [0, 0, 0, 0, -1, -1]
    assert t["mig_start"].to_list() == [0, 4, 0, 4, -1, -1]


def test_the_howto_example_runs_with_the_figures_it_quotes(tmp_path):
    # docs/howto/gpu-hosts.md quotes these: 24 GPUs, 21 with tenants (7 L40S: ceil(40 / 6); 8 + 3 + 3 H100:
    # two 4-GPU passthrough VMs, six 3g.40gb at 2 per GPU, twenty 1g.10gb at 7 per GPU), nothing unplaced
    from pathlib import Path

    from densim.engine import simulate
    from densim.plant import load_plant

    root = Path(__file__).resolve().parents[2]
    res = simulate(load_plant(root / "examples/gpu/inference-cluster.yaml"))
    g = res.summary["gpu"]
    assert (g["gpus"], g["gpus_with_tenants"], g["vms_with_gpu"], g["vms_with_gpu_unplaced"]) == (24, 21, 68, 0)
    assert 0 < g["energy_kwh"] < res.summary["totals"]["energy_kwh"]


def test_a_scenarios_own_gpu_part_is_used_and_checked():
    # parts.gpus: a made-up 32 GiB card with 16 GiB vGPUs -> 2 per GPU; 3 VMs on one host with one such GPU
    part = {"name": "my-gpu", "vendor": "acme", "memory": "32 GiB", "memory_bandwidth": "1 TB/s", "fp16_tflops": 100,
            "idle_power": "20 W", "max_power": "200 W", "vgpu_profiles": ["16 GiB"]}
    sc = _scenario(parts={"gpus": [part]})
    sc["cluster"]["hosts"][0].update(count=1, gpus={"model": "my-gpu", "count": 1})
    sc["vms"] = [{"name": "v", "count": 3, "vcpus": 2, "vcpu_speed": "2 GHz", "memory": "4 GiB",
                  "profile": {"kind": "constant", "mean": 0.5}, "gpu": {"mode": "vgpu", "memory": "16 GiB"}}]
    from densim.engine import simulate

    assert simulate(plant_from_dict(sc), seed=1).summary["vms_unplaced"] == 1
    bad = dict(part, mig_profiles=[{"name": "3g.x", "compute_slices": 3, "memory_slices": 4, "starts": [6], "memory": "16 GiB"}])
    with pytest.raises(ScenarioInvalid, match=r"parts\.gpus\[0\].*start 6 \+ 4 memory slices passes the GPU's 8 slices"):
        plant_from_dict(_scenario(parts={"gpus": [bad]}))


def test_a_run_with_gpus_splits_over_hosts():
    # the gpu stage's figures are per GPU and its tenants: a part holds its hosts' GPUs (issue 28;
    # tests/engine/test_gpu_power_cap.py checks a split run against one process)
    from densim.engine.partition import split_refusal
    from densim.engine.run import place_vms
    from densim.engine.state import build_context

    ctx = build_context(plant_from_dict(_scenario()), seed=1)
    place_vms(ctx)
    assert split_refusal(ctx) is None


def test_mig_mask_test_agrees_with_the_placements_and_never_overcommits_compute():
    # every reachable layout of an A100 (instances added one at a time at any valid free start), checked
    # against the catalog's placements by brute force: _mig_start finds the lowest free valid start, and no
    # layout holds more than 7 compute slices (the docs' claim that the 8-slot mask is the whole test)
    from densim.placement.gpu import _mig_start

    a100 = _gpu("nvidia-a100-80gb-sxm")
    profiles = a100.mig_profiles
    seen, todo = {0: 0}, [0]  # mask -> the most compute slices any way of reaching it uses
    while todo:
        mask = todo.pop()
        for p in profiles:
            block = (1 << p.memory_slices) - 1
            free = [s for s in p.starts if not (mask >> s) & block]
            starts = sum(1 << s for s in p.starts)
            assert _mig_start(mask, p.memory_slices, starts) == (free[0] if free else -1)
            for s in free:
                nxt, compute = mask | (block << s), seen[mask] + p.compute_slices
                assert compute <= 7, (bin(mask), p.name, s)
                if compute > seen.get(nxt, -1):
                    seen[nxt] = compute
                    todo.append(nxt)
    assert 0xFF in seen and len(seen) > 20  # the full GPU is reachable (7g, 4g + 3g, ...)


# ---------------------------------------------------------------------------------------------- composability
@pytest.mark.parametrize("feature", ["memory", "storage", "fabric", "virtualization", "carbon", "lifetimes", "failures",
                                     "migration", "partition"])
def test_gpu_with_every_other_feature_runs_or_is_refused_in_one_line(feature):
    # the composability test's scenario (tests/engine/test_composability.py) with 2 x L40S per host and an
    # 8 GiB vGPU per data node (48 / 8 = 6 per GPU, 12 per host: the CPU still decides the placement)
    import copy

    from densim.engine import simulate
    from densim.engine.partition import simulate_in_parts
    from densim.plant import resolve
    from densim.spec.loader import scenario_from_dict
    from tests.engine.test_composability import BASE, FEATURES, check_invariants

    d = copy.deepcopy(BASE)
    d["cluster"]["hosts"][0]["gpus"] = {"model": "nvidia-l40s", "count": 2}
    d["vms"][0]["gpu"] = {"mode": "vgpu", "memory": "8 GiB", "utilisation": 0.5}
    if FEATURES[feature] is not None:
        FEATURES[feature](d)
    # (a power cap on GPU hosts: tests/engine/test_gpu_power_cap.py and the composability test)
    plant = resolve(scenario_from_dict(d))
    r = simulate_in_parts(plant, 2) if feature == "partition" else simulate(plant)
    check_invariants(r, (feature, "gpu"))
    g = r.summary["gpu"]
    assert (g["gpus"], g["vms_with_gpu"], g["vms_with_gpu_unplaced"]) == (6, 12, 0)
    if feature == "failures":
        # host cluster-a-1 down 30..40 min: its six VMs stop; detected and restarted on cluster-a-2 (first-fit: the only
        # host with room), up at 1,950 s. Per host, in W x min: host 0 385 x 60 (GPU 0 busy 1: 350, GPU 1 idle: 35);
        # host 1 385 x 30, 0 x 10 (down), 70 x 20 (repaired, empty, idle-on); host 2 70 x 32, then 385 x 28 from the step
        # [1,920, 1,980) s in which the restarts are up half the step (6 x 0.5 x 0.5 = 1.5 -> busy 1):
        # 23,100 + 12,950 + 13,020 = 49,070 W min = 0.817833 kWh; three GPUs have held tenants
        assert g["energy_kwh"] == pytest.approx(49_070 / 60 / 1000)
        assert g["gpus_with_tenants"] == 3
    elif feature in ("lifetimes", "migration"):  # (the energy against the timeline: check_invariants)
        assert g["gpus_with_tenants"] == (2 if feature == "lifetimes" else 3)
    else:
        # 6 VMs on each of the first two hosts, all on GPU 0 (pack: 6 per GPU); host 2 is empty but idle-on:
        # busy 6 x 0.5 -> capped at 1: GPU 0 of hosts 0 and 1 at 350 W, the other 4 GPUs idle at 35 W;
        # (2 x 350 + 4 x 35) W x 3,600 s = 3.024e6 J = 0.84 kWh
        assert g["gpus_with_tenants"] == 2
        assert g["energy_kwh"] == pytest.approx(0.84)


def test_validate_refuses_a_policy_that_cannot_place_gpu_requests():
    # every engine kernel today places GPU requests; a kernel registered later without GPU support is refused
    # by densim validate, not only at run time
    from densim.placement import POLICIES, PlacementPolicy

    POLICIES.add("no-gpu-fit", PlacementPolicy("no-gpu-fit", kernel=lambda *a, **k: None), description="test only")
    try:
        sc = _scenario()
        sc["placement"] = {"policy": "no-gpu-fit"}
        with pytest.raises(ScenarioInvalid, match=r"placement.policy: 'no-gpu-fit' does not place GPU requests"):
            plant_from_dict(sc)
    finally:
        POLICIES._entries.pop("no-gpu-fit", None)


def test_a_split_run_gives_the_one_process_gpu_figures_with_failures_and_lifetimes():
    # the event loop places GPUs once on the driver; each part holds its hosts' GPUs and the runs (instances) on them.
    # A VM restarted on another part's host is a row of that part, counted once (its first run) in vms_with_gpu
    import copy

    from densim.engine import simulate
    from densim.engine.partition import simulate_in_parts
    from densim.plant import resolve
    from densim.spec.loader import scenario_from_dict
    from tests.engine.test_composability import BASE, FEATURES

    for feature in ("failures", "lifetimes"):
        d = copy.deepcopy(BASE)
        FEATURES["gpu"](d)
        FEATURES[feature](d)
        plant = resolve(scenario_from_dict(d))
        one, two = simulate(plant).summary, simulate_in_parts(plant, 2).summary
        whole, split = one["gpu"], two["gpu"]
        # every figure to the bit: the gpu stage's per-host sums, side by side, are added over the hosts at the end
        # (added part by part, as before issue 34, the failures run's energy_kwh was 0.8178333333333332 in one
        # process against 0.8178333333333333 split)
        assert split == whole, feature
        assert two["totals"]["energy_kwh"] == one["totals"]["energy_kwh"], feature
        assert whole["vms_with_gpu"] == whole["vgpus"] == 12


def test_the_host_failure_example_does_what_its_comment_says():
    # examples/gpu/host-failure.yaml: hgx-5 (26 MIG VMs) fails 6..10 h; hgx-4's H100s are all passthrough, so every
    # restart waits for the repair: placed at 10 h, up after the 2-min boot, 4 h 2 min after the failure (the 1-min
    # detection is within the wait). l40s-0's 12 desktops land 8 on l40s-3 and 4 on hgx-5
    from pathlib import Path

    from densim.engine import simulate
    from densim.plant import resolve
    from densim.spec.loader import load_scenario

    ex = Path(__file__).resolve().parents[2] / "examples" / "gpu" / "host-failure.yaml"
    r = simulate(resolve(load_scenario(ex)))
    f = r.summary["failures"]
    assert (f["vms_interrupted"], f["waited_for_capacity"], f["not_restarted_by_end"]) == (26, 26, 0)
    assert f["restart_delay_s_max"] == pytest.approx(4 * 3600 + 120)
    ev = r.summary["migration"]["evacuations"][0]
    assert (ev["vms"], ev["stranded"]) == (12, 0)
    names, host = r.ctx.vms.names, r.ctx.vms.host
    landed = [str(r.ctx.hosts.names[h]) for n, h in zip(names, host) if str(n).startswith("vdi") and "~" in str(n)]
    assert sorted(landed) == ["hgx-5"] * 4 + ["l40s-3"] * 8


def test_a_given_placement_takes_each_vms_gpu_on_the_host_the_file_names(tmp_path):
    # two hosts with one A100 each; four 3g.40gb MIG VMs (two fit per A100: starts 0 and 4). The file puts VMs 0, 1 and 3
    # on a100-0 and VM 2 on a100-1 (each within the hosts' 32 cores): in row order VM 0 takes start 0, VM 1 start 4,
    # VM 3 finds no slices left on a100-0 -> refused at its row (row 5: header is row 1)
    from densim.engine import simulate

    sc = _scenario(placement={"policy": "given", "assignment": str(tmp_path / "a.csv")})
    sc["vms"] = sc["vms"][:1]
    (tmp_path / "a.csv").write_text("vm,host\nmig-0,a100-0\nmig-1,a100-0\nmig-2,a100-1\nmig-3,a100-0\n")
    with pytest.raises(InputError, match=r"a\.csv:row 5, column 'host': host 'a100-0' has no GPU left that takes this "
                                         r"VM's request \(a MIG instance\) once the rows above it are placed"):
        simulate(plant_from_dict(sc), seed=1)
    (tmp_path / "a.csv").write_text("vm,host\nmig-0,a100-0\nmig-1,a100-1\nmig-2,a100-1\nmig-3,a100-0\n")
    r = simulate(plant_from_dict(sc), seed=1)
    g = r.ctx.gpu
    assert r.ctx.vms.host.tolist() == [0, 1, 1, 0] and g.vm_mig_start.tolist() == [0, 0, 4, 4]


def test_vms_without_a_gpu_request_hold_no_gpu_in_an_online_run():
    # GPU and CPU-only VMs arriving in one run: the event loop's instance records give a CPU-only VM no GPU (mask 0,
    # MIG start -1), so its row shows gpu -1 in vms.parquet (the records' GPU columns were left unwritten before)
    from densim.placement.online import schedule

    p, H = _problem([("nvidia-l4", 2, 1)], [{"mode": "passthrough", "count": 1}, None, None])
    schedule([0.0, 1.0, 2.0], [10.0, 10.0, 10.0], np.ones(3), np.full(3, GIB), np.full(H, 64.0), np.full(H, 1024 * GIB),
             gpu=p)
    assert p.vm_mask.tolist() == [1, 0, 0] and p.vm_gpu.tolist() == [0, -1, -1]
    assert p.vm_mig_start.tolist() == [-1, -1, -1]


def test_an_arrival_no_empty_host_could_take_fails_at_once_gpu_included():
    # host 0: 2 L4 but 4 cores; host 1: 64 cores but 1 L4. A 16-vCPU VM asking for 2 whole GPUs fits host 0's GPUs but
    # not its cores, host 1's cores but not its GPUs: no empty host could take it, so it fails at its arrival (as a
    # VM too large for every host does) instead of waiting in the queue for ever, and the VM behind it starts
    from densim.placement.online import FAILED, RUNNING, schedule

    p, H = _problem([("nvidia-l4", 2, 1), ("nvidia-l4", 1, 1)], [{"mode": "passthrough", "count": 2},
                                                                {"mode": "passthrough", "count": 1}])
    sch = schedule([0.0, 1.0], [np.inf, np.inf], np.array([16.0, 1.0]), np.full(2, GIB), np.array([4.0, 64.0]),
                   np.full(H, 1024 * GIB), gpu=p)
    assert sch.status.tolist() == [FAILED, RUNNING] and sch.host.tolist() == [-1, 0]


def test_a_passthrough_request_without_a_count_names_its_group_at_placement():
    # (the plant refuses it for a group without an OpenDC trace; placement checks again, for a source that replaced the
    # groups) the second group asks for whole GPUs without a count and no trace gives one: refused naming vms[1]
    from types import SimpleNamespace

    from densim.placement.gpu import problem_of
    from densim.spec.loader import scenario_from_dict

    d = _scenario()
    d["vms"][1]["gpu"] = {"mode": "passthrough"}
    sc = scenario_from_dict(d)
    hosts, of = _hosts(("nvidia-a100-80gb-sxm", 1, 2))
    with pytest.raises(InputError, match=r"vms\[1\]\.gpu\.count: needed"):
        problem_of(sc, SimpleNamespace(host_groups=hosts), of, np.array([0, 0, 1, 1]), ["mig", "cpu-only"])
