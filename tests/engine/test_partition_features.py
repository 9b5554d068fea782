"""A run split by host partitions (``densim run --workers``) with the features whose state is host-local
gives the one-process figures (issue 28 item 6): virtualization, memory with host-local swap, storage on
``per-host`` datastores, VMs that arrive and leave, host failures with HA restarts, and all of them at
once. What couples hosts across parts is refused with a one-line physical reason, pinned here.

The scenarios are the composability scenario (tests/engine/test_composability.py): three 56-core hosts,
twelve 16-vCPU VMs, first-fit puts six on host 0 and six on host 1, host 2 stays empty. Split in 2
parts by VM count the parts are hosts [0, 1) and [1, 3), so a VM restarted on host 2 after host 0 fails
is a row of the other part than the one it first ran in.
"""

from __future__ import annotations

import copy

import pytest

from densim.engine import simulate
from densim.engine.partition import host_ranges, simulate_in_parts
from densim.errors import InputError
from densim.plant import resolve
from densim.spec.loader import scenario_from_dict
from tests.engine.test_composability import BASE, FEATURES
from tests.engine.test_partition import same_result
from tests.engine.test_swap_on_datastore import DISK


def compose(*features: str, **edit):
    """The composability scenario with ``features`` on; ``edit`` sets top-level sections."""
    d = copy.deepcopy(BASE)
    for f in features:
        FEATURES[f](d)
    for k, v in edit.items():
        d[k] = v
    return d


def local_storage(d: dict) -> dict:
    """The composability datastore as local disks: one 4-drive RAID 10 array per host."""
    FEATURES["storage"](d)
    d["storage"]["datastores"][0]["scope"] = "per-host"
    return d


def one_and_split(d: dict, parts: int = 2):
    plant = resolve(scenario_from_dict(d))
    return simulate(plant), simulate_in_parts(plant, parts)


# ---- host-local stages -------------------------------------------------------------------------------


def test_virtualization_with_shadow_paging_splits_exactly():
    # per VM: a demand factor by its host's platform; under shadow paging a sync cost that grows with
    # the VMs on its host (the most alive at once: lifetimes on), and a turbo clock per host: all host-local
    d = compose("lifetimes", virtualization={"model": "kvm", "hypervisor": {"paging": "shadow"}})
    one, split = one_and_split(d)
    v = one.summary["virtualization"]
    assert v["mean_demand_factor"] > 1.0 and v["shadow_sync_cycles_per_kinstr"]["max"] > 0
    same_result(one, split)


def _swapping(swap_datastore: str | None) -> dict:
    # two 16 GiB hosts and two 32 GiB VMs with all of their memory active: first-fit at memory
    # over-commit 2 (32 GiB of configured memory per host) puts one VM on each host, and each host
    # swaps 16 GiB of its VM's active set (no hypervisor memory, overheads, minFree, sharing, compression)
    memory = {"model": "vsphere-like", "compression": False, "zero_page_fraction": 0.0, "min_free": False,
              "hypervisor_memory": 0, "overhead_per_vm": 0, "fault_software_time": "0 s", "writes_per_fault": 1,
              "swap_device": "one-ms-disk"}
    if swap_datastore:
        memory["swap_datastore"] = swap_datastore
    return {
        "name": "swap-split",
        "parts": {"devices": [DISK], "memory_workloads": [
            {"name": "all-active", "kind": "generic", "active_fraction": 1.0, "access_rate_per_s": 1000,
             "balloon_active_share": 0.0, "compressible_fraction": 0.0, "overlap": 1.0}]},
        "cluster": {"hosts": [{"name": "host", "count": 2, "memory": "16 GiB", "cpu": {"sockets": 1, "cores_per_socket": 4, "base_clock": "2000 MHz"},
                               "power": {"model": "linear", "idle": "100 W", "peak": "200 W"}}]},
        "vms": [{"name": "hot", "count": 2, "vcpus": 1, "vcpu_speed": "2000 MHz", "memory": "32 GiB",
                 "profile": {"kind": "constant", "mean": 1.0}, "workload": {"memory_profile": "all-active"},
                 "datastore": "local"}],
        "placement": {"policy": "first-fit", "memory_overcommit": 2.0},
        "simulation": {"step": "5 min", "horizon": "30 min", "seed": 1},
        "storage": {"model": "queueing", "block_size": "4 KiB",
                    "datastores": [{"name": "local", "device": "one-ms-disk", "raid": "jbod", "drives": 1, "scope": "per-host"}]},
        "memory": memory,
        "output": {"vm_timeseries": "on", "host_timeseries": "on"},
    }


def test_memory_swapping_on_each_host_s_swap_device_splits_exactly():
    # each host swaps to its own swap device (memory.swap_device): hosts short of memory, swapping,
    # fault CPU per host and the worst VM's slowdown come from the part that holds the host
    d = _swapping(None)
    del d["storage"], d["vms"][0]["datastore"]
    one, split = one_and_split(d)
    m = one.summary["memory"]
    assert m["hosts_swapping"] == ["host-0", "host-1"] and m["vms_slowed"] == 2 and m["worst_vm_slowdown"] > 1.5
    assert host_ranges(split.ctx.vms.host, 2, 2) == [(0, 1), (1, 2)]  # one swapping host per part
    same_result(one, split)


def test_memory_swap_on_a_per_host_datastore_splits():
    # swap on the local datastore (one array per host): each host's swap queues on its own disk. Bit for bit:
    # the storage stage adds each slot's steps in time order (stages.step_sums); with numpy's column sums a
    # part's single slot column was added pairwise and the whole run's 2 step by step (last-bit differences)
    one, split = one_and_split(_swapping("local"))
    ds = one.summary["storage"]["datastores"]
    assert list(ds) == ["local@host-0", "local@host-1"] and all(x["mean_iops"] > 0 for x in ds.values())
    assert one.summary["memory"]["swap_datastore"] == "local" and one.summary["memory"]["vms_slowed"] == 2
    same_result(one, split)


def test_local_storage_with_drive_failures_and_boot_reads_splits():
    # per-host arrays: the I/O, latency, drive power and a drive failure of host 0's array stay on that
    # host; boot reads of the VMs HA restarts on host 2 land on host 2's array (another part). Bit for bit,
    # as above (this one failed with numpy's column sums)
    d = local_storage(compose("failures"))
    d["failures"] = {"events": [{"time": "30 min", "target": "cluster-a-0", "duration": "10 min"},
                                {"time": "20 min", "target": "datastore:ds@cluster-a-1/drive:0", "duration": "10 min"}],
                     "ha": {"boot_read": "100 MB/s"}}
    one, split = one_and_split(d)
    sf = one.summary["storage_failures"]
    assert list(sf["datastores"]) == ["ds@cluster-a-1"] and sf["datastores"]["ds@cluster-a-1"]["drive_failures"] == 1
    assert list(sf["boot_storms"]) == ["ds@cluster-a-2"]
    assert list(one.summary["storage"]["datastores"]) == ["ds@cluster-a-0", "ds@cluster-a-1", "ds@cluster-a-2"]
    same_result(one, split)


# ---- VMs that arrive and leave, host failures ----------------------------------------------------


def test_lifetimes_split_with_hosts_switched_off_when_idle(monkeypatch):
    # VM series off: the engine steps only the VMs alive in each chunk, chunked by the whole run's
    # concurrency (the plan's chunk_steps; a part alone, with half the VMs, would pick longer chunks).
    # A budget of 4,000 elements makes chunks of 46 and 14 steps; in the second only 2 VMs are still
    # alive, so a part has no row alive in it. Idle hosts off: each host's power-ons come from its part
    import densim.engine.run as run

    monkeypatch.setattr(run, "ELEMENTS_PER_CHUNK", 4_000)
    chunks: list[tuple[int, int, int]] = []  # (hosts, t0, t1) of every chunk the engine stepped
    step = run._active_chunk

    def spy(ctx, cpu, live, vm_acc, host_acc, t0, t1, *rest):
        chunks.append((ctx.hosts.n, t0, t1))
        return step(ctx, cpu, live, vm_acc, host_acc, t0, t1, *rest)

    monkeypatch.setattr(run, "_active_chunk", spy)
    d = compose("lifetimes", output={"vm_timeseries": "off", "host_timeseries": "on"},
                scheduling={"idle_hosts": "off", "off_after": "5 min"})
    d["vms"][0]["profile"] = {"kind": "random", "mean": 0.5, "noise": 0.4}
    one, split = one_and_split(d)
    s = one.summary["scheduling"]
    assert s["host_power_ons"] == 2 and s["boot_energy_j"] > 0 and s["completed"] == 12
    # the whole run (3 hosts), then part [0, 1) (1 host) and part [1, 3) (2 hosts), each over the same chunks
    assert chunks == [(3, 0, 46), (3, 46, 60), (1, 0, 46), (1, 46, 60), (2, 0, 46), (2, 46, 60)]
    same_result(one, split)


def test_failures_with_ha_restarts_into_another_part_split_exactly():
    # host 0 (part 0) fails at 30 min for 10 min: its six VMs restart on host 2 (part 1; host 1 is full).
    # The failover placement runs once, on the driver: each instance row has one host, so the restarted
    # instances are rows of part 1. The failures section and tables come from the driver's failure run
    # over the merged series (computed once, not summed per part).
    d = compose("failures", failures={"events": [{"time": "30 min", "target": "cluster-a-0", "duration": "10 min"}]})
    one, split = one_and_split(d)
    f = one.summary["failures"]
    assert f["restarts"] == 6 and f["vms_interrupted"] == 6 and f["vm_minutes_down"] == pytest.approx(15.0)
    restarted = split.vms.filter(split.vms["vm"].str.contains("~"))
    assert restarted.height == 6 and set(restarted["host"]) == {"cluster-a-2"}
    same_result(one, split)
    for name, df in one.ctx.failures.tables(one.ctx.hosts.names).items():
        assert df.equals(split.ctx.failures.tables(split.ctx.hosts.names)[name]), name


def test_lifetimes_and_failures_with_every_host_local_stage_split():
    # everything host-local at once: VMs arriving and leaving, host 0 failing (restarts on host 2),
    # virtualization, memory (swap device), local storage, carbon. Bit for bit: every stage's float sums are
    # per host or per slot in time order (this one failed with the storage stage's numpy column sums)
    d = local_storage(compose("lifetimes", "virtualization", "memory", "carbon"))
    d["failures"] = {"events": [{"time": "30 min", "target": "cluster-a-0", "duration": "10 min"}]}
    one, split = one_and_split(d)
    assert one.summary["failures"]["restarts"] > 0
    assert one.summary["models"]["stages"] == ["memory", "storage", "virtualization", "carbon"]
    same_result(one, split)
    assert split.summary["carbon"]["it_energy_kwh"] == pytest.approx(split.summary["totals"]["energy_kwh"], rel=1e-6)


# ---- what cannot split, and why ----------------------------------------------------------------------


def test_a_shared_datastore_is_refused_naming_it():
    d = compose("storage")  # 'ds': one array for every host (scope: shared)
    with pytest.raises(InputError, match=r"^compose:storage.datastores\[0\].scope: datastore 'ds' is one array \(scope: "
                                         r"shared\) whose queue the VMs of every host join: a run split by host partitions "
                                         r"cannot give a part its latency \(run it in one process, or give the datastore "
                                         r"scope: per-host, one array per host\)$"):
        simulate_in_parts(resolve(scenario_from_dict(d)), 2)


def test_swap_on_a_shared_datastore_is_refused_naming_it():
    d = _swapping("local")
    d["storage"]["datastores"][0]["scope"] = "shared"
    with pytest.raises(InputError, match=r"^swap-split:memory.swap_datastore: the VMs' host swap is on datastore 'local', "
                                         r"one array \(scope: shared\) whose queue the swap of every host joins: a run "
                                         r"split by host partitions cannot give a part its latency"):
        simulate_in_parts(resolve(scenario_from_dict(d)), 2)


def test_the_fabric_is_refused():
    with pytest.raises(InputError, match=r"^compose:fabric: a run split by host partitions cannot run the batch-job fabric: "
                                         r"a job's VMs on hosts of different parts share its NICs, switches and storage "
                                         r"pools \(run it in one process\)$"):
        simulate_in_parts(resolve(scenario_from_dict(compose("fabric"))), 2)


def test_a_stage_without_a_merge_rule_is_refused():
    from densim.engine.stages import STAGES, BaseStage

    class Probe(BaseStage):
        name = "zz-probe"

    STAGES.register("zz-probe", description="a stage the split run knows nothing of")(lambda ctx: Probe())
    try:
        with pytest.raises(InputError, match=r"^compose: a run split by host partitions has no rule to put the stage "
                                             r"zz-probe's parts together \(run it in one process\)$"):
            simulate_in_parts(resolve(scenario_from_dict(compose())), 2)
    finally:
        STAGES.unregister("zz-probe")


# ---- a plan that travels --------------------------------------------------------------------------


def test_a_pickled_plan_of_a_trace_run_with_lifetimes_gives_the_one_process_result(traces, repo):
    # what a Dask worker gets: the plan pickled. It carries the driver's schedule and the demand source's
    # wrappers, not the trace (a worker reads the trace again and the plan's wrappers go over it), so
    # the bytes stay far below the trace's; each part steps its own rows and the merge is exact
    import pickle

    from densim.engine.partition import host_ranges, merge_parts, plan_run, run_part
    from densim.plant import load_plant

    plant = load_plant(repo / "examples" / "opendc" / "1k-tasks.yaml")  # 1,000 OpenDC tasks on 100 hosts
    one = simulate(plant)
    plan, ctx, timings = plan_run(plant)
    assert plan.placed is not None and one.summary["scheduling"]["tasks_total"] > 0
    blob = pickle.dumps(plan, protocol=5)
    moved = pickle.loads(blob)
    assert len(blob) < 1_000_000  # measured 186 kB: the schedule and the wrappers of the trace
    ranges = host_ranges(plan.host_of_vm, plan.n_hosts, 3)
    assert len(ranges) >= 2  # first-fit fills host 0 with most tasks: a part for it, one for the rest
    same_result(one, merge_parts(ctx, [run_part(moved, h0, h1) for h0, h1 in ranges], timings))


@pytest.mark.slow
def test_a_dask_run_with_failures_and_host_local_stages_writes_the_one_process_files(tmp_path):
    # the path of `densim run --workers 2`: two worker processes, the plan pickled to each. Lifetimes,
    # host 0 failing (restarts with boot reads on host 2's local array), memory, virtualization and local
    # storage; failures.parquet, outages.parquet and the per-step tables are the same files, the figures
    # the same bits (the storage stage's per-slot sums in time order, as above)
    pytest.importorskip("distributed")
    import polars as pl

    from densim.tools.distributed import simulate_distributed

    d = local_storage(compose("lifetimes", "memory", "virtualization"))
    d["failures"] = {"events": [{"time": "30 min", "target": "cluster-a-0", "duration": "10 min"}],
                     "ha": {"boot_read": "100 MB/s"}}
    plant = resolve(scenario_from_dict(d))
    one = simulate(plant)
    res, info = simulate_distributed(plant, workers=2, parts=2)
    assert len(info.parts) == 2 and all(p.worker for p in info.parts)
    same_result(one, res)
    a, b = one.write(tmp_path / "one"), res.write(tmp_path / "two")
    for name in ("failures", "outages", "schedule_steps", "vm_steps", "host_steps", "vms"):
        assert pl.read_parquet(a / f"{name}.parquet").equals(pl.read_parquet(b / f"{name}.parquet")), name


def test_carbon_of_a_split_run_is_the_one_process_to_the_bit():
    # 4,000 VMs arriving and leaving on 200 hosts over 2 days, two host failures, memory, virtualization and carbon
    # (distributed_bench.py --stages at a fifth of its size). Host power here is float64 with full mantissas, so
    # the order of the additions shows: summed over hosts per step and then over steps (and, split, part by part
    # and added) it came out 250.00000000000003 g/kWh in one process against 249.99999999999997 in 3 parts. Carbon
    # now sums each host over the steps and adds the hosts at the end, the split run's per-host arrays side by
    # side, so every carbon figure is the one process's, not only close to it.
    d = {
        "name": "carbon-split",
        "cluster": {"hosts": [{"name": "pm", "count": 200, "cpu": {"cores_per_socket": 32, "base_clock": "2000 MHz"},
                               "memory": "256 GiB", "power": {"model": "linear", "idle": "100 W", "peak": "250 W"}}]},
        "vms": [{"name": "web", "count": 4000, "vcpus": 2, "vcpu_speed": "2000 MHz", "memory": "8 GiB",
                 "profile": {"kind": "diurnal", "mean": 0.3, "amplitude": 0.2, "noise": 0.2},
                 "arrivals": {"over": "24 h", "lifetime": "16 h", "lifetime_sigma": 0.5}}],
        "placement": {"policy": "first-fit", "memory_overcommit": 1.5},
        "simulation": {"step": "5 min", "horizon": "48 h", "seed": 7},
        "memory": {"model": "vsphere-like"},
        "virtualization": {"model": "kvm", "hypervisor": {"paging": "ept"}},
        "carbon": {"grid_gco2_per_kwh": 250},
        "failures": {"events": [{"time": "12 h", "target": "pm-0", "duration": "2 h"},
                                {"time": "30 h", "target": "pm-100", "duration": "4 h"}]},
        "output": {"vm_timeseries": "off", "host_timeseries": "off"},
    }
    one, split = one_and_split(d, 3)
    assert split.summary["carbon"] == one.summary["carbon"]
    assert one.summary["carbon"]["grid_gco2_per_kwh_mean"] == pytest.approx(250.0, rel=1e-15)
