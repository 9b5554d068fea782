"""Time remaining: when CPU Ready crosses its bound and when memory runs out, from a history of demand.

1. **History.** A cluster-level CSV (``date, vms, vcpus, cpu_used_mhz, mem_used_gib``) or any inventory
   with a demand series (:func:`history_from_inventory`: the VMs' summed CPU demand, vCPUs of the VMs
   present and summed memory in use per step). Each resource is reduced to one value per period (a day
   or a week) by a statistic (default ``max``: the busiest step, where CPU Ready peaks).
2. **Fit.** Per resource, statsmodels' innovations state-space ETS model (``ETSModel``: additive errors,
   additive trend, optionally damped, with or without an additive weekly season chosen by AICc;
   Hyndman & Athanasopoulos, *Forecasting: Principles and Practice*, 3rd ed., ch. 8), on the series
   divided by its recent level.
3. **Simulate.** ``replications`` sample paths per resource from the fitted model
   (``ETSResults.simulate``, normal errors with the fitted variance) drawn from one numpy Generator per
   resource spawned from the recorded seed. The three resources are simulated independently.
4. **What-if growth.** Deterministic additions on every path: ``floor(rate x months)`` VMs of a given
   size from ``growth.start``, and each project's VMs from its date.
5. **QoS.** Each path is translated into the cluster's quality of service with the plan's models for
   hosts of one type, the VMs spread evenly (as DRS balances them): per host ``n = V / H`` vCPUs, each busy
   ``u = D / (V f)`` (``D`` summed demand MHz, ``f`` core MHz), runnable vCPUs ``K`` with mean ``n u`` and
   variance ``n u (1 - u)``, and the worst VM's CPU Ready ``100 u E[(K - C)+] / E[K]`` against
   ``C`` = cores x SMT gain (:func:`densim.placement.filters.ready_pct_worst`, modelling guide §3.2).
   Memory runs out when memory in use exceeds ``memory_limit`` x the hosts' usable memory.
6. **Crossing dates.** Per path, the first period above the bound; the report gives the central
   ``interval`` (default 10th-90th percentile) and the median over the replications, the share of paths
   that cross within the horizon, and "not within the horizon" when fewer than the interval's lower
   share do.

Equal utilisation on every vCPU gives the largest variance of ``K`` for its mean (``sum u_j(1-u_j)``
is largest when the ``u_j`` are equal) but the smallest worst-VM factor ``u``; docs/background/forecast.md
discusses both.
"""

from __future__ import annotations

import csv
import datetime as dt
import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from densim.errors import InputError
from densim.spec.forecast import ForecastSpec, GrowthSpec, VmSize

GIB = 2.0**30
DAYS_PER_MONTH = 365.25 / 12  # 30.4375
PERIOD_DAYS = {"day": 1, "week": 7}
RESOURCES = ("cpu_mhz", "vcpus", "mem_bytes")
HISTORY_COLUMNS = {"date": "date or date-time (ISO 8601)", "vms": "VMs running", "vcpus": "vCPUs of the running VMs",
                   "cpu_used_mhz": "summed CPU demand, MHz", "mem_used_gib": "summed memory in use, GiB"}


# --------------------------------------------------------------------------------------------- history


@dataclass
class History:
    """One value per period and resource; ``None`` where the source has no such series."""

    dates: np.ndarray  # (P,) datetime64[D], first day of each period
    period: str
    vms: np.ndarray | None = None
    vcpus: np.ndarray | None = None
    cpu_mhz: np.ndarray | None = None
    mem_bytes: np.ndarray | None = None
    source: str = ""
    fmt: str = ""
    notes: list[str] = field(default_factory=list)

    @property
    def n(self) -> int:
        return int(self.dates.shape[0])


def _period_start(days: np.ndarray, period: str) -> np.ndarray:
    """First day of the period holding each day (weeks start on Monday; 1970-01-05 was one)."""
    d = days.astype("datetime64[D]")
    if period == "day":
        return d
    off = (d - np.datetime64("1970-01-05")).astype(np.int64) % 7
    return d - off.astype("timedelta64[D]")


def _reduce(values: np.ndarray, keys: np.ndarray, statistic: str) -> tuple[np.ndarray, np.ndarray]:
    """Per distinct key (sorted), the statistic of its values."""
    order = np.argsort(keys, kind="stable")
    k, v = keys[order], values[order]
    uniq, first = np.unique(k, return_index=True)
    parts = np.split(v, first[1:])
    fn = {"max": np.max, "mean": np.mean, "p95": lambda a: np.percentile(a, 95)}[statistic]
    return uniq, np.array([fn(p) for p in parts], dtype=np.float64)


def _check_regular(dates: np.ndarray, period: str, source: str) -> None:
    step = np.timedelta64(PERIOD_DAYS[period], "D")
    gaps = np.flatnonzero(np.diff(dates) != step)
    if gaps.size:
        i = int(gaps[0])
        raise InputError(source, "date", f"the history has a gap: nothing between {dates[i]} and {dates[i + 1]} "
                         f"(one value per {period} is needed; use forecast.period: week for weekly rows)")


def read_cluster_history(path: str | Path, period: str = "day", statistic: str = "max") -> History:
    """A cluster-level history CSV: ``date`` and any of ``vms, vcpus, cpu_used_mhz, mem_used_gib`` per row."""
    path = Path(path)
    src = str(path)
    from densim.workloads.readers._checks import read_bytes, text_of

    text = text_of(read_bytes(path, "history CSV"), path, "CSV file")  # UTF-8 or UTF-16, a BOM dropped
    rows = list(csv.reader(text.splitlines()))
    if not rows:
        raise InputError(src, "", "empty file: a header row (date, vms, vcpus, cpu_used_mhz, mem_used_gib) is needed")
    head = [h.strip() for h in rows[0]]
    unknown = [h for h in head if h not in HISTORY_COLUMNS]
    if unknown:
        raise InputError(src, "header", f"unknown column {unknown[0]!r}; the columns are {', '.join(HISTORY_COLUMNS)}")
    if "date" not in head:
        raise InputError(src, "header", "no 'date' column")
    if not any(c in head for c in ("cpu_used_mhz", "mem_used_gib")):
        raise InputError(src, "header", "neither 'cpu_used_mhz' nor 'mem_used_gib': nothing to forecast")
    if "cpu_used_mhz" in head and "vcpus" not in head:
        raise InputError(src, "header", "'cpu_used_mhz' needs 'vcpus' (CPU Ready depends on the vCPUs sharing the cores)")
    data = rows[1:]
    if not data:
        raise InputError(src, "", "no data rows")
    days = np.empty(len(data), dtype="datetime64[D]")
    stamps = np.empty(len(data), dtype="datetime64[s]")  # the full date-time: several a day are reduced per day
    cols = {h: np.empty(len(data)) for h in head if h != "date"}
    for r, row in enumerate(data, start=2):
        if len(row) != len(head):
            raise InputError(src, f"row {r}", f"{len(row)} fields, the header has {len(head)}")
        for h, cell in zip(head, row):
            cell = cell.strip()
            if h == "date":
                try:
                    when = dt.datetime.fromisoformat(cell)
                    days[r - 2] = np.datetime64(when.date())
                    stamps[r - 2] = np.datetime64(when.replace(tzinfo=None) - (when.utcoffset() or dt.timedelta(0)), "s")
                except ValueError:
                    raise InputError(src, f"row {r}, date", f"not an ISO date: {cell!r}") from None
                continue
            try:
                x = float(cell)
            except ValueError:
                raise InputError(src, f"row {r}, {h}", f"not a number: {cell!r}") from None
            if not math.isfinite(x) or x < 0:
                raise InputError(src, f"row {r}, {h}", f"must be a finite number >= 0, got {cell!r}")
            if x > 1e12:  # 1e12 MHz, GiB, VMs or vCPUs: no cluster has that; beyond it the fit overflows
                raise InputError(src, f"row {r}, {h}", f"must be at most 1e12, got {cell!r}")
            cols[h][r - 2] = x
    order = np.argsort(stamps, kind="stable")
    same = np.flatnonzero(stamps[order][1:] == stamps[order][:-1])
    if same.size:  # two rows for one date (or date-time): which one is that time's figure is unknown
        a, b = int(order[same[0]]) + 2, int(order[same[0] + 1]) + 2  # stable sort: a < b
        raise InputError(src, f"row {b}, date", f"duplicate date {data[b - 2][head.index('date')].strip()!r} "
                                                f"(also in row {a}): one row per date")
    keys = _period_start(days, period)
    out: dict[str, np.ndarray] = {}
    dates = None
    for h, v in cols.items():
        dates, out[h] = _reduce(v, keys, statistic)
    if dates is None:
        dates = np.unique(keys)
    _check_regular(dates, period, src)
    return History(dates=dates, period=period, vms=out.get("vms"), vcpus=out.get("vcpus"), cpu_mhz=out.get("cpu_used_mhz"),
                   mem_bytes=None if "mem_used_gib" not in out else out["mem_used_gib"] * GIB, source=src, fmt="cluster-history")


def history_from_inventory(inv, period: str = "day", statistic: str = "max") -> History:
    """Per step, the summed CPU demand, the vCPUs and VMs present (from the VMs' arrivals and departures when the
    inventory has them, else all of them) and the summed memory in use; reduced per period."""
    src = inv.source or "inventory"
    if inv.cpu_mhz is None and inv.mem_used_bytes is None:
        raise InputError(src, "", "the inventory has no demand series (sizes only): a forecast needs a history")
    t_steps = inv.n_steps if inv.cpu_mhz is not None else int(inv.mem_used_bytes.shape[0])
    t_s = inv.start_s + inv.step_s * np.arange(t_steps)
    notes = []
    if inv.start_s < 1e8:
        notes.append(f"the inventory's times start at {inv.start_s:g} s, which looks relative: dates count from 1970-01-01")
    v = inv.vcpus.astype(np.float64)
    if inv.vm_start_s is not None:
        s = np.where(np.isfinite(inv.vm_start_s), inv.vm_start_s, -np.inf)
        e = np.where(np.isfinite(inv.vm_end_s), inv.vm_end_s, np.inf) if inv.vm_end_s is not None else np.full(v.size, np.inf)
        os_, oe = np.argsort(s), np.argsort(e)
        cs = np.concatenate([[0.0], np.cumsum(v[os_])])
        ce = np.concatenate([[0.0], np.cumsum(v[oe])])
        ns, ne = np.searchsorted(s[os_], t_s, side="right"), np.searchsorted(e[oe], t_s, side="right")
        vcpus_t = cs[ns] - ce[ne]
        vms_t = (ns - ne).astype(np.float64)
    else:
        vcpus_t = np.full(t_steps, v.sum())
        vms_t = np.full(t_steps, float(inv.n_vms))
    days = (t_s // 86400).astype(np.int64).astype("datetime64[D]")
    keys = _period_start(days, period)
    dates, vcpus = _reduce(vcpus_t, keys, statistic)
    _, vms = _reduce(vms_t, keys, statistic)
    cpu = mem = None
    if inv.cpu_mhz is not None:
        _, cpu = _reduce(inv.cpu_mhz.sum(axis=1, dtype=np.float64), keys, statistic)
    else:
        notes.append("CPU Ready not forecast: the inventory has no CPU demand series")
    if inv.mem_used_bytes is not None:
        _, mem = _reduce(inv.mem_used_bytes.sum(axis=1, dtype=np.float64), keys, statistic)
    else:
        notes.append("memory not forecast: the inventory has no memory-in-use series")
    _check_regular(dates, period, src)
    # a partly covered first or last period would bias the statistic: keep only whole periods
    per = PERIOD_DAYS[period] * 86400
    whole = (np.bincount(np.searchsorted(dates, keys), minlength=dates.size) * inv.step_s) >= per - inv.step_s / 2
    if not whole.all():
        keep = np.flatnonzero(whole)
        if keep.size == 0:
            raise InputError(src, "", f"the history covers no whole {period}")
        lo, hi = int(keep[0]), int(keep[-1]) + 1
        if not whole[lo:hi].all():
            raise InputError(src, "", f"the history has partly covered {period}s inside it")
        sl = slice(lo, hi)
        dates, vcpus, vms = dates[sl], vcpus[sl], vms[sl]
        cpu = None if cpu is None else cpu[sl]
        mem = None if mem is None else mem[sl]
    return History(dates=dates, period=period, vms=vms, vcpus=vcpus, cpu_mhz=cpu, mem_bytes=mem, source=src, fmt=inv.fmt,
                   notes=notes)


# --------------------------------------------------------------------------------------------- fit and simulate


@dataclass
class Fit:
    resource: str
    model: str  # ETS taxonomy, e.g. "AAN" (additive error, additive trend, no season), "AAdA", or "constant"
    scale: float
    result: object = None  # statsmodels ETSResults (None for a constant series)
    aicc: float = float("nan")
    aicc_other: float = float("nan")  # the other seasonality's AICc when auto chose between them
    params: dict = field(default_factory=dict)
    slope_per_period: float = 0.0  # last trend state, in the resource's unit
    level: float = 0.0  # last level state

    def describe(self) -> dict:
        return {"model": self.model, "aicc": _num(self.aicc), "aicc_other": _num(self.aicc_other), "params": self.params,
                "level": self.level, "slope_per_period": self.slope_per_period}

    def simulate(self, horizon: int, reps: int, rng: np.random.Generator) -> np.ndarray:
        """(horizon, reps) sample paths after the last period, >= 0."""
        if self.result is None:
            return np.full((horizon, reps), self.level)
        sim = np.asarray(self.result.simulate(horizon, anchor="end", repetitions=reps, rng=rng), dtype=np.float64)
        return np.maximum(sim.reshape(horizon, reps) * self.scale, 0.0)


def _num(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def fit_resource(resource: str, y: np.ndarray, spec: ForecastSpec, period: str, source: str = "") -> Fit:
    """Fit an ETS model to ``y`` (one value per period), choosing the weekly season by AICc when asked."""
    from statsmodels.tsa.exponential_smoothing.ets import ETSModel

    y = np.asarray(y, dtype=np.float64)
    n = y.size
    if n < spec.min_periods:
        raise InputError(source, "", f"the history has {n} {period}(s) of {resource}; the forecast needs at least "
                         f"forecast.min_periods = {spec.min_periods}")
    scale = float(np.mean(np.abs(y[-min(n, 7):]))) or 1.0
    z = y / scale
    if np.ptp(z) == 0.0:
        return Fit(resource, "constant", scale, level=float(y[-1]))
    season_ok = period == "day" and n >= 3 * 7
    if spec.seasonality == "weekly" and not season_ok:
        raise InputError(source, "forecast.seasonality", f"a weekly season needs at least 21 daily periods, the history has {n}")
    options = {"none": [False], "weekly": [True], "auto": [False, True] if season_ok else [False]}[spec.seasonality]
    fits = []
    for seasonal in options:
        m = ETSModel(z, error="add", trend="add", damped_trend=spec.damped_trend, seasonal="add" if seasonal else None,
                     seasonal_periods=7 if seasonal else None)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # convergence chatter; the chosen fit's figures are reported
            r = m.fit(disp=False, maxiter=2000)
        fits.append((float(r.aicc), seasonal, r))
    fits.sort(key=lambda f: f[0] if math.isfinite(f[0]) else math.inf)
    aicc, seasonal, r = fits[0]
    states = np.asarray(r.states)
    name = "A" + ("Ad" if spec.damped_trend else "A") + ("A" if seasonal else "N")
    params = {k: float(v) for k, v in zip(r.param_names, np.asarray(r.params)) if k in ("smoothing_level", "smoothing_trend",
                                                                                         "smoothing_seasonal", "damping_trend")}
    params["sigma"] = float(np.sqrt(r.mse)) * scale
    return Fit(resource, name, scale, r, aicc, fits[1][0] if len(fits) > 1 else float("nan"), params,
               slope_per_period=float(states[-1, 1]) * scale, level=float(states[-1, 0]) * scale)


# --------------------------------------------------------------------------------------------- what-if growth


def mean_vm(h: History) -> VmSize | None:
    """The history's mean VM over its last seven periods (a week of days, so a weekly season averages out):
    each resource's mean of ``resource / VMs``. None when the history has no VM count."""
    if h.vms is None or (h.vms[-7:] <= 0).any():
        return None
    k = slice(-min(7, h.n), None)

    def per_vm(a: np.ndarray | None) -> float:
        return 0.0 if a is None else float(np.mean(a[k] / h.vms[k]))

    return VmSize(vcpus=max(1, round(per_vm(h.vcpus))), cpu_demand=per_vm(h.cpu_mhz), memory_used=per_vm(h.mem_bytes))


def growth_added(dates: np.ndarray, g: GrowthSpec, default_vm: VmSize | None, first_day: np.datetime64) -> dict[str, np.ndarray]:
    """VMs, vCPUs, CPU demand (MHz) and memory in use (bytes) the what-ifs add in each future period.

    Monthly additions: ``floor(rate x days since start / 30.4375)`` VMs on a period starting that many days after
    ``growth.start`` (default the first forecast day); a project adds its VMs from the first period that starts on or
    after its date."""
    d = dates.astype("datetime64[D]")
    out = {k: np.zeros(d.size) for k in ("vms", "vcpus", "cpu_mhz", "mem_bytes")}

    def add(count: np.ndarray, vm: VmSize) -> None:
        out["vms"] += count
        out["vcpus"] += count * vm.vcpus
        out["cpu_mhz"] += count * vm.cpu_demand_mhz
        out["mem_bytes"] += count * vm.memory_used_bytes

    if g.vms_per_month > 0:
        vm = g.vm or default_vm
        if vm is None:
            raise InputError(None, "forecast.growth.vm", "vms_per_month needs the added VM's size: give growth.vm "
                             "(vcpus, cpu_demand, memory_used) or a history with a VM count")
        start = np.datetime64(g.start) if g.start is not None else first_day
        days = (d - start).astype(np.int64).astype(np.float64)
        add(np.where(days >= 0, np.floor(g.vms_per_month * days / DAYS_PER_MONTH + 1e-9), 0.0), vm)
    for i, p in enumerate(g.projects):
        vm = p.vm or g.vm or default_vm
        if vm is None:
            raise InputError(None, f"forecast.growth.projects[{i}].vm", "give the project's VM size (vcpus, cpu_demand, memory_used) "
                             "or a history with a VM count")
        add(np.where(d >= np.datetime64(p.date), float(p.vms), 0.0), vm)
    return out


# --------------------------------------------------------------------------------------------- QoS of a path


@dataclass(frozen=True)
class Cluster:
    """Hosts of one type whose time remaining is forecast."""

    name: str
    host: object  # densim.placement.prefabs.HostType
    hosts: int
    ha_spare_hosts: int = 0

    @property
    def active(self) -> int:
        return self.hosts - self.ha_spare_hosts


def cluster_ready_pct(c: Cluster, vcpus: np.ndarray, cpu_mhz: np.ndarray) -> np.ndarray:
    """Worst VM's CPU Ready % per vCPU on an evenly loaded host (plan's binomial/normal model)."""
    from densim.placement.filters import ready_pct_worst

    h = c.host
    v = np.maximum(np.asarray(vcpus, dtype=np.float64), 1e-12)
    n = v / c.active
    u = np.clip(np.asarray(cpu_mhz, dtype=np.float64) / (v * h.core_mhz), 0.0, 1.0)
    return ready_pct_worst(n * u, n * u * (1.0 - u), u, h.logical_capacity, n)


def cluster_memory_frac(c: Cluster, mem_bytes: np.ndarray) -> np.ndarray:
    """Memory in use / usable memory of the active hosts."""
    return np.asarray(mem_bytes, dtype=np.float64) / (c.active * c.host.usable_mem_bytes)


def crossing(exceed: np.ndarray, dates: np.ndarray, interval: float) -> dict:
    """First period above the bound per path (columns); the central ``interval`` and median over paths."""
    hit = exceed.any(axis=0)
    first = np.where(hit, exceed.argmax(axis=0), np.iinfo(np.int64).max)
    lo_q = (1.0 - interval) / 2.0
    qs = np.quantile(first, [lo_q, 0.5, 1.0 - lo_q], method="inverted_cdf")

    def date(i) -> str | None:
        return None if i >= dates.size else str(dates[int(i)])

    return {"p_cross": float(hit.mean()), "date_lo": date(qs[0]), "date_median": date(qs[1]), "date_hi": date(qs[2]),
            "periods_lo": None if qs[0] >= dates.size else int(qs[0]) + 1,
            "periods_median": None if qs[1] >= dates.size else int(qs[1]) + 1,
            "periods_hi": None if qs[2] >= dates.size else int(qs[2]) + 1}


def _words(what: str, r: dict, interval: float, end: str) -> str:
    pct = f"{interval * 100:g} %"
    if r["status"] == "already":
        return f"{what} already: {r['now_text']} in the last period of the history"
    if r["status"] == "not forecast":
        return f"{what}: not forecast ({r['reason']})"
    if r["date_lo"] is None:
        return (f"{what} not within the horizon (to {end}): {r['p_cross'] * 100:.0f} % of the replications cross")
    if r["date_hi"] is None:
        return (f"{what} from {r['date_lo']} (lower end of the {pct} interval); {r['p_cross'] * 100:.0f} % of the replications "
                f"cross within the horizon (to {end})")
    return f"{what} between {r['date_lo']} and {r['date_hi']} ({pct} interval; median {r['date_median']})"


def _bands(a: np.ndarray, interval: float) -> dict:
    lo_q = (1.0 - interval) / 2.0
    q = np.quantile(a, [lo_q, 0.5, 1.0 - lo_q], axis=1)
    return {"lo": q[0].tolist(), "median": q[1].tolist(), "hi": q[2].tolist()}


# --------------------------------------------------------------------------------------------- the forecast


def time_remaining(h: History, spec: ForecastSpec, clusters: list[Cluster], *, cpu_ready_pct: float = 5.0) -> dict:
    """Fit, simulate with what-if growth, and report crossing dates per cluster and resource (a JSON-ready dict)."""
    import statsmodels

    if not clusters:
        raise InputError(None, "forecast.current", "no hosts to forecast for: give forecast.current (hosts, cpu, memory)")
    per_days = PERIOD_DAYS[h.period]
    horizon = max(1, math.ceil(spec.horizon_days / per_days))
    step = np.timedelta64(per_days, "D")
    future = h.dates[-1] + step * np.arange(1, horizon + 1)
    bound = spec.cpu_ready_pct if spec.cpu_ready_pct is not None else cpu_ready_pct
    reps = spec.replications
    rngs = [np.random.default_rng(s) for s in np.random.SeedSequence(spec.seed).spawn(len(RESOURCES))]
    fits: dict[str, Fit] = {}
    paths: dict[str, np.ndarray] = {}
    for res_name, rng in zip(RESOURCES, rngs):
        y = getattr(h, res_name)
        if y is None:
            continue
        fits[res_name] = f = fit_resource(res_name, y, spec, h.period, h.source)
        paths[res_name] = f.simulate(horizon, reps, rng)
    vm0 = mean_vm(h)
    added = growth_added(future, spec.growth, vm0, future[0])
    for k in ("cpu_mhz", "vcpus", "mem_bytes"):
        if k in paths:
            paths[k] = paths[k] + added[k][:, None]
    end = str(future[-1] + step - np.timedelta64(1, "D"))
    notes = list(h.notes)
    out_clusters = []
    for c in clusters:
        hst = c.host
        row: dict = {"name": c.name, "hosts": c.hosts, "ha_spare_hosts": c.ha_spare_hosts,
                     "host": {"cores": int(hst.cores), "logical_capacity": float(hst.logical_capacity), "core_mhz": float(hst.core_mhz),
                              "usable_memory_gib": float(hst.usable_mem_bytes / GIB)}}
        if "cpu_mhz" in paths and "vcpus" in paths:
            now = float(cluster_ready_pct(c, h.vcpus[-1:], h.cpu_mhz[-1:])[0])
            r = {"bound_pct": bound, "now_pct": now}
            if now > bound:
                r |= {"status": "already", "now_text": f"{now:.2f} % > {bound:g} %"}
            else:
                ready = cluster_ready_pct(c, paths["vcpus"], paths["cpu_mhz"])
                r |= crossing(ready > bound, future, spec.interval)
                r["status"] = "crosses" if r["date_median"] is not None else "not within horizon"
                r["path_pct"] = _bands(ready, spec.interval)
        else:
            r = {"bound_pct": bound, "status": "not forecast",
                 "reason": "the history has no CPU demand" if h.cpu_mhz is None else "the history has no vCPU count"}
        r["text"] = _words(f"CPU Ready crosses {bound:g} % on {c.name}", r, spec.interval, end)
        row["cpu_ready"] = r
        if "mem_bytes" in paths:
            now = float(cluster_memory_frac(c, h.mem_bytes[-1:])[0])
            m = {"limit_frac": spec.memory_limit, "now_frac": now,
                 "capacity_gib": float(c.active * hst.usable_mem_bytes * spec.memory_limit / GIB)}
            if now > spec.memory_limit:
                m |= {"status": "already", "now_text": f"{now * 100:.1f} % of usable memory in use"}
            else:
                frac = cluster_memory_frac(c, paths["mem_bytes"])
                m |= crossing(frac > spec.memory_limit, future, spec.interval)
                m["status"] = "crosses" if m["date_median"] is not None else "not within horizon"
                m["path_frac"] = _bands(frac, spec.interval)
        else:
            m = {"limit_frac": spec.memory_limit, "status": "not forecast", "reason": "the history has no memory in use"}
        m["text"] = _words(f"memory runs out on {c.name}", m, spec.interval, end)
        row["memory"] = m
        row["headline"] = _headline(c.name, r, m, spec.interval, bound)
        out_clusters.append(row)
    g = spec.growth
    return {
        "method": "statsmodels ETSModel (additive errors and trend, weekly season by AICc), simulated paths; CPU Ready "
                  "from the plan's binomial/normal ready model on evenly loaded hosts",
        "statsmodels_version": statsmodels.__version__,
        "seed": spec.seed, "replications": reps, "interval": spec.interval, "period": h.period, "statistic": spec.statistic,
        "horizon_days": spec.horizon_days, "horizon_end": end,
        "history": {"source": h.source, "format": h.fmt, "start": str(h.dates[0]), "end": str(h.dates[-1] + step - np.timedelta64(1, "D")),
                    "periods": h.n,
                    "last": {"vms": _last(h.vms), "vcpus": _last(h.vcpus), "cpu_mhz": _last(h.cpu_mhz),
                             "mem_gib": None if h.mem_bytes is None else float(h.mem_bytes[-1] / GIB)}},
        "fits": {k: f.describe() for k, f in fits.items()},
        "growth": {"vms_per_month": g.vms_per_month, "start": str(g.start or future[0]),
                   "vm": _vm_dict(g.vm or vm0), "vm_from": "growth.vm" if g.vm is not None else "history mean VM",
                   "projects": [{"name": p.name, "date": str(p.date), "vms": p.vms, "vm": _vm_dict(p.vm or g.vm or vm0)}
                                for p in g.projects],
                   "added_at_horizon": {k: float(v[-1]) for k, v in added.items()}},
        "dates": [str(d) for d in future],
        "clusters": out_clusters,
        "notes": notes,
    }


def _last(a: np.ndarray | None) -> float | None:
    return None if a is None else float(a[-1])


def _vm_dict(vm: VmSize | None) -> dict | None:
    if vm is None:
        return None
    return {"vcpus": vm.vcpus, "cpu_demand_mhz": vm.cpu_demand_mhz, "memory_used_gib": vm.memory_used_bytes / GIB}


def _headline(name: str, r: dict, m: dict, interval: float, bound: float) -> str:
    """'CPU Ready crosses 5 % on this cluster between <date> and <date> (80 % interval); memory runs out on <date>'."""
    parts = [r["text"]]
    if m["status"] == "crosses" and m["date_hi"] is not None:
        parts.append(f"memory runs out on {m['date_median']} ({interval * 100:g} % interval {m['date_lo']} to {m['date_hi']})")
    else:
        parts.append(m["text"].replace(f" on {name}", ""))
    return "; ".join(parts)


# --------------------------------------------------------------------------------------------- entry points


def clusters_from(spec: ForecastSpec, host_type) -> list[Cluster]:
    """The clusters named by ``forecast.current``; ``host_type`` builds a host type from a candidate-like entry
    (:func:`densim.tools.plan.capacity.host_type_of`, passed in: capacity imports this module for its hook)."""
    from densim.catalog.core import CatalogError

    out = []
    if spec.current is not None:
        try:
            out.append(Cluster(spec.current.name, host_type(spec.current), spec.current.hosts, spec.ha_spare_hosts))
        except (CatalogError, KeyError) as exc:
            raise InputError(None, "forecast.current.cpu.model", str(exc).strip("'\"")) from None
    return out


def plan_time_remaining(inv, plan_spec, results, host_type_of) -> dict:
    """The hook of ``densim plan``: time remaining for ``forecast.current`` and for the best feasible candidate
    (its host count, spares included), from the plan's inventory."""
    fs: ForecastSpec = plan_spec.forecast
    h = history_from_inventory(inv, fs.period, fs.statistic)
    clusters = clusters_from(fs, host_type_of)
    ok = sorted((r for r in results if r.feasible), key=lambda r: (r.tco.get("per_vm_usd", float("inf")), r.n_hosts))
    if ok:
        best = ok[0]
        cand = next(c for c in plan_spec.candidates if c.name == best.name)
        spares = max(plan_spec.qos.ha_spare_hosts, fs.ha_spare_hosts)
        clusters.append(Cluster(f"{best.name} x {best.n_hosts} (this plan)", host_type_of(cand), best.n_hosts, spares))
    return time_remaining(h, fs, clusters, cpu_ready_pct=plan_spec.qos.cpu_ready_pct)


def is_cluster_history(path: str | Path) -> bool:
    """A CSV whose header holds ``date`` and only cluster-history columns."""
    p = Path(path)
    if not (p.is_file() and p.suffix.lower() == ".csv"):
        return False
    try:
        with p.open(encoding="utf-8-sig") as fh:
            head = [h.strip() for h in next(csv.reader(fh), [])]
    except (OSError, UnicodeDecodeError):
        return False
    return "date" in head and set(head) <= set(HISTORY_COLUMNS)


def load_history(path: str | Path, fmt: str, spec: ForecastSpec, **opts) -> tuple[History, object]:
    """The history of ``path`` (a cluster-history CSV or any inventory format) and the inventory (None for a CSV)."""
    if fmt == "cluster-history" or (fmt == "auto" and is_cluster_history(path)):
        return read_cluster_history(path, spec.period, spec.statistic), None
    from densim.workloads.formats import detect_format, load_inventory

    fmt = detect_format(path) if fmt == "auto" else fmt
    inv = load_inventory(path, fmt, **opts)
    return history_from_inventory(inv, spec.period, spec.statistic), inv


def figures(tr: dict) -> list[dict]:
    """Per cluster: the CPU Ready and memory-in-use bands over the forecast (median, interval) against the bounds."""
    figs = []
    x = tr["dates"]
    lo = f"{(1 - tr['interval']) / 2 * 100:g}th"
    hi = f"{(1 + tr['interval']) / 2 * 100:g}th"
    for c in tr["clusters"]:
        for key, band, bound, title, unit, scale in (
                ("cpu_ready", "path_pct", c["cpu_ready"].get("bound_pct"), "worst VM's CPU Ready", "%", 1.0),
                ("memory", "path_frac", c["memory"].get("limit_frac"), "memory in use / usable memory", "%", 100.0)):
            b = c[key].get(band)
            if b is None:
                continue
            data = [
                {"type": "scatter", "mode": "lines", "name": f"{hi} percentile", "x": x, "y": [v * scale for v in b["hi"]],
                 "line": {"width": 0}, "showlegend": False},
                {"type": "scatter", "mode": "lines", "name": f"{lo}-{hi} percentile", "x": x, "y": [v * scale for v in b["lo"]],
                 "fill": "tonexty", "line": {"width": 0}},
                {"type": "scatter", "mode": "lines", "name": "median", "x": x, "y": [v * scale for v in b["median"]]},
                {"type": "scatter", "mode": "lines", "name": "bound", "x": [x[0], x[-1]], "y": [bound * scale] * 2,
                 "line": {"dash": "dash"}},
            ]
            figs.append({"data": data, "layout": {"title": {"text": f"{c['name']}: {title}"}, "height": 380,
                                                  "yaxis": {"title": {"text": unit}}}})
    return figs


def write_outputs(tr: dict, out_dir: str | Path) -> Path:
    """``summary.json`` and ``report.html`` in ``out_dir``, replacing it whole (:func:`densim.atomic.output_folder`)."""
    from densim.atomic import output_folder, write_json_atomic
    from densim.reports import write_report

    figs = {f"fig{i}": f for i, f in enumerate(figures(tr))}
    with output_folder(out_dir) as out:
        write_report(out / "report.html", "forecast.html.j2", figures=figs, title="Time remaining", seed=tr["seed"],
                     time_remaining=tr, figure_ids=list(figs))
        write_json_atomic(out / "summary.json", tr)
    return Path(out_dir)
