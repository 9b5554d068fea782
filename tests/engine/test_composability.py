"""Every pair of the engine's sixteen features on one small scenario (issues 28, 30, 32, 33 and 34).

Each pair either runs and keeps the invariants below, or is refused with a one-line message pinned
in :data:`REFUSED`, whose physical reason the message states. The table of pairs and their status
is in docs/background/design.md ("Features combined").

Invariants of a run:

* delivered + unserved = demand (CPU, over the run);
* no CPU demand outside a VM's life, nor on a host while it is down;
* energy >= the hosts' power integral (what stages add or take away, as the power cap does, goes into both);
* at CPU over-commit 1.0 no host delivers more than its capacity in any step;
* every migration goes to a host that is up and not in maintenance.
"""

from __future__ import annotations

import copy
import itertools

import numpy as np
import pytest

from densim.engine import simulate
from densim.engine.partition import simulate_in_parts
from densim.errors import InputError
from densim.plant import resolve
from densim.spec.loader import load_scenario, scenario_from_dict

# Three 56-core servers (768 GB); twelve 16-vCPU, 112 GB data-node VMs at 30 % CPU. First-fit at CPU
# over-commit 1.75 puts six on each of the first two hosts (96 vCPUs on 56 cores; 672 GB), the third
# stays empty (a maintenance target). One hour of 1-minute steps.
BASE = {
    "name": "compose",
    "cluster": {"hosts": [{"name": "cluster-a", "count": 3, "server": "dual-platinum-8180-768g"}]},
    "vms": [{"name": "datanodes-a", "count": 12, "vcpus": 16, "memory": "112 GiB",
             "profile": {"kind": "constant", "mean": 0.3}, "workload": {"iops": 50}}],
    "placement": {"policy": "first-fit", "cpu_overcommit": 1.75},
    "simulation": {"step": "1 min", "horizon": "1 h", "seed": 1},
    "output": {"vm_timeseries": "on", "host_timeseries": "on"},
}


def _fabric() -> dict:
    ex = load_scenario("examples/fabric/pooled-nvme.yaml").model_dump(by_alias=True, exclude_unset=True, mode="json")
    fab = ex["fabric"]
    fab["tenants"] = fab["tenants"][:1]
    return fab


def _hci(d) -> None:
    st = d.setdefault("storage", {"model": "queueing"})
    st["model"] = "queueing"
    st["hci"] = {"name": "vsan", "device": "intel-dc-p4600-1.6tb", "disks_per_host": 4, "nic": "connectx-4-lx-2x25g",
                 "policies": [{"vms": "datanodes-a", "policy": "vsan-raid1-ftt1", "disk": "200 GiB"}],
                 "rebuild_reserve_hosts": 0, "rebuild_share": 0.2, "repair_delay": "5 min"}
    d["vms"][0]["datastore"] = "vsan"
    if "failures" in d:  # (applied before hci) a capacity disk of cluster-a-2 fails too: its data is rebuilt at once
        d["failures"]["events"].append({"time": "5 min", "target": "datastore:vsan@cluster-a-2/drive:0", "duration": "50 min"})


def _given(d) -> None:
    # the first-fit hosts (six data nodes on each of cluster-a-0 and -1), but interleaved: even VMs on cluster-a-1, odd on
    # cluster-a-0 (first-fit puts VMs 0-5 on cluster-a-0). Restarts after a failure need an online rule of their own.
    import tempfile
    from pathlib import Path

    f = Path(tempfile.mkdtemp(prefix="densim-compose-")) / "assignment.csv"
    f.write_text("vm,host\n" + "".join(f"datanodes-a-{i},cluster-a-{1 - i % 2}\n" for i in range(12)))
    d["placement"].update(policy="given", assignment=str(f))
    if "failures" in d:
        d["failures"].setdefault("ha", {})["restart_policy"] = "first-fit"


def _add(d, **sections):
    for k, v in sections.items():
        d[k] = v


FEATURES = {
    # the memory model, hosts short of memory, page sharing by guest image: 640 GiB hosts at memory over-commit 1.1
    # hold the six 112 GiB data nodes (672 GiB) that CPU puts on each; they boot one image, inter-VM sharing on, so
    # sharing frees what the hosts lack (per VM (0.05 + 0.03) x 112 GiB zero and self-shared pages, 0.30 x 4/6 x
    # 112 GiB common to the image with two NUMA nodes' copies kept)
    "memory": lambda d: (_add(d, memory={"model": "vsphere-like", "inter_vm_sharing": True}),
                         d["cluster"]["hosts"][0].update(memory="640 GiB"),
                         d["placement"].update(memory_overcommit=1.1),
                         d["vms"][0]["workload"].update(guest_image="linux-server-stack")),
    "storage": lambda d: _add(d, storage={"model": "queueing", "default_datastore": "ds", "datastores": [
        {"name": "ds", "device": "intel-dc-s3700-400gb", "drives": 4, "raid": "raid10", "controller": "lsi-9210-8i"}]}),
    "fabric": lambda d: _add(d, fabric=_fabric()),
    "virtualization": lambda d: _add(d, virtualization={"model": "kvm", "hypervisor": {"paging": "ept"}}),
    "carbon": lambda d: _add(d, carbon={"grid_gco2_per_kwh": 250}),
    "lifetimes": lambda d: d["vms"][0].update(arrivals={"over": "10 min", "lifetime": "40 min", "lifetime_sigma": 0}),
    "failures": lambda d: _add(d, failures={"events": [{"time": "30 min", "target": "cluster-a-1", "duration": "10 min"}]}),
    # half of each VM's memory never touched: pre-copy's first round sends it as zero-page flags
    "migration": lambda d: _add(d, migration={"model": "precopy", "zero_fraction": 0.5,
                                              "maintenance": [{"host": "cluster-a-0", "at": "20 min"}]}),
    "partition": None,  # the run split into 2 host ranges (densim run --workers)
    # 400 W per host (220 W idle, 760 W peak): six VMs' 57,600 MHz of 140,000 MHz (u0 = 0.41) run at
    # 2,200 MHz (220 + 540 x 0.41 x 0.88^2 = 392 W); a host's P-states are 800 .. 2,500 MHz
    "power_cap": lambda d: d["cluster"]["hosts"][0].update(power_cap="400 W"),
    # 2 x L40S per host and an 8 GiB time-sliced vGPU per data node at 50 % GPU busy (48 / 8 = 6 per GPU: the CPU
    # still decides the placement); best-effort scheduler: six vGPUs ask 3.0 of one GPU's time, each gets 1/6.
    # With the power cap the cap is 500 W: 400 W cannot hold a fully busy host at 800 MHz (237.7 W) with both L40S at
    # their 100 W minimum limit (437.7 W), and is refused as such (tests/engine/test_gpu_power_cap.py)
    "gpu": lambda d: (d["cluster"]["hosts"][0].update(gpus={"model": "nvidia-l40s", "count": 2}),
                      d["vms"][0].update(gpu={"mode": "vgpu", "memory": "8 GiB", "utilisation": 0.5}),
                      "power_cap" in d["cluster"]["hosts"][0] and d["cluster"]["hosts"][0].update(power_cap="500 W")),
    # issue 30: the component power model (idle floor, package C-state step, convex rise) on the same
    # 220 / 760 W ends; 28 cores, 2.5 .. 1.0 GHz. Same idle and full-load power, so the power cap's full-load
    # clock (from those two) is unchanged
    "power_component": lambda d: d["cluster"]["hosts"][0].update(power={
        "model": "component", "idle": "220 W", "peak": "760 W",
        "component": {"cores_per_socket": 28, "top_clock": "2.5 GHz", "min_clock": "1.0 GHz"}}),
    # NVMe memory tiering at 1:1 on 384 GiB of DRAM (half the server's): six 112 GiB VMs (672 GiB, memory
    # over-commit 2.0) at 60 % active (403 GiB > DRAM's ~377 GiB for guests) spill active pages to the tier
    "tiering": lambda d: (d["cluster"]["hosts"][0].update(memory="384 GiB"),
                          d["placement"].update(memory_overcommit=2.0),
                          d["vms"][0]["profile"].update(active_memory_fraction=0.6),
                          d.setdefault("memory", {"model": "vsphere-like"}).update(
                              tiering={"device": "intel-dc-p4600-1.6tb", "ratio": "1:1"})),
    # the VMs' disks on a vSAN-style datastore of the three hosts (RAID-1 FTT=1 needs all three): a host down
    # 10 min (failures) outlives the 5-min repair delay, but the rebuild cannot run on 2 hosts, so it waits
    # and copies back the writes it missed when the host returns (delta resync)
    "hci": lambda d: _hci(d),
    # placement.policy given (densim plan's answer replayed): each VM on the host a file names; the last feature, so
    # it sees the failures section another feature added
    "given": lambda d: _given(d),
    # the DRS-style balancer, every 5 min (events of the placement loop): hosts 0 and 1 at 0.41 CPU utilisation, host 2
    # empty (idle-on): stdev 0.19 > 0.1, so it moves data nodes onto host 2 (a benefit over 30 min pays for a 112 GiB
    # migration)
    "balancer": lambda d: d.setdefault("migration", {"model": "precopy"}).update(
        balance={"threshold": 0.1, "interval": "5 min", "budget_per_interval": 2, "benefit_horizon": "30 min"}),
}
PAIRS = list(itertools.combinations(FEATURES, 2))

# pair -> the pinned one-line message (a regular expression) and, in the comment, the physical reason
_PART = r"^compose:{}: a run split by host partitions {} \(run it in one process{}\)$"
REFUSED = {
    # a split run takes the stages whose state is host-local (memory, virtualization, carbon, storage on
    # per-host datastores; tests/engine/test_partition_features.py); what couples hosts is refused: the
    # scenario's datastore 'ds' is one array whose queue the VMs of every host join, and the jobs' fabric
    # is shared by VMs on hosts of different parts
    ("storage", "partition"): (r"^compose:storage.datastores\[0\].scope: datastore 'ds' is one array \(scope: shared\) "
                               r"whose queue the VMs of every host join: a run split by host partitions cannot give a "
                               r"part its latency \(run it in one process, or give the datastore scope: per-host, one "
                               r"array per host\)$"),
    ("fabric", "partition"): _PART.format("fabric", "cannot run the batch-job fabric: a job's VMs on hosts of different "
                                          "parts share its NICs, switches and storage pools", ""),
    # the fluid job model runs each job once on VMs that live through it: a data node arriving 106 s
    # after its job started cannot have run its tasks
    ("fabric", "lifetimes"): (r"^compose:fabric.tenants\[0\].vms: job VM datanodes-a-\d+ is alive \d+\.\.\d+ s but "
                              r"its job runs 0\.\.\d+ s: the batch-job model runs a job once on VMs that live through "
                              r"it \(it cannot start tasks on a VM not yet there or re-run tasks lost with a failed host\)$"),
    # (lifetimes and failures split: the online and failover placement runs once on the driver, and
    # each instance row has one host, so an HA restart on another part's host is a row of that part)
    # a part cannot move VMs into another part's hosts
    ("migration", "partition"): _PART.format("migration", "cannot move VMs between parts", ""),
    ("partition", "balancer"): _PART.format("migration", "cannot move VMs between parts", ""),
    # the balancer moves a data node of the job while the job runs: the fluid job model runs a job once on VMs that
    # live through it (a moved VM's run on its source ends at the landing)
    ("fabric", "balancer"): (r"^compose:fabric.tenants\[0\].vms: job VM datanodes-a-\d+ is alive \d+\.\.\d+ s \(it is "
                             r"live-migrated during the job\) but its job runs 0\.\.\d+ s: the batch-job model runs a job "
                             r"once on VMs that live through it \(it cannot start tasks on a VM not yet there or re-run "
                             r"tasks lost with a failed host\)$"),
    # (gpu with lifetimes, failures and migration: VMs that arrive, restart after a failure or leave a host in
    # maintenance take a GPU on their new host and give back the old one, events of the one placement loop)
    # (gpu splits: its figures are per GPU and its tenants' VMs, and a part holds its hosts' GPUs; a power cap on GPU
    # hosts lowers the CPU clock first, then the GPUs' power limits)
    # a given placement is the VMs' hosts at the start: VMs that arrive later are placed by an online policy
    ("lifetimes", "given"): (r"^compose:placement.policy: 'given' cannot place VMs as they arrive; with lifetimes use "
                             r"one of: first-fit, best-fit, worst-fit$"),
    # (gpu + given: each VM takes its GPU request on the host the file names, in the file's row order)
    # the HCI datastore puts every VM's data on every host's disks and network: no part has its own queue
    ("partition", "hci"): (r"^compose:storage.hci: the HCI datastore 'vsan' spreads every VM's data over every host's "
                           r"disks and storage network \(and a resync over every host up\): a run split by host "
                           r"partitions cannot give a part its latency \(run it in one process\)$"),
}


def scenario_for(*features: str):
    d = copy.deepcopy(BASE)
    for f in features:
        if FEATURES[f] is not None:
            FEATURES[f](d)
    return scenario_from_dict(d)


def run_pair(a: str, b: str):
    plant = resolve(scenario_for(a, b))
    if "partition" in (a, b):
        return simulate_in_parts(plant, 2)
    return simulate(plant)


def check_invariants(r, features) -> None:
    ctx = r.ctx
    tot = r.summary["totals"]
    assert tot["cpu_delivered_mhz_s"] + tot["cpu_unserved_mhz_s"] == pytest.approx(tot["cpu_demand_mhz_s"], rel=1e-6)
    edges = ctx.grid.edges_s(0, ctx.grid.n_steps)
    demand = np.asarray(r.vm_acc.series["cpu_demand_mhz"])
    if ctx.liveness is not None:  # no demand outside a VM's life
        dead = ctx.liveness.alive(edges) == 0
        assert not demand[dead].any()
    host_dem = np.asarray(r.host_acc.series["cpu_demand_mhz"])
    if ctx.failures is not None:  # no demand on a host down for the whole step
        down = ctx.failures.host_down_share(edges, ctx.hosts.n) >= 1.0
        assert down.any() and not host_dem[down].any()
    power = np.asarray(r.host_acc.series["power_w"], dtype=np.float64)
    assert r.summary["totals"]["energy_j"] >= power.sum() * ctx.grid.step_s * (1 - 1e-6)  # float32 series
    if ctx.scenario.placement.cpu_overcommit <= 1.0:
        assert np.asarray(r.host_acc.series["utilisation"]).max() <= 1.0 + 1e-5
    moves = getattr(ctx, "moves", None)
    if moves is not None and moves.mig.size:  # every migration lands on a host that is up (the event loop's records)
        from densim.placement import timeline as TL

        mig = moves.mig[moves.mig[:, TL.M_STATUS] == TL.M_LANDED]
        if ctx.failures is not None:
            f = ctx.failures
            for dst, t in zip(mig[:, TL.M_DST].astype(int), mig[:, TL.M_END]):
                assert not np.any((f.down_host == dst) & (f.down_start_s <= t) & (t < f.down_end_s))
    if "power_cap" in features:  # within the cap in every step; capped at 2,200 MHz where six VMs run
        cap = 500.0 if "gpu" in features else 400.0
        assert power.max() <= cap * (1 + 1e-6)
        pc = r.summary["power_cap"]
        # with the HCI datastore the cap also feeds 4 drives at 18 W active: 400 - 72 = 328 W for the CPU, so
        # 220 + 540 s^3 <= 328 -> s <= 0.585 -> 1,462 MHz -> the 1,400 MHz P-state. With GPUs the CPU gets what the
        # two L40S leave at full power, 500 - 700 < 0: the lowest P-state, 800 MHz
        clock = 1400.0 if "hci" in features else 800.0 if "gpu" in features else 1700.0
        assert pc["full_load_clock_mhz"]["cluster-a"] == pytest.approx(clock)
        # the linear model draws 220 + 540 x 0.41 = 441 W at the six VMs' load: capped; the convex component curve
        # draws 393 W there (its 11-point table at u = 0.41), within the cap: never capped
        assert (pc["host_steps_capped"] > 0) == ("power_component" not in features)
    over_time = {"lifetimes", "failures", "migration", "balancer"} & set(features)
    if "gpu" in features and over_time:  # VMs that arrive, restart or land elsewhere take a GPU on their new host
        g = r.summary["gpu"]
        assert (g["gpus"], g["vgpus"]) == (6, 12) and g["vgpu_slowdown_worst"] == pytest.approx(3.0)
        assert g["energy_kwh"] == pytest.approx(gpu_energy_kwh_from_the_timeline(r), rel=1e-9)
        # at most six 8 GiB vGPUs on one 48 GiB L40S at any time (the fit test on every placement of the loop)
        p, host = ctx.gpu, ctx.vms.host
        edges = ctx.grid.edges_s(0, ctx.grid.n_steps)
        on_gpu = np.zeros((edges.size - 1, ctx.hosts.n * 2))
        s, e = ctx.schedule.start_s, ctx.schedule.end_s
        for k in np.flatnonzero(host >= 0):
            on_gpu[:, host[k] * 2 + p.vm_gpu[k]] += (s[k] < edges[1:]) & (e[k] > edges[:-1])
        assert on_gpu.max() <= 6 + 1  # (a VM leaving and one landing within one step: both counted in it)
    elif "gpu" in features:  # six vGPUs at 0.5 on GPU 0 of hosts 0 and 1 (pack): busy min(1, 6 x 1/6) = 1 -> 350 W;
        # the other 4 GPUs idle at 35 W: (2 x 350 + 4 x 35) W x 3,600 s = 0.84 kWh; best-effort: each vGPU gets 1/6
        # of the GPU's time against 0.5 asked: slowdown 3
        g = r.summary["gpu"]
        assert (g["gpus"], g["gpus_with_tenants"], g["vgpus"]) == (6, 2, 12)
        assert g["vgpu_slowdown_worst"] == pytest.approx(3.0)
        if "power_cap" not in features:
            assert g["energy_kwh"] == pytest.approx(0.84)
        else:  # 500 W on hosts 0 and 1: the GPUs draw 350 + 35 W, leaving 115 W for the CPU, below its 220 W idle: 800
            # MHz, where the six VMs (u0 = 0.41 / 0.32 > 1) keep it fully busy at 220 + 540 x 0.32^3 = 237.69472 W. The
            # GPUs get 262.30528 W: min(350, L) + min(35, L) = 262.30528 -> L = 227.30528 W (the idle GPU keeps 35 W).
            # The busy GPU runs at sigma = ((227.30528 - 35) / 315)^(1/3) = 0.610493^(1/3) = 0.848321: its six vGPUs
            # lose 1 / sigma = 1.17880 x. GPU energy (2 x 262.30528 + 2 x 35 on the empty host) W x 1 h = 0.594611 kWh
            pc = r.summary["power_cap"]
            assert pc["gpu_host_steps_limited"] == 120 and pc["mean_gpu_limit_w_when_limited"] == pytest.approx(227.30528)
            assert pc["full_load_gpu_limit_w"]["cluster-a"] == pytest.approx((500 - 237.69472) / 2)
            assert g["energy_kwh"] == pytest.approx(0.59461056)
            assert g["power_limit_clock_mean_when_limited"] == pytest.approx(0.848321, abs=1e-6)
            assert g["power_limit_vm_slowdown_worst"] == pytest.approx(1.178799, abs=1e-6)
            # the cap's GPU cost: 1 - sigma of the busy GPUs' time (the idle GPUs ask for none) = 15.168 %
            assert pc["gpu_slowdown_pct"] == pytest.approx(100 * (1 - 0.848321), abs=1e-4)
    if "power_component" in features:  # every host's power is the component curve (its 11-point table) at its load
        from densim.models.hardware import PowerComponents
        from densim.models.power import component_w

        comp = PowerComponents(cores_per_socket=28, top_clock="2.5 GHz", min_clock="1.0 GHz")
        table = component_w(np.linspace(0.0, 1.0, 11), 220.0, 760.0, comp)
        util = np.asarray(r.host_acc.series["utilisation"], dtype=np.float64)
        up = power > 0
        if not {"power_cap", "storage", "gpu", "hci"} & set(features):  # (the cap's formula; drives and GPUs add power)
            assert power[up] == pytest.approx(np.interp(np.clip(util[up], 0, 1), np.linspace(0, 1, 11), table),
                                              rel=1e-5, abs=0.01)
    if "tiering" in features:  # the tier holds what DRAM cannot, and active pages on it slow their VMs
        t = r.summary["memory"]["tiering"]
        assert t["hosts_using_tier"] and t["worst_vm_tier_slowdown"] > 1.0
        assert max(t["tier_peak_gib_by_host"].values()) <= t["tier_gib_per_host"] * (1 + 1e-6)
    if "hci" in features:  # the VMs' I/O on the HCI datastore; a host absence read from the timeline
        h = r.summary["hci"]
        assert h["policies"]["vsan-raid1-ftt1"]["network_bytes"] > 0 and h["mean_latency_s"] > 0
        rs = {x["event"]: x for x in h["resyncs"]}
        # RAID-1 (k = 1): 4 storage-stack bytes per resynced byte at the default 1 cycle per byte
        assert h["resync_cpu_cycles"] == pytest.approx(4.0 * h["resync_bytes"], rel=1e-5)
        if "failures" in features:  # down 30..40 min: the rebuild waits (2 hosts up < 3), a delta resync at 40 min
            x = rs["failure cluster-a-1"]
            assert x["kind"] == "delta" and x["finished"] and x["start_s"] == pytest.approx(2400.0) and x["bytes"] > 0
            assert h["latency_s_resync_mean"] >= h["latency_s_outside_mean"]
            # the failed disk (5 min): a quarter of cluster-a-2's share, rebuilt from the failure on (3 hosts up)
            y = rs["drive failure datastore:vsan@cluster-a-2/drive:0"]
            assert y["kind"] == "drive" and y["finished"] and y["start_s"] == pytest.approx(300.0)
            assert y["bytes"] == pytest.approx(h["capacity"]["used_raw_tib"] * 2**40 / 3 / 4)
        if "migration" in features:  # in maintenance once emptied: absent to the end, nowhere to rebuild
            x = rs["maintenance cluster-a-0"]
            assert x["kind"] == "rebuild" and not x["finished"] and x["start_s"] is None
    if "given" in features and "migration" not in features:  # each VM starts on the host the file names
        first = {str(n): int(h) for n, h in zip(ctx.vms.names, ctx.vms.host) if "~" not in str(n)}
        assert first == {f"datanodes-a-{i}": 1 - i % 2 for i in range(12)}
    if "migration" in features:
        m = r.summary["migration"]
        maint = {e["host"]: e["at_s"] for e in m["evacuations"]}
        for row in m["log"]:
            assert row["to"] not in maint or row["start_s"] < maint[row["to"]] - ctx.grid.start_s


def gpu_energy_kwh_from_the_timeline(r) -> float:
    """The GPUs' energy of a run of the "gpu" feature (2 x L40S per host, 35 W idle, 350 W busy; an 8 GiB vGPU at
    u = 0.5 per VM, best-effort), worked out apart from the gpu stage: from each row's life ``[start, end)`` and GPU
    in the event loop's records, the share of each 1-min step it is alive; a GPU's busy share is min(1, 0.5 x the
    alive shares of its vGPUs); a host draws power unless it is down for half a step or more (unused_hosts: idle);
    each GPU of a powered host draws 35 + 315 x busy W."""
    ctx = r.ctx
    edges = ctx.grid.edges_s(0, ctx.grid.n_steps)
    e0, e1 = edges[:-1, None], edges[1:, None]
    s, e = ctx.schedule.start_s[None, :], ctx.schedule.end_s[None, :]
    alive = np.clip(np.minimum(e, e1) - np.maximum(s, e0), 0.0, None) / (e1 - e0)  # (steps, rows); NaN: never ran
    alive = np.nan_to_num(alive)
    H = ctx.hosts.n
    busy = np.zeros((edges.size - 1, H * 2))
    placed = np.flatnonzero(ctx.vms.host >= 0)
    np.add.at(busy.T, ctx.vms.host[placed] * 2 + ctx.gpu.vm_gpu[placed], 0.5 * alive[:, placed].T)
    busy = np.minimum(busy, 1.0)
    down = np.zeros((edges.size - 1, H))
    f = ctx.failures
    if f is not None:
        for h, a, b in zip(f.down_host, f.down_start_s, f.down_end_s):
            down[:, h] += np.clip(np.minimum(b, e1[:, 0]) - np.maximum(a, e0[:, 0]), 0.0, None) / (e1 - e0)[:, 0]
    on = np.repeat(down < 0.5, 2, axis=1)
    return float(((35.0 + 315.0 * busy) * on).sum() * ctx.grid.step_s / 3.6e6)


@pytest.mark.parametrize(("a", "b"), PAIRS, ids=[f"{a}+{b}" for a, b in PAIRS])
def test_pair_runs_with_its_invariants_or_is_refused_with_its_reason(a, b):
    if (a, b) in REFUSED:
        with pytest.raises(InputError, match=REFUSED[(a, b)]):
            run_pair(a, b)
        return
    check_invariants(run_pair(a, b), (a, b))


def test_a_split_run_sums_carbon_over_its_parts():
    # carbon is a sum over hosts and steps of power x step x intensity: the run split into 2 host
    # ranges gives the whole run's figures (it was refused before: "models CPU and power only")
    plant = resolve(scenario_for("carbon"))
    whole, split = simulate(plant), simulate_in_parts(plant, 2)
    for k in ("it_energy_kwh", "operational_kg", "vm_years", "operational_kg_per_vm_year"):
        assert split.summary["carbon"][k] == pytest.approx(whole.summary["carbon"][k], rel=1e-6), k  # float32 power
    assert split.summary["carbon"]["it_energy_kwh"] == pytest.approx(split.summary["totals"]["energy_kwh"], rel=1e-6)


def test_vms_landing_from_a_given_source_keep_the_invariants_with_failures_and_memory():
    # densim plan's migration waves (issue 35) run the landed VMs as a given demand source whose VMs arrive at their
    # landing times: the twelve data nodes land one every 4 min from the start (the last at 44 min), at 30 % CPU of
    # 16 vCPUs x 2,500 MHz; host cluster-a-1 fails at 30 min for 10 min with the memory model on. The run keeps the
    # invariants above, each VM starts at its landing, and the failure's VMs restart (tests/planning/test_waves.py runs
    # the whole programme with memory over-commit)
    from densim.tools.plan.waves import LandingSource

    d = copy.deepcopy(BASE)
    FEATURES["failures"](d)
    FEATURES["memory"](d)
    d["scheduling"] = {"lifetimes": "on"}
    n, t0 = 12, 0.0
    land = t0 + 240.0 * np.arange(n)
    src = LandingSource([f"dn-{i}" for i in range(n)], [16] * n, [2500.0] * n, [112 * 2**30] * n,
                        np.full((1, n), 0.3 * 16 * 2500.0), None, 60.0, t0, land)
    r = simulate(resolve(scenario_from_dict(d)), source=src)
    check_invariants(r, ("failures", "memory"))
    sch, names = r.ctx.schedule, r.ctx.vms.names
    first = {}
    for nm, st in zip(names, sch.start_s):
        first.setdefault(str(nm).split("~")[0], st)
    assert [first[f"dn-{i}"] for i in range(n)] == land.tolist()
    assert r.summary["failures"]["restarts"] > 0 and "memory" in r.summary
