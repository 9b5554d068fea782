"""OpenDC's bitbrains-small under OpenDC's own settings (issue 30 item 7): a peer cross-check, not a prediction.

Two set-ups, both in ``examples/opendc``:

* ``bitbrains-small-multi.yaml``: OpenDC's ``ScenarioIntegrationTest.testLarge`` (atlarge-research/opendc
  @ a49a38787): the 9-host ``multi.json``, VCpuFilter(16.0), RamFilter(1.0), CoreRamWeigher (most free
  memory first), linear 200-400 W. OpenDC asserts 50 tasks completed, energy 1.0016123392181786E10 J,
  CPU idle 43,101,787,496 ms and active 3,489,412,504 ms summed over the 9 hosts.
* ``bitbrains-small.yaml``: OpenDC's ``experiment_1.json`` at 691036de (the commit the shared trace is
  from): ``single_50_big.json`` (64 cores x 2,000 MHz, linear 100-200 W), prefab 'Mem' with ratios 1.0.
  OpenDC's repository asserts no figure for it.

:func:`opendc_mem_rule` is OpenDC's scheduling rule written out (FIFO queue whose head blocks the rest,
the filters, the most-free-memory weigher, ties to the first host) over densim's reading of the trace;
with OpenDC's accounting (a host's energy = idle x time + (max - idle) x integral of utilisation, every
fragment's demand delivered) it reproduces OpenDC's asserted testLarge figures, which checks densim's
reading of the trace (submission times, run lengths, demand) against OpenDC's own output. densim's
runs then differ from OpenDC's by two named mechanisms only, each pinned down here:

* placement: densim's worst-fit takes the host with the most room as CPU share + memory share, OpenDC's
  weigher the most free memory in MiB: other hosts for some tasks, the same end (the 32-vCPU task waits
  for H01 in both), energy +1.4 % on the 9 hosts;
* a VM's CPU: densim caps a VM at vCPUs x its host's core speed (a vCPU runs on one core); OpenDC lets
  a VM take any share of its host. On 2,000 MHz cores 11 of the 50 tasks ask more than that (up to
  1.4x): 17 % of the demand is not served and energy is -2.3 % on single_50_big.
"""

from __future__ import annotations

import heapq

import numpy as np
import pytest

from densim.engine import simulate
from densim.plant import load_plant
from densim.workloads.readers.opendc import read_opendc_tasks
from tests.conftest import TRACES

EXAMPLES = "examples/opendc"
BB = TRACES / "opendc-bitbrains-small" / "v4"

# OpenDC @ a49a38787, ScenarioIntegrationTest.testLarge ("values verified beforehand")
ODC_ENERGY_J = 1.0016123392181786e10
ODC_IDLE_MS, ODC_ACTIVE_MS = 43_101_787_496, 3_489_412_504
ODC_END_S = (ODC_IDLE_MS + ODC_ACTIVE_MS) / 1000.0 / 9  # idle + active = uptime of each of the 9 hosts

MULTI = {"cores": [32] + [8] * 6 + [16] * 2, "mhz": [3200] + [2930] * 6 + [3200] * 2,
         "mem_mib": [256_000] + [64_000] * 6 + [128_000] * 2, "ratio": 16.0, "idle": 200.0, "peak": 400.0}
SINGLE_50_BIG = {"cores": [64], "mhz": [2000], "mem_mib": [140_457_600_000], "ratio": 1.0, "idle": 100.0, "peak": 200.0}


def _need_trace():
    if not BB.exists():
        pytest.skip("../shared/traces is not beside the repository")


def opendc_mem_rule(t, cores, mhz, mem_mib, ratio, idle, peak):
    """OpenDC's FIFO + VCpuFilter(ratio) + RamFilter(1.0) + most-free-memory weigher over densim's task table
    ``t``; returns (simulated end s, sum over hosts of the integral of utilisation s, energy J, host per task).
    A task's memory is OpenDC's mem_capacity / 1,000 against the host's MiB (ComputeWorkloadLoader.kt);
    departures before arrivals at one time; 50 tasks, so plain Python."""
    cores, mhz, cap_mem = (np.asarray(x, dtype=np.float64) for x in (cores, mhz, mem_mib))
    n = t.n_tasks
    run = t.run_s()
    work = np.bincount(t.frag_task, weights=t.frag_cpu_mhz * t.frag_duration_s, minlength=n)
    mem = np.round(t.mem_bytes / 1024.0 / 1000.0)  # densim's KiB-read bytes back to OpenDC's KB / 1,000
    prov, free = np.zeros(cores.size), cap_mem.copy()
    host, start = np.full(n, -1), np.full(n, np.nan)
    events = [(float(t.submission_s[i]), 1, k, int(i)) for k, i in enumerate(np.argsort(t.submission_s, kind="stable"))]
    heapq.heapify(events)
    queue: list[int] = []
    while events:
        now, kind, _, j = heapq.heappop(events)
        if kind == 0:  # departure
            prov[host[j]] -= t.cpu_count[j]
            free[host[j]] += mem[j]
        else:
            queue.append(j)
        while queue:
            j = queue[0]
            c = t.cpu_count[j]
            ok = (c <= cores) & (cores * ratio - prov >= c) & (mem[j] <= cap_mem) & (free >= mem[j])
            if not ok.any():
                break  # the head blocks everyone behind it
            cand = np.flatnonzero(ok)
            h = int(cand[np.argmax(free[cand])])  # most free memory, ties to the first host
            host[j], start[j] = h, now
            prov[h] += c
            free[h] -= mem[j]
            queue.pop(0)
            heapq.heappush(events, (now + run[j], 0, j, j))
    sim_end = float(np.nanmax(start + run) - t.submission_s.min())
    active = float((np.bincount(host, weights=work, minlength=cores.size) / (cores * mhz)).sum())
    return sim_end, active, idle * cores.size * sim_end + (peak - idle) * active, host


def test_opendcs_rule_on_densims_reading_reproduces_opendcs_asserted_testlarge():
    # checks densim's reading of the trace (submissions, run = sum of fragment durations, demand) against
    # OpenDC's own output: end 5,176,800 s, integral of utilisation 3,489,412.504 s, energy 1.00161e10 J
    _need_trace()
    end, active, energy, host = opendc_mem_rule(read_opendc_tasks(BB), **MULTI)
    assert (host >= 0).all()  # all 50 placed, none terminated
    assert end == pytest.approx(ODC_END_S, abs=1.0)  # OpenDC's clock ticks in ms; its export in 5-min rows
    assert active == pytest.approx(ODC_ACTIVE_MS / 1000.0, rel=1e-5)
    assert energy == pytest.approx(ODC_ENERGY_J, rel=1e-6)


def _run(name):
    _need_trace()
    return simulate(load_plant(f"{EXAMPLES}/{name}"))


def test_multi_host_replay_agrees_on_tasks_and_end_and_differs_in_energy_only_by_placement():
    r = _run("bitbrains-small-multi.yaml")
    s = r.summary["scheduling"]
    assert (s["completed"], s["failed"], s["waiting_at_end"]) == (50, 0, 0)
    # the end is set by the 32-vCPU task, which waits about 30 days for room on H01 under either rule;
    # which tasks free H01 depends on the placement: densim's run ends 604 s (0.012 %) before OpenDC's
    assert s["simulated_end_s"] == pytest.approx(ODC_END_S, rel=2e-4)
    assert r.summary["totals"]["cpu_unserved_mhz_s"] == pytest.approx(0.0, abs=1.0)
    # densim's energy is OpenDC's accounting applied to densim's own placement ...
    hosts = r.hosts
    integral_u = float((hosts["cpu_delivered_mhz_s"] / hosts["capacity_mhz"]).sum())
    horizon = r.summary["grid"]["horizon_s"]
    assert r.summary["totals"]["energy_j"] == pytest.approx(200.0 * 9 * horizon + 200.0 * integral_u, rel=1e-6)
    # ... and the gap to OpenDC's figure is the placement rule: worst-fit puts more work on the slow
    # 8-core hosts (integral of utilisation 4.19e6 s against OpenDC's 3.49e6 s): +1.4 % energy
    assert r.summary["totals"]["energy_j"] / ODC_ENERGY_J - 1 == pytest.approx(0.0138, abs=0.002)


def test_single_50_big_replay_has_opendcs_end_and_differs_in_energy_only_by_the_vcpu_cap():
    r = _run("bitbrains-small.yaml")
    end, active, energy, _ = opendc_mem_rule(read_opendc_tasks(BB), **SINGLE_50_BIG)
    s = r.summary["scheduling"]
    assert (s["completed"], s["failed"]) == (50, 0)
    # 194 vCPUs on 64 cores without over-commit: three waits of about 30 days behind the FIFO head
    assert s["simulated_end_s"] == pytest.approx(end, abs=1.0)
    assert end == pytest.approx(10_347_286.0, abs=1.0)
    tot = r.summary["totals"]
    # OpenDC delivers every fragment's demand; densim caps a VM at vCPUs x 2,000 MHz, so the energy
    # differs by (max - idle) x unserved / host capacity (100 W x 3.59e10 MHz s / 128,000 MHz), plus the
    # idle 100 W over the 14 s from the last task's end to the end of densim's last 5-min step
    assert tot["cpu_unserved_mhz_s"] / tot["cpu_demand_mhz_s"] == pytest.approx(0.173, abs=0.002)
    tail = r.summary["grid"]["horizon_s"] - end
    assert tot["energy_j"] == pytest.approx(energy + 100.0 * tail - 100.0 * tot["cpu_unserved_mhz_s"] / 128_000.0, rel=1e-9)
    assert tot["energy_j"] / energy - 1 == pytest.approx(-0.0234, abs=0.002)
