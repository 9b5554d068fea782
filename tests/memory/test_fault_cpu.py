"""Fault handling under memory pressure costs host CPU (issue 15, gap 5).

Per fault (catalog vsphere-like, all (E)): trap 1,500 cycles (a light exit), page-table update
3,000, and ``1 + w`` swap I/Os at 15,000 cycles each through the host block stack.
"""

import copy
from pathlib import Path

import numpy as np
import pytest

from densim.engine.summary import StageSummary
from densim.catalog.core import builtin_catalog
from densim.engine.plugins.memory import memory_stage
from densim.engine.run import Chunk
from densim.models import memory as M
from densim.plant.memory import memory_params
from densim.spec.memory import MemorySettings
from tests.memory.test_memory_stage import fake_ctx

GIB = M.GIB


def test_cycles_per_fault_of_each_tier_by_hand():
    costs = memory_params(MemorySettings(model="vsphere-like"), builtin_catalog()).costs()
    c = M.fault_cycles_per_tier(costs, core_mhz=2000.0)
    # w = 0.125 writes per fault: host swap 1,500 + 3,000 + 1.125 x 15,000 = 21,375
    assert c["cache"] == pytest.approx(21_375) and c["store"] == pytest.approx(21_375)
    # compressed: 1,500 + 3,000 + 20 us x 2,000 MHz = 4,500 + 40,000 = 44,500
    assert c["compressed"] == pytest.approx(44_500)
    # guest paging (no exit under EPT): 3,000 + 1.125 x 15,000 = 19,875
    assert c["guest"] == pytest.approx(19_875)
    # swap on a datastore with 64 KiB blocks: 1/16 of an I/O per page
    assert M.fault_cycles_per_tier(costs, store_ios_per_fault=1 / 16)["store"] == pytest.approx(4_500 + 1.125 * 15_000 / 16)


def test_cycles_per_second_weight_tiers_by_the_faults_taken():
    costs = M.FaultCosts(writes_per_fault=0.0, decompress_s=10e-6)
    f = M.FaultRates(compressed=np.array([100.0]), cache=np.array([200.0]), store=np.array([300.0]),
                     guest=np.array([400.0]), miss_ratio=np.array([0.1]))
    # X = 0.5: half the faults of unconstrained work happen per wall-clock second
    # 0.5 x (100 x (4,500 + 10 us x 3,000 MHz) + 200 x 19,500 + 300 x 19,500 + 400 x 18,000)
    # = 0.5 x (3,450,000 + 3,900,000 + 5,850,000 + 7,200,000) = 10,200,000 cycles/s
    got = M.fault_cpu_cycles_per_s(f, np.array([0.5]), costs, core_mhz=3000.0)
    assert got == pytest.approx([10_200_000])


def test_stage_charges_the_faulting_vms_by_hand():
    # host h0: two 12 GiB oltp-sql VMs on 16 GiB (no reserve, overhead, minFree, zero pages or
    # compression): 2.8 GiB of each VM's 10.8 GiB active set is host-swapped (see test_memory_stage),
    # resident active share f = 8 / 10.8 = 20/27, random replacement misses 7/27 of accesses.
    # At 100 % CPU: F = 2,109 x 7/27 = 546.78 faults/s of unconstrained work. Swap on a DC P4600
    # (85 us read, ~1,000 IOPS against 559 k: no queueing) with t_sw = 100 us and no swap-out writes:
    # t = 185 us, X = 1 / (1 + 546.78 x 185e-6) = 0.90814, F X = 496.55 faults/s per VM.
    # Host CPU per fault: 1,500 + 3,000 + 1 x 15,000 = 19,500 cycles -> 496.55 x 19,500 = 9.683 MHz.
    s = MemorySettings(model="vsphere-like", hypervisor_memory=0, overhead_per_vm=0, min_free=False, zero_page_fraction=0.0,
                       compression=False, workload="oltp-sql", swap_device="intel-dc-p4600-1.6tb",
                       fault_software_time="100 us", writes_per_fault=0.0)
    ctx = fake_ctx(s)
    st = memory_stage(ctx)
    st.prepare(ctx)
    chunk = Chunk(t0=0, t1=3, step_s=300.0)
    chunk.vm["cpu_demand_mhz"] = np.full((3, 3), 4000.0, np.float32)
    st.before_cpu(ctx, chunk)
    F = 2109 * 7 / 27
    X = 1 / (1 + F * 185e-6)
    per_vm = F * X * 19_500 / 1e6
    np.testing.assert_allclose(chunk.vm_out["mem_fault_rate_per_s"][:, :2], F * X, rtol=1e-4)
    np.testing.assert_allclose(chunk.vm_out["mem_fault_cpu_mhz"][:, :2], per_vm, rtol=1e-4)
    np.testing.assert_allclose(chunk.vm_out["mem_fault_cpu_mhz"][:, 2], 0.0)  # host h1 fits: no faults
    np.testing.assert_allclose(chunk.host_out["host_mem_fault_cpu_mhz"], [[2 * per_vm, 0.0]] * 3, rtol=1e-4)
    # the CPU model sees it: demand grew by exactly the fault-handling MHz
    np.testing.assert_allclose(chunk.vm["cpu_demand_mhz"], 4000.0 + chunk.vm_out["mem_fault_cpu_mhz"], rtol=1e-6)
    summary = StageSummary.standalone(st)
    st.finish(ctx, summary)
    fc = summary["memory"]["fault_cpu"]
    assert fc["cycles_per_fault"]["host_swap_store"] == pytest.approx(19_500)
    assert fc["host_mean_mhz"] == {"h0": pytest.approx(2 * per_vm, rel=1e-4)}


def test_engine_host_demand_rises_by_the_fault_cpu():
    # the end-to-end scenario of test_memory_stage (six 16 GiB VMs at 1.6x, one host swapping to SATA)
    # run with the catalog's fault cycles and with all three set to 0 (decompression, which is also a
    # stall, still costs its 20 us of CPU per compressed page): the hosts' CPU demand differs by exactly
    # the difference in mem_fault_cpu_mhz, and only the swapping host pays
    import yaml

    from densim.engine import simulate
    from densim.plant import resolve
    from densim.spec.loader import scenario_from_dict

    d = yaml.safe_load(Path(__file__).with_name("overcommit-profile.yaml").read_text())
    runs = {}
    for key, extra in (("on", {}), ("off", {"fault_trap_cycles": 0, "fault_map_cycles": 0, "swap_io_cycles": 0})):
        dd = copy.deepcopy(d)
        dd["memory"].update(extra)
        runs[key] = simulate(resolve(scenario_from_dict(dd)))
    on, off = runs["on"].hosts, runs["off"].hosts
    fault = on["host_mem_fault_cpu_mhz_mean"].to_numpy()
    fault_off = off["host_mem_fault_cpu_mhz_mean"].to_numpy()
    assert fault[0] > fault_off[0] > 0 and fault[1] == fault_off[1] == 0
    # cpu_demand_mhz_s is MHz x seconds over the 1 h horizon
    extra = (on["cpu_demand_mhz_s"].to_numpy() - off["cpu_demand_mhz_s"].to_numpy()) / 3600.0
    np.testing.assert_allclose(extra, fault - fault_off, rtol=2e-3)  # float32 sums of ~10^4 MHz columns
    # fault rates and slowdowns do not depend on the CPU charge (the VMs' demand stays below their vCPUs)
    np.testing.assert_allclose(runs["on"].vms["mem_fault_rate_per_s_mean"].to_numpy(),
                               runs["off"].vms["mem_fault_rate_per_s_mean"].to_numpy(), rtol=1e-6)
