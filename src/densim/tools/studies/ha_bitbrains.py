"""Study ``ha-bitbrains``: the Bitbrains cluster loses its largest host for 4 hours, N+1 admission on and off.

The cluster and workload are ``examples/bitbrains-small.yaml`` (50 Bitbrains fastStorage VMs as OpenDC
tasks on 9 heterogeneous hosts, vCPU over-commit 16, first-fit, backfill queue). The largest host
(``big-0``: 32 cores, 256 GB) fails at the step with the most VMs running in the run without failures
and is repaired 4 hours later. Two runs: HA admission control off, and N+1 (``n_plus_k``, k = 1: the
capacity of the largest host, 512 vCPU slots and 256 GB, kept free at every power-on). Both restart the
failed host's VMs after a 30 s detection delay with a 120 s boot (vSphere HA's defaults are of this
order; both are estimates, see docs/background/failures.md).

Reported per run: VMs interrupted, VM-minutes down, restart delays, whether the reservation held
(every VM restarted without waiting for capacity), power-ons refused by admission control, and CPU
Ready on the hosts with demand during the failure against the rest of the run.

No published figure exists for this cluster: the headlines are **targets** (acceptance bounds we set:
with N+1 on, every VM of the failed host restarts without waiting) and **arithmetic** (VM-minutes down
= VMs interrupted x (detection + boot) when the reservation holds).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from densim.errors import InputError
from densim.tools.studies.base import Study, busy_check, headline

EXAMPLE = Path(__file__).resolve().parents[4] / "examples" / "bitbrains-small.yaml"
DOWN_H = 4.0
DETECTION_S = 30.0
BOOT_S = 120.0
SOURCE = "examples/bitbrains-small.yaml (Bitbrains fastStorage sample, OpenDC v4 trace); HA delays are estimates"


def _scenario(failures: dict | None):
    from densim.spec.loader import load_mapping, scenario_from_dict

    if not EXAMPLE.is_file():
        raise InputError(EXAMPLE, "", "the ha-bitbrains study needs the repository's examples/ and the trace they name")
    d = load_mapping(EXAMPLE)
    d["output"] = {"vm_timeseries": "off"}
    if failures is not None:
        d["failures"] = failures
    return scenario_from_dict(d, source=EXAMPLE, base_dir=EXAMPLE.parent)


def run(out_dir: Path, seed: int) -> dict:
    from densim.engine import simulate
    from densim.plant import resolve

    plain = simulate(resolve(_scenario(None)), seed=seed)
    steps = plain.schedule_steps()
    k = int(np.argmax(steps["running"].to_numpy()))
    t_fail = float(steps["time_s"][k]) - plain.ctx.grid.start_s
    hosts = plain.ctx.hosts
    largest = str(hosts.names[int(np.argmax(hosts.cores * 1e12 + hosts.mem_bytes))])
    # what was allocated at the failure against the capacity left by N+1 (cores x over-commit, memory x over-commit)
    sch, pl_ = plain.ctx.schedule, plain.ctx.scenario.placement
    t_abs = plain.ctx.grid.start_s + t_fail
    alive = (sch.start_s <= t_abs) & (sch.end_s > t_abs)
    cpu_cap, mem_cap = hosts.cores * pl_.cpu_overcommit, hosts.mem_bytes * pl_.memory_overcommit
    j = int(np.argmax(hosts.cores * 1e12 + hosts.mem_bytes))
    headroom = {"allocated_vcpus": float(plain.ctx.vms.vcpus[alive].sum()),
                "allocated_memory_bytes": float(plain.ctx.vms.mem_bytes[alive].sum()),
                "n_minus_1_vcpus": float(cpu_cap.sum() - cpu_cap[j]), "n_minus_1_memory_bytes": float(mem_cap.sum() - mem_cap[j])}
    runs, rows = {}, []
    for label, admission in (("N+1 off", "off"), ("N+1 on", "n_plus_k")):
        fs = {"events": [{"time": t_fail, "target": largest, "duration": DOWN_H * 3600.0}],
              "ha": {"admission": admission, "host_failures": 1, "detection": DETECTION_S, "boot_delay": BOOT_S}}
        res = simulate(resolve(_scenario(fs)), seed=seed)
        f = dict(res.summary["failures"])
        runs[label] = res
        rows.append({"run": label, **f, "energy_kwh": res.summary["totals"]["energy_kwh"]})
    on, off = rows[1], rows[0]
    per_vm_min = (DETECTION_S + BOOT_S) / 60.0
    heads = [
        headline("N+1 on: VMs of the failed host waiting for capacity", 0.0, on["waited_for_capacity"], tolerance=0.0,
                 upper=0.0, source="target: the reservation holds", role="target", rests_on=["N+1 on"]),
        headline("N+1 on: VM-minutes down = VMs interrupted x (detection + boot)", on["vms_interrupted"] * per_vm_min,
                 on["vm_minutes_down"], tolerance=1e-6, unit="VM-min", source="arithmetic from the run's counts",
                 role="arithmetic", estimated_inputs=("detection 30 s (E)", "boot delay 120 s (E)"), rests_on=["N+1 on"]),
    ]
    busy = []
    for label, res in runs.items():
        hs = res.host_acc.series.get("utilisation")
        if hs is not None:
            busy.append(busy_check(label, [str(n) for n in res.ctx.hosts.names], hs, kind="host CPU", step_s=res.ctx.grid.step_s))
    fig = {
        "data": [
            # offsetgroup: bars on two y axes side by side (without it the right-axis bars cover the left ones)
            {"type": "bar", "name": "VM-minutes down", "x": [r["run"] for r in rows], "y": [r["vm_minutes_down"] for r in rows],
             "offsetgroup": "down"},
            {"type": "bar", "name": "CPU Ready during the failure (%)", "x": [r["run"] for r in rows],
             "y": [r["cpu_ready_pct_during_failures"] for r in rows], "yaxis": "y2", "offsetgroup": "ready"},
        ],
        "layout": {"title": {"text": f"{largest} down {DOWN_H:g} h at the busiest step"}, "barmode": "group",
                   "legend": {"orientation": "h", "y": -0.15},
                   "yaxis": {"title": {"text": "VM-minutes down"}},
                   "yaxis2": {"title": {"text": "CPU Ready (%)"}, "overlaying": "y", "side": "right", "showgrid": False,
                              "tickmode": "auto"}},  # own ticks: plotly.js gives an overlaying axis tickmode "sync" (1.22, 2.44, ...)
    }
    notes = [
        f"{largest} fails at {t_fail / 86400:.2f} d into the run (the step with the most VMs running without failures, "
        f"{int(steps['running'][k])}) for {DOWN_H:g} h.",
        f"N+1 admission refused {on['power_ons_refused']} power-on(s); without it {off['waited_for_capacity']} VM(s) waited "
        f"for capacity after the failure. At the failure {headroom['allocated_vcpus']:g} vCPUs and "
        f"{headroom['allocated_memory_bytes'] / 1e9:.1f} GB were allocated against {headroom['n_minus_1_vcpus']:g} vCPU slots and "
        f"{headroom['n_minus_1_memory_bytes'] / 1e9:.0f} GB left without the largest host: when both runs agree the reserve "
        "did not bind, and CPU Ready, not capacity, is the cost of the failure.",
    ]
    return {
        "seed": seed,
        "headline": heads,
        "busy": busy,
        "failed_host": largest,
        "failure_at_s": t_fail,
        "runs": rows,
        "allocation_at_failure": headroom,
        "figures": [fig],
        "notes": notes,
    }


STUDY = Study(
    name="ha-bitbrains",
    description="Bitbrains cluster loses its largest host for 4 h: VMs down, restart delays, CPU Ready, N+1 admission on/off",
    run=run,
    source=SOURCE,
    tags=("failures", "ha", "cluster"),
    area="cluster",
)
