"""Study ``shared-flash``: Spark Terasort 1 TB on local NVMe, pooled NVMe-oF flash and an iSCSI HDD SAN.

Published reference (issue 5): 4 two-socket Xeon Platinum 8180 servers (768 GB) running KVM, each
with 6 HDFS data-node VMs (16 vCPUs, 112 GB, a 375 GB data and a 100 GB temp volume), HDFS
replication 2, Spark Terasort of 1 TB (10 billion 100-byte rows). On local NVMe (2 x Intel DC
P4600 1.6 TB per server) the job took 9.3 min (stages 0.5, 3.5 and 5.3 min) with the hosts at
about 62 % CPU and the data-node VMs at about 85 % CPU and 2 % iowait.

The CPU cost per byte of each stage (catalog ``batch_profiles: spark-terasort-1tb``) was fitted
to the three local stage times with :func:`fit_cpu_per_byte`; every other figure (the CPU shares,
all the shared-storage variants, the 2-tenant slowdowns) comes out of the model.

Role of each headline: the three local stage times are **calibration** (``cpu_per_byte`` of each
stage was fitted to them) and so is the local total runtime (the sum of the three fitted stage
times: 0.5 + 3.5 + 5.3 = 9.3 min). Since issue 30 none of the CPU figures is a prediction: the
data-node VM CPU busy and iowait are **calibration** (the job model's guest costs and ``executor_cores: 14`` (E)
were changed until they came out near the published figures), and the host CPU busy is **arithmetic** (73.00 of
its 73.01 points are 96 x the calibrated VM CPU busy / 112 logical CPUs); all three published figures come from
an internal reference run (issue 5), not a readable publication. The host CPU figure still misses (73 % against
62 %; see :data:`HOST_CPU_AUDIT`). Every run's
fabric components are checked for saturation from their mean utilisation over the job
(``components``; per-stage utilisations are not exposed by the fabric model).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from densim.tools.studies.base import Study, busy_check, headline

PUBLISHED_STAGES_MIN = (0.5, 3.5, 5.3)
PUBLISHED_TOTAL_MIN = 9.3
PUBLISHED_HOST_CPU = 0.62
PUBLISHED_VM_CPU = 0.85
PUBLISHED_VM_IOWAIT = 0.02
SOURCE = "Issue 5 reference run (local NVMe, Spark Terasort 1 TB on 4 x 2S Xeon Platinum 8180 with KVM)"

# storage variant -> (pool target or None for local, transport, storage adapter)
VARIANTS: dict[str, tuple[str | None, str, str | None]] = {
    "local": (None, "local-nvme", None),
    "nvmeof-rdma": ("nvmeof-jbof-32bay-p4600", "nvmeof-rdma", "connectx-4-2x40g-roce"),
    "nvmeof-hw-adapter": ("nvmeof-jbof-32bay-p4600", "nvmeof-hw", "nvmeof-hba-2x40g"),
    "iscsi-hdd": ("iscsi-san-64x-10k", "iscsi", "x710-da2-2x10g"),
}
JOB = "spark-terasort-1tb"


#: what the host-CPU headline rests on (issue 15 audit of every CPU cost the model charges)
HOST_CPU_AUDIT = (
    "The host-CPU headline fails (73.0 % against the published 62 %). Audit of every CPU cost charged "
    "(densim.models.jobs): user time cpu_per_byte (F); guest block I/O, guest_cpu_per_io 20 us (E) per "
    "I/O the guest issues, including the replicas it stores for its peers; guest network stack, "
    "guest_cpu_per_network_byte 0.4 ns (E) per byte sent or received through the VM's virtual NIC; the "
    "host storage stack, the transport's 10,000 cycles per I/O (E). Of the 73.0 % of 112 logical CPUs, "
    "73.00 points are the VMs' busy vCPUs (96 x 85.2 % / 112) and 0.008 points the host storage stack. "
    "Nothing is counted twice. Two costs were missing and are now charged (guest I/O for the replicas a "
    "VM stores for its peers; guest network CPU at both ends of a transfer and for peers on the same "
    "host); after re-fitting the reduce stage's cpu_per_byte they move the host figure by < 0.01 point. "
    "Every cost still left out (vhost-net and the virtual switch per network byte, QEMU I/O threads, "
    "VM exits handled outside vCPU time) would raise it. The published 85 % of 96 vCPUs is 81.6 busy "
    "threads of 112, a 72.9 % floor before any hypervisor work, so no host-side cost explains 62 %. "
    "Suspected mechanism (not modelled, no source to size it): the two published figures are not the "
    "same accounting or interval, e.g. guest-side CPU that counts descheduled (stolen) vCPU time as "
    "busy, or a host sample window longer than the 9.3 min job (73 % x 9.3 / 10.9 min = 62 %)."
)


def scenario_dict(variant: str, tenants: int, job: str = JOB) -> dict[str, Any]:
    """The study's scenario for one storage variant and tenant count (a plain scenario mapping)."""
    target, transport, nic = VARIANTS[variant]
    letters = "abcdefgh"[:tenants]
    hosts = [{"name": f"cluster-{x}", "count": 4, "server": "dual-platinum-8180-768g"} for x in letters]
    vms = [
        {"name": f"datanodes-{x}", "count": 24, "vcpus": 16, "memory": "112 GiB", "profile": {"kind": "constant", "mean": 0.0}}
        for x in letters
    ]
    ten = []
    for x in letters:
        t: dict[str, Any] = {
            "name": f"tenant-{x}",
            "hosts": f"cluster-{x}",
            "vms": f"datanodes-{x}",
            "job": job,
            "storage": "local" if target is None else "pool",
            "transport": transport,
            "volumes": {"data": "375 GB", "temp": "100 GB"},
        }
        if nic:
            t["storage_nic"] = nic
        ten.append(t)
    fabric: dict[str, Any] = {"model": "fluid", "tenants": ten}
    if target is None:
        fabric["local_storage"] = {"device": "intel-dc-p4600-1.6tb", "count": 2}
    else:
        fabric["pools"] = [{"name": "pool", "target": target}]
    return {"name": f"shared-flash-{variant}-{tenants}", "cluster": {"hosts": hosts}, "vms": vms, "fabric": fabric}


def run_variant(variant: str, tenants: int, catalog=None) -> dict[str, Any]:
    from densim.plant.core import run_fabric
    from densim.spec.loader import scenario_from_dict

    sc = scenario_from_dict(scenario_dict(variant, tenants), source=f"shared-flash:{variant}")
    res = run_fabric(sc, catalog, source=f"shared-flash:{variant}")
    first = res.tenants[0]
    return {
        "variant": variant,
        "tenants": tenants,
        "runtime_s": first["runtime_s"],
        "stage_runtimes_s": first["stage_runtimes_s"],
        "stage_bottlenecks": first["stage_bottlenecks"],
        "storage_mb_per_s": first["storage_mb_per_s"],
        "stage_storage_mb_per_s": first["stage_storage_mb_per_s"],
        "host_cpu_busy": first["host_cpu_busy"],
        "vm_cpu_busy": first["vm_cpu_busy"],
        "vm_iowait": first["vm_iowait"],
        "all_tenants_runtime_s": [t["runtime_s"] for t in res.tenants],
        "components_busiest": sorted(res.components, key=lambda c: -c["mean_utilisation"])[:5],
        "timeline": res.timeline,
        "busy": busy_check(run_name(variant, tenants), [c["component"] for c in res.components],
                           [c["mean_utilisation"] for c in res.components], kind="fabric component (job mean)"),
    }


def run_name(variant: str, tenants: int) -> str:
    """How the study names one run (a storage variant with a tenant count)."""
    return f"{variant} x{tenants}"


def fit_cpu_per_byte(targets_s=tuple(m * 60 for m in PUBLISHED_STAGES_MIN), rel_tol: float = 1e-4) -> list[float]:
    """Fit each stage's ``cpu_per_byte`` so the local 1-tenant run hits ``targets_s`` (bisection).

    A stage's time falls monotonically with its CPU cost and does not depend on the other stages'
    costs (stages are separated by barriers), so each is fitted on its own. This is how the numbers
    in ``catalog/fabric.yaml`` were produced; ``tests/fabric`` re-runs it.
    """
    from densim.catalog.core import builtin_catalog

    base = dict(builtin_catalog().raw("batch_profiles", JOB))
    costs = [float(str(s["cpu_per_byte"]).split()[0]) for s in base["stages"]]

    def times(c: list[float]) -> list[float]:
        prof = dict(base)
        prof["stages"] = [{**s, "cpu_per_byte": ci} for s, ci in zip(base["stages"], c)]
        cat = builtin_catalog().layered({"batch_profiles": [prof]})
        return run_variant("local", 1, cat)["stage_runtimes_s"]

    out = list(costs)
    for i, target in enumerate(targets_s):
        lo, hi = 0.0, 1e-6
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            trial = list(out)
            trial[i] = mid
            if times(trial)[i] > target:
                hi = mid
            else:
                lo = mid
            if hi - lo < rel_tol * hi:
                break
        out[i] = 0.5 * (lo + hi)
    return out


def _figures(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    traces = []
    for variant in VARIANTS:
        rs = sorted((r for r in runs if r["variant"] == variant), key=lambda r: r["tenants"])
        traces.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": variant,
                "x": [r["tenants"] for r in rs],
                "y": [r["runtime_s"] / 60 for r in rs],
            }
        )
    runtime = {
        "data": traces,
        "layout": {
            "title": {"text": "Terasort 1 TB runtime against tenants sharing the storage"},
            "xaxis": {"title": {"text": "tenants (4-server clusters) on the same storage"}, "dtick": 1},
            "yaxis": {"title": {"text": "runtime of each tenant's job (min)"}, "rangemode": "tozero"},
        },
    }
    stages = []
    names = ["read-and-map", "shuffle", "reduce-and-write"]
    labels = [f"{r['variant']} x{r['tenants']}" for r in runs]
    for k, n in enumerate(names):
        stages.append({"type": "bar", "name": n, "x": labels, "y": [r["stage_runtimes_s"][k] / 60 for r in runs]})
    stage_fig = {
        "data": stages,
        "layout": {
            "title": {"text": "Stage times per variant and tenant count"},
            "barmode": "stack",
            "yaxis": {"title": {"text": "min"}},
        },
    }
    return [runtime, stage_fig]


def run(out_dir: Path, seed: int) -> dict[str, Any]:
    """Run every variant with 1 and 2 tenants (deterministic: ``seed`` is recorded only)."""
    runs = [run_variant(v, n) for v in VARIANTS for n in (1, 2)]
    local = next(r for r in runs if r["variant"] == "local" and r["tenants"] == 1)
    local_run = (run_name("local", 1),)
    heads = [
        headline(
            f"local stage {i + 1} ({name}) time",
            PUBLISHED_STAGES_MIN[i],
            local["stage_runtimes_s"][i] / 60,
            tolerance=0.10,
            relative=True,
            unit="min",
            source=SOURCE,
            role="calibration",
            fitted=f"batch_profiles {JOB} stage {i + 1} cpu_per_byte (catalog/fabric.yaml)",
            rests_on=local_run,
        )
        for i, name in enumerate(("read-and-map", "shuffle", "reduce-and-write"))
    ]
    heads.append(
        headline("local total runtime", PUBLISHED_TOTAL_MIN, local["runtime_s"] / 60, tolerance=0.10, relative=True, unit="min", source=SOURCE,
                 role="calibration", fitted=f"batch_profiles {JOB} cpu_per_byte of all three stages (the total is the sum of the fitted stage times)",
                 rests_on=local_run)
    )
    vm_why = ("the mechanism and executor_cores: 14 (an estimate) were changed until the VM figures 'came out near "
              "published' (commit message of that change); the published figures are an internal reference run, "
              "not a publication")
    heads.append(headline("local data-node VM CPU busy", PUBLISHED_VM_CPU, local["vm_cpu_busy"], tolerance=0.05, source=SOURCE,
                          role="calibration", fitted="fabric job model's guest costs and executor_cores (14, estimate)",
                          why=vm_why, rests_on=local_run))
    heads.append(headline("local data-node VM iowait", PUBLISHED_VM_IOWAIT, local["vm_iowait"], tolerance=0.02, source=SOURCE,
                          role="calibration", fitted="fabric job model's guest costs and executor_cores (14, estimate)",
                          why=vm_why, rests_on=local_run))
    host_why = ("73.00 of its 73.01 points are the VMs' busy vCPUs (96 x the VM CPU busy / 112 logical CPUs), and the VM "
                "CPU busy is itself calibrated (above): the host figure is arithmetic on a calibrated figure; and the "
                "published 62 % comes from the same internal reference run, not a readable publication (issue 30 rule)")
    heads.append(headline("local host CPU busy", PUBLISHED_HOST_CPU, local["host_cpu_busy"], tolerance=0.05, source=SOURCE,
                          role="arithmetic", estimated_inputs=["executor_cores 14 (E)", "guest and host CPU costs per I/O "
                                                                "and per network byte (E)"],
                          why=host_why, rests_on=local_run))
    by = {(r["variant"], r["tenants"]): r for r in runs}
    findings = {
        f"{v}: runtime 1 -> 2 tenants (min)": [round(by[(v, 1)]["runtime_s"] / 60, 2), round(by[(v, 2)]["runtime_s"] / 60, 2)]
        for v in VARIANTS
    }
    findings.update(
        {
            f"{v}: slowdown vs local with 1 tenant": round(by[(v, 1)]["runtime_s"] / local["runtime_s"], 3)
            for v in VARIANTS
            if v != "local"
        }
    )
    return {
        "study": "shared-flash",
        "seed": seed,
        "headline": heads,
        "runs": [{k: v for k, v in r.items() if k not in ("timeline", "busy")} for r in runs],
        "busy": [r["busy"] for r in runs],
        "findings": findings,
        "timelines": {f"{r['variant']}x{r['tenants']}": r["timeline"] for r in runs},
        "figures": _figures(runs),
        "notes": [
            "Only the per-stage CPU cost per byte is fitted (to the local stage times). "
            "Everything else comes from datasheet-level catalog entries: P4600 and 10K SAS drives, "
            "NIC and switch port speeds, target controllers, transport latency and host cycles per I/O.",
            HOST_CPU_AUDIT,
        ],
    }


STUDY = Study(
    name="shared-flash",
    description="Spark Terasort 1 TB on local NVMe vs pooled NVMe-oF flash vs an iSCSI HDD SAN, with 1 and 2 tenants",
    run=run,
    source=SOURCE,
    tags=("storage", "fabric", "batch"),
    area="storage",
)
