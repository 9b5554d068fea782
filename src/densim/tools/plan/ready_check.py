"""Measured CPU Ready against the model's, for today's cluster as the inventory describes it.

A check of the CPU Ready model on real data, not a fit: nothing here is tuned to the measured values.
RVTools exports carry each VM's measured readiness (vInfo ``Overall Cpu Readiness``, or ``CPU Ready %``
columns), its host (vInfo ``Host``) and today's hosts (vHost: cores, clock). For every VM whose host vHost
lists, the model's CPU Ready is computed on that host with every VM the inventory puts there, by the very
rule the plan checks candidates with (:func:`densim.placement.filters.ready_pct_worst`, modelling guide
§3.2): ``K`` = runnable vCPUs with mean ``sum v_j u_j`` and variance ``sum v_j u_j (1 - u_j)``, ``C`` =
the host's cores x ``smt_gain``, and a VM busy a fraction ``u`` of its vCPUs waits ``100 u E[(K - C)+] / E[K]``
% per vCPU (0 where the host's vCPUs do not exceed ``C``). ``u`` is the VM's CPU demand over its vCPUs x
its host's clock, step by step; the model's figure per VM is the mean over the steps.

Units: every figure is % of time per vCPU, the unit of the plan's ``qos.cpu_ready_pct`` bound and of the usual 5 %
rule. RVTools' ``Overall Cpu Readiness`` is vSphere's VM readiness (quickStats ``overallCpuReadiness``, the VM's
``cpu.readiness``), which Broadcom KB 432752 defines as "the average readiness across all vCPUs of a specific virtual
machine": it is compared as exported. ``CPU Ready %`` / ``Co-Stop %`` columns (esxtop's VM-level %RDY / %CSTP, or the
ready summation converted by Broadcom KB 2002181) sum the vCPUs; the reader divides them by the VM's vCPUs
(:data:`densim.workloads.readers.rvtools.READINESS_AVERAGED`), so ``inv.ready_pct`` is per vCPU either way.
"""

from __future__ import annotations

import csv
import io
import warnings
from dataclasses import dataclass

import numpy as np

MEASURED_BASIS = ("measured readiness per vCPU: RVTools 'Overall Cpu Readiness' as exported (vSphere's VM readiness, "
                  "the average over its vCPUs: Broadcom KB 432752); 'CPU Ready %' / 'Co-Stop %' columns (summed over "
                  "vCPUs, Broadcom KB 2002181) divided by the VM's vCPUs")


@dataclass(frozen=True)
class ReadyCheck:
    """Per VM compared (measured readiness and a host vHost lists), and what was left out."""

    names: np.ndarray  # (M,) object
    host: np.ndarray  # (M,) object: today's host
    vcpus: np.ndarray  # (M,) int
    util_pct: np.ndarray  # (M,) mean CPU use, % of vCPUs x host clock
    measured_pct: np.ndarray  # (M,) per vCPU (the reader's unit: see the module's Units)
    costop_pct: np.ndarray | None  # (M,) measured co-stop per vCPU where exported (NaN: not for this VM); no model figure
    model_pct: np.ndarray  # (M,) per vCPU, mean over the steps
    vms_measured: int  # VMs with a measured value
    vms_no_host: int  # measured, but their host is not in vHost (or has no cores there): not compared
    hosts: int  # hosts of vHost with at least one compared VM
    smt_gain: float
    bound_pct: float
    steps: int


def _host_index(inv) -> np.ndarray:
    """Each VM's row in ``inv.hosts`` by exact name (as the reader matches them), -1 when absent."""
    h = inv.hosts
    pos: dict[str, int] = {}
    for i, n in enumerate(h.names.tolist()):
        pos.setdefault(str(n), i)
    return np.array([pos.get(str(x), -1) for x in inv.tags["host"]], dtype=np.int64)


def check(inv, *, bound_pct: float = 5.0, smt_gain: float = 1.0, chunk: int = 2048) -> ReadyCheck | None:
    """The comparison, or None when the inventory lacks what it needs: measured readiness, a CPU demand
    series, today's hosts (vHost) and each VM's host."""
    from scipy import sparse

    from densim.placement.filters import ready_pct_worst

    if (inv.ready_pct is None or inv.cpu_mhz is None or inv.hosts is None or inv.hosts.n_hosts == 0
            or "host" not in inv.tags or not np.isfinite(inv.ready_pct).any()):
        return None
    hi = _host_index(inv)
    cores = inv.hosts.cores.astype(np.float64)
    known = (hi >= 0) & (cores[np.maximum(hi, 0)] > 0)
    measured = np.isfinite(inv.ready_pct)
    # every VM on a listed host loads it, measured or not; VMs on unlisted hosts load nothing we can see
    on = np.flatnonzero(known)
    n_h = inv.hosts.n_hosts
    v = inv.vcpus.astype(np.float64)[on]
    cap_mhz = v * inv.vcpu_mhz.astype(np.float64)[on]
    host_of = hi[on]
    onehot = sparse.csr_matrix((np.ones(on.size), (np.arange(on.size), host_of)), shape=(on.size, n_h))
    host_vcpus = np.asarray(onehot.T @ v).ravel()
    c_h = cores * smt_gain
    t_total = int(inv.cpu_mhz.shape[0])
    ready_sum = np.zeros(on.size)
    util_sum = np.zeros(on.size)
    for t0 in range(0, t_total, chunk):
        u = np.clip(inv.cpu_mhz[t0:t0 + chunk][:, on].astype(np.float64) / cap_mhz[None, :], 0.0, 1.0)  # (t, M)
        mean = np.asarray((onehot.T @ (v[None, :] * u).T).T)  # (t, H)
        var = np.asarray((onehot.T @ (v[None, :] * u * (1.0 - u)).T).T)
        share = ready_pct_worst(mean, var, np.ones_like(mean), c_h[None, :], host_vcpus[None, :])  # 100 E[(K-C)+]/E[K]
        ready_sum += (u * share[:, host_of]).sum(axis=0)
        util_sum += u.sum(axis=0)
    sel = measured[on]
    idx = on[sel]
    model = ready_sum[sel] / t_total
    return ReadyCheck(
        names=inv.names[idx], host=inv.hosts.names[hi[idx]], vcpus=inv.vcpus[idx].astype(np.int64),
        util_pct=100.0 * util_sum[sel] / t_total, measured_pct=inv.ready_pct[idx].astype(np.float64),
        costop_pct=None if inv.costop_pct is None else inv.costop_pct[idx].astype(np.float64),
        model_pct=model, vms_measured=int(measured.sum()), vms_no_host=int((measured & ~known).sum()),
        hosts=int(np.unique(hi[idx]).size), smt_gain=float(smt_gain), bound_pct=float(bound_pct), steps=t_total)


def _dist(x: np.ndarray, bound: float) -> dict:
    return {"mean": float(x.mean()), "median": float(np.median(x)), "p95": float(np.percentile(x, 95)), "max": float(x.max()),
            "vms_over_bound": int((x > bound).sum())}


def _corr(a: np.ndarray, b: np.ndarray, kind: str) -> float | None:
    """Pearson or Spearman r; None when either side is constant (no correlation is defined)."""
    from scipy import stats

    if a.size < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = (stats.pearsonr if kind == "pearson" else stats.spearmanr)(a, b)[0]
    return float(r) if np.isfinite(r) else None


def summary(rc: ReadyCheck | None) -> dict | None:
    """The comparison's figures for summary.json (``ready_check``): measured and model distributions per vCPU,
    the error model - measured, and the VMs above the bound in each."""
    if rc is None:
        return None
    out = {"vms_compared": int(rc.names.size), "vms_measured": rc.vms_measured, "vms_not_compared_host_unknown": rc.vms_no_host,
           "hosts": rc.hosts, "steps": rc.steps, "smt_gain": rc.smt_gain, "bound_pct": rc.bound_pct, "unit": "% per vCPU",
           "measured_basis": MEASURED_BASIS,
           "model": "binomial occupancy of runnable vCPUs against cores x smt_gain, normal approximation "
                    "(the plan's CPU Ready rule), today's hosts and placement from the inventory"}
    if rc.names.size == 0:
        return out
    err = rc.model_pct - rc.measured_pct
    a = np.abs(err)
    both = (rc.measured_pct > rc.bound_pct) & (rc.model_pct > rc.bound_pct)
    out |= {
        "measured": _dist(rc.measured_pct, rc.bound_pct),
        "model_pct": _dist(rc.model_pct, rc.bound_pct),
        "error": {"mean": float(err.mean()), "mean_abs": float(a.mean()), "median_abs": float(np.median(a)),
                  "p95_abs": float(np.percentile(a, 95)), "max_abs": float(a.max()), "rmse": float(np.sqrt((err ** 2).mean())),
                  "pearson_r": _corr(rc.measured_pct, rc.model_pct, "pearson"),
                  "spearman_r": _corr(rc.measured_pct, rc.model_pct, "spearman")},
        "vms_over_bound_both": int(both.sum()),
        "vms_model_under_measured_over": int(((rc.measured_pct > rc.bound_pct) & ~(rc.model_pct > rc.bound_pct)).sum()),
    }
    if rc.costop_pct is not None and np.isfinite(rc.costop_pct).any():
        c = rc.costop_pct[np.isfinite(rc.costop_pct)]
        out["measured_costop"] = {"vms": int(c.size), "mean": float(c.mean()), "p95": float(np.percentile(c, 95)),
                                  "max": float(c.max()), "note": "measured only: the plan's ready model has no co-stop"}
    return out


def per_vm_csv(rc: ReadyCheck) -> str:
    """``ready-check.csv``: one row per VM compared, numbers only (units in the header)."""
    from densim.csvsafe import safe_row

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["vm", "host", "vcpus", "cpu_use_pct", "measured_ready_pct_per_vcpu",
                "model_ready_pct_per_vcpu", "model_minus_measured_pct_per_vcpu"])
    for row in zip(rc.names.tolist(), rc.host.tolist(), rc.vcpus.tolist(), rc.util_pct.tolist(),
                   rc.measured_pct.tolist(), rc.model_pct.tolist(), (rc.model_pct - rc.measured_pct).tolist()):
        w.writerow(safe_row([row[0], row[1], int(row[2])] + [float(f"{x:.6g}") for x in row[3:]]))
    return buf.getvalue()


def figure(rc: ReadyCheck) -> dict:
    """Per-VM scatter: measured (x) against model (y), both per vCPU, with the line y = x and the bound."""
    top = float(max(rc.measured_pct.max(initial=0.0), rc.model_pct.max(initial=0.0), rc.bound_pct)) * 1.1
    b = rc.bound_pct
    return {"data": [
        {"type": "scatter", "mode": "markers", "name": "VM", "x": rc.measured_pct.tolist(), "y": rc.model_pct.tolist(),
         "text": [f"{n} on {h}, {int(v)} vCPU" for n, h, v in zip(rc.names.tolist(), rc.host.tolist(), rc.vcpus.tolist())],
         "hovertemplate": "%{text}<br>measured %{x:.2f} %<br>model %{y:.2f} %<extra></extra>",
         "marker": {"color": "#3b6ea8", "size": 6, "opacity": 0.6}},
        {"type": "scatter", "mode": "lines", "name": "model = measured", "x": [0, top], "y": [0, top],
         "line": {"color": "#888", "dash": "dash", "width": 1}},
        {"type": "scatter", "mode": "lines", "name": f"bound {b:g} %", "x": [b, b, None, 0, top], "y": [0, top, None, b, b],
         "line": {"color": "#c0504d", "dash": "dot", "width": 1}},
    ], "layout": {"title": {"text": f"CPU Ready per VM today: measured against the model ({rc.names.size:,} VMs on {rc.hosts:,} hosts)",
                            "y": 0.98, "yanchor": "top"}, "height": 480,
                  "margin": {"l": 70, "r": 40, "t": 90, "b": 50},
                  "legend": {"orientation": "h", "x": 0, "y": 1.0, "yanchor": "bottom"},
                  "xaxis": {"title": {"text": "measured CPU Ready per vCPU (%)"}, "range": [0, top], "ticksuffix": " %"},
                  "yaxis": {"title": {"text": "model CPU Ready per vCPU (%)"}, "range": [0, top], "ticksuffix": " %"}}}


def table_rows(s: dict) -> list[dict]:
    """The report's rows: figure, measured, model, model - measured."""
    m, p = s["measured"], s["model_pct"]
    rows = [{"label": f"{lab} over VMs (% per vCPU)", "measured": m[k], "model": p[k], "difference": p[k] - m[k], "fmt": "%.2f"}
            for k, lab in (("mean", "mean"), ("median", "median"), ("p95", "95th percentile"), ("max", "maximum"))]
    rows.append({"label": f"VMs above {s['bound_pct']:g} % per vCPU", "measured": m["vms_over_bound"], "model": p["vms_over_bound"],
                 "difference": p["vms_over_bound"] - m["vms_over_bound"], "fmt": "%d"})
    return rows
