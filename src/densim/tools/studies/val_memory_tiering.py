"""Study ``val-memory-tiering``: vSphere 9 NVMe memory tiering at 1:1 and twice the VM density (VMware 2025).

Source (measured): VMware by Broadcom performance blog, *Memory Tiering Performance in VMware Cloud
Foundation 9.0*, 17 July 2025 (mirror: https://pubt.io/view/4BBF9575E069427E60248073E6A5A0A9DC63CF8C;
same table in https://www.kontronn.com/software/vcf9-memory-tiering-feature-performance-report). All
tests at the default DRAM:NVMe ratio 1:1, Intel and AMD servers, VM density doubled:

========================  ==================================================
benchmark                 published result at 2x VM density, 1:1
========================  ==================================================
HammerDB (SQL Server)     5-10 % performance loss (SQL Server, MySQL)
VMmark (enterprise apps)  5 % performance loss
========================  ==================================================

Set-up of the model (written before the run; nothing below was changed after it):

* one host of 512 GiB DRAM (E: the blog says "various DRAM configurations"), vsphere-like defaults;
  a 1:1 tier on one Intel DC P4600 1.6 TB (E: the blog names no device; its figures are the catalog's
  datasheet figures);
* the all-DRAM load is N VMs of 32 GiB filling DRAM's guest capacity (15 VMs = 480 GiB); 2x density
  is 30 VMs (960 GiB of configured memory, memory over-commit 2.0), each at 100 % of its vCPUs (a
  throughput benchmark drives them busy: the profile's access rate applies at full CPU use);
* the workloads' memory behaviour is taken from profiles fixed earlier from other sources:
  SQL Server: ``oltp-sql`` (active 0.9 of guest memory; 2,109 accesses/s, fitted with the memory
  model's 0.333 ms fault software time to VMware's 2009 SQL Server swap study [S8]); enterprise apps:
  ``enterprise-server-load`` (active 0.85, fitted to Intel IT 2016 [S11]; 100 accesses/s (E));
* performance loss = 1 - 1/slowdown of the worst VM (all VMs are alike), the slowdown relative to
  the same VMs all in DRAM.

Tolerances (a priori): the published band widened by 3 percentage points each side: HammerDB
[2, 13] %, VMmark [2, 8] %.

Expected weak spot, written before the run: both profiles have most of their guest memory active
(0.9 and 0.85), so at twice the density the active memory (1.8x and 1.7x DRAM) breaks the
active-memory rule and active pages spill; the model spreads accesses uniformly over the active set
(miss-ratio model ``random``, m = 1 - f), so the tier takes m(f_dram) of them. A buffer pool's
accesses are skewed (hot index and warehouse pages), which would keep most accesses in DRAM; if the
HammerDB row misses high, the missing mechanism is that skew (a measured miss-ratio curve for OLTP,
miss model ``table``), not the tier device: the device is far from busy at these rates.

Outcome (after the run; the set-up's 30 VMs first ran as 28, CPU-bound at 2 vCPUs each on 56 cores,
and were given 1 vCPU so that the set-up written above is what runs): both rows miss.

* HammerDB: 26.9 % loss against 5-10 % (band [2, 13]), active memory 1.72x DRAM's guest capacity,
  tier device 5 % busy: high, as expected above. Missing mechanism: access skew within the buffer
  pool (the uniform ``random`` curve sends 1 - 1/1.72 of the active accesses past DRAM).
* VMmark: 1.6 % against 5 % (band [2, 8]): low. The tier faults alone are few at 100 accesses/s (E),
  and that estimate is not tuned (issue 30 rules). Missing mechanisms believed to be the page-temperature
  tracking ESX runs on every tiered VM (access-bit scans, promotion and demotion work, larger-page
  splits) that costs CPU and TLB reach even when no page faults, which the model does not charge.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from densim.tools.studies.base import Study, busy_check, headline

SOURCE = ("VMware by Broadcom performance blog, 'Memory Tiering Performance in VMware Cloud Foundation 9.0', "
          "17 July 2025 (https://pubt.io/view/4BBF9575E069427E60248073E6A5A0A9DC63CF8C): 1:1 DRAM:NVMe, 2x VM density")
DRAM = "512 GiB"
VM_GIB = 32
BASE_VMS = 15  # 480 GiB: DRAM's guest capacity (512 GiB - 1.5 GiB hypervisor - overheads - minFree) holds 15 x 32 GiB
# benchmark: (memory profile, published loss %, band low, band high)
ROWS = {
    "HammerDB SQL Server": ("oltp-sql", 7.5, 5.0, 10.0),
    "VMmark enterprise apps": ("enterprise-server-load", 5.0, 5.0, 5.0),
}
MARGIN = 3.0  # percentage points each side of the published band (a priori)


def scenario(profile: str, n_vms: int, tiered: bool) -> dict[str, Any]:
    mem: dict[str, Any] = {"model": "vsphere-like", "workload": profile}
    if tiered:
        mem["tiering"] = {"device": "intel-dc-p4600-1.6tb", "ratio": "1:1"}
    return {
        "name": f"val-tier-{profile}",
        "cluster": {"hosts": [{"name": "host", "count": 1, "cpu": {"sockets": 2, "cores_per_socket": 28, "base_clock": "2.5 GHz"},
                               "memory": DRAM, "power": {"model": "linear", "idle": "150 W", "peak": "500 W"}}]},
        "vms": [{"name": "vm", "count": n_vms, "vcpus": 1, "vcpu_speed": "2500 MHz", "memory": f"{VM_GIB} GiB",
                 "profile": {"kind": "constant", "mean": 1.0}, "workload": {"memory_profile": profile}}],
        "placement": {"policy": "first-fit", "cpu_overcommit": 1.0, "memory_overcommit": 2.0 if tiered else 1.0},
        "simulation": {"step": "5 min", "horizon": "30 min", "seed": 1},
        "memory": mem,
    }


def run_profile(profile: str) -> dict[str, Any]:
    from densim.engine import simulate
    from densim.plant import resolve
    from densim.spec.loader import scenario_from_dict

    base = simulate(resolve(scenario_from_dict(scenario(profile, BASE_VMS, False))))
    tier = simulate(resolve(scenario_from_dict(scenario(profile, 2 * BASE_VMS, True))))
    t = tier.summary["memory"]["tiering"]
    placed = [int((x.ctx.vms.host >= 0).sum()) for x in (base, tier)]
    if placed != [BASE_VMS, 2 * BASE_VMS]:  # the set-up is the comparison: every VM must be on the host
        raise RuntimeError(f"val-memory-tiering: {placed} VMs placed, expected {BASE_VMS} and {2 * BASE_VMS}")
    s0 = base.summary["memory"]["worst_vm_slowdown"]
    s = tier.summary["memory"]["worst_vm_slowdown"]
    return {"all_dram_slowdown": s0, "tiered_slowdown": s, "loss_pct": 100.0 * (1.0 - s0 / s),
            "vms_placed": placed, "active_over_dram": t["active_over_dram_by_host"],
            "tier_peak_gib": t["tier_peak_gib_by_host"], "tier_device_util_peak": t["tier_device_util_peak"],
            "hosts_breaking_active_rule": t["hosts_breaking_active_rule"]}


def run(out_dir: Path, seed: int) -> dict[str, Any]:
    del out_dir
    heads, runs, busy = [], {}, []
    for label, (profile, pub, lo, hi) in ROWS.items():
        r = run_profile(profile)
        runs[label] = r
        heads.append(headline(f"VCF 9.0 memory tiering 1:1 at 2x VM density, {label}: performance loss (%)", pub,
                              r["loss_pct"], tolerance=0.0, lower=lo - MARGIN, upper=hi + MARGIN, source=SOURCE, unit="%",
                              role="prediction", rests_on=[label],
                              estimated_inputs=["host DRAM 512 GiB", "tier device DC P4600 (the blog names none)",
                                                "VMs at 100 % CPU"] + (["enterprise-server-load access_rate_per_s"]
                                                                       if profile == "enterprise-server-load" else [])))
        busy.append(busy_check(label, ["nvme tier device"], [r["tier_device_util_peak"]], kind="tier device"))
    return {"study": "val-memory-tiering", "headline": heads, "runs": runs, "seed": seed, "busy": busy}


STUDY = Study(
    name="val-memory-tiering",
    description="Validation: vSphere 9 NVMe memory tiering at 1:1 and 2x VM density (VMware 2025: HammerDB, VMmark)",
    run=run,
    source=SOURCE,
    tags=("validation", "memory"),
    area="memory",
)
