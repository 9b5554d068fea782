"""Memory and storage quality of service for the capacity plan, checked at full time resolution.

The plan places VMs on windowed demand; these checks replay a placement step by step through the
same models the engine uses and report, per host, the worst memory slowdown and the worst mean
I/O latency:

* **memory** (:mod:`densim.models.memory`, modelling guide §2): on every host whose configured
  memory (plus per-VM overhead, the hypervisor's share and minFree) exceeds its memory, the
  reclamation pipeline (page sharing, balloon, compression, host swap) runs for every step with
  active memory from the inventory's memory-in-use series (or the memory profile's active
  fraction), and the fault-cost fixed point with queueing at the swap device gives each VM's
  slowdown ``X0 / X``. Access rates scale with each VM's CPU use in the step, as in the engine.
* **storage** (:mod:`densim.models.storage.vmio`, guide §4): each host's VMs share the
  candidate's local datastore (drives x RAID behind optional controllers); their summed disk
  traffic (bytes/s from the inventory / block size) gives the host's IOPS and read fraction per
  step, and the open queueing network gives the mean latency. ``max_iops_at_latency`` inverts it
  to the per-host IOPS budget the placement uses.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pydantic import ConfigDict

from densim.plant.memory import memory_params


_CFG = ConfigDict(defer_build=True, frozen=True, extra="forbid", populate_by_name=True)


from densim.spec.plan import LocalStorage  # noqa: E402,F401  (the candidates' local datastore)


# ---------------------------------------------------------------------------------------------
# memory


from densim.tools.plan.memcheck import MemoryCheck, step_blocks  # noqa: E402,F401  (its own module: tiering uses both)


def memory_check(host_of: np.ndarray, n_hosts: int, host_mem_bytes: float, mem_bytes: np.ndarray,
                 capacity_mhz: np.ndarray, cpu_mhz: np.ndarray, mem_used_bytes: np.ndarray | None, settings,
                 catalog, *, block_elements: int = 2_000_000, images=None, sockets: int = 1) -> MemoryCheck:
    """Worst memory slowdown per host for a placement (``settings``: scenario ``MemorySettings``). ``images``
    (:class:`densim.tools.plan.memcheck.PlanImages`): page sharing by guest image, one copy per socket kept."""
    if settings.tiering is not None:  # an NVMe memory tier on every candidate host (densim.tools.plan.tiering)
        from densim.tools.plan.tiering import memory_check_tiered

        return memory_check_tiered(host_of, n_hosts, host_mem_bytes, mem_bytes, capacity_mhz, cpu_mhz, mem_used_bytes,
                                   settings, catalog, block_elements=block_elements, images=images, sockets=sockets)
    from densim.models import memory as M
    from densim.models.devices import DeviceSpec
    from densim.models.workload_memory import MemoryWorkload

    params = memory_params(settings, catalog)
    prof = catalog.get("memory_workloads", settings.workload, MemoryWorkload)
    n = mem_bytes.shape[0]
    cfg_h = np.bincount(host_of, weights=mem_bytes, minlength=n_hosts)
    n_h = np.bincount(host_of, minlength=n_hosts).astype(float)
    short = cfg_h > M.guest_capacity_bytes(host_mem_bytes, n_h, params)
    out = MemoryCheck(np.ones(n_hosts), np.ones(n), int(short.sum()), np.zeros(n_hosts))
    idx = np.flatnonzero(short[host_of])
    if idx.size == 0:
        return out
    store = M.DeviceArrays.from_spec(catalog.get("devices", settings.swap_device, DeviceSpec))
    cache = (M.DeviceArrays.from_spec(catalog.get("devices", settings.swap_cache_device, DeviceSpec))
             if settings.swap_cache_device else None)
    cfg = mem_bytes[idx].astype(float)
    for steps, act, util, seg in step_blocks(idx, cfg, host_of[idx], capacity_mhz[idx].astype(float), cpu_mhz,
                                             mem_used_bytes, prof.active_fraction, n_hosts, block_elements):
        zf, isf = (None, None) if images is None else images.fractions(idx, steps, cfg, np.minimum(act, cfg), seg,
                                                                        sockets, settings, params)
        r = M.evaluate(
            np.tile(cfg, steps), act.ravel(), seg, steps * n_hosts, host_mem_bytes, params, store=store, cache=cache,
            swap_cache_bytes=settings.swap_cache_bytes, access_rate_per_s=(prof.total_access_rate_per_s * util).ravel(),
            balloon_active_share=prof.balloon_active_share, compressible_fraction=prof.compressible_fraction,
            overlap=prof.overlap, miss_model=prof.miss_model, miss_params=prof.miss_params(),
            background_store_iops=settings.background_swap_iops, zero_page_fraction=zf, inter_vm_sharing_fraction=isf,
        )
        sl = r.tp.slowdown.reshape(steps, idx.size)
        np.maximum.at(out.vm_slowdown_max, idx, sl.max(axis=0))
        swapped = M.seg_sum(r.rec.swapped_bytes, seg, steps * n_hosts).reshape(steps, n_hosts)
        np.maximum(out.swapped_gib_peak, swapped.max(axis=0) / M.GIB, out=out.swapped_gib_peak)
    np.maximum.at(out.slowdown_worst, host_of, out.vm_slowdown_max)
    return out


# ---------------------------------------------------------------------------------------------
# storage


def datastore_model(st: LocalStorage, catalog):
    from densim.models.devices import DeviceSpec
    from densim.models.storage import ControllerSpec
    from densim.models.storage.vmio import DatastoreModel

    dev = catalog.get("devices", st.device, DeviceSpec)
    ctl = catalog.get("controllers", st.controller, ControllerSpec) if st.controller else None
    return DatastoreModel.build(st.device, dev, st.drives, st.raid, ctl, st.controllers, st.block_size_bytes)


def host_io(host_of: np.ndarray, n_hosts: int, read_Bps: np.ndarray, write_Bps: np.ndarray, block_bytes: float):
    """Per-host IOPS and read IOPS per step, ``(T, H)`` each: a sparse VM -> host incidence product
    (one multiply-add per VM and step)."""
    from scipy import sparse

    n = host_of.size
    onehot = sparse.csr_matrix((np.ones(n), (np.arange(n), host_of)), shape=(n, n_hosts))
    r = np.asarray((onehot.T @ (read_Bps.astype(np.float64) / block_bytes).T).T)
    w = np.asarray((onehot.T @ (write_Bps.astype(np.float64) / block_bytes).T).T)
    return r + w, r


def latency_s(model, st: LocalStorage, iops: np.ndarray, read_iops: np.ndarray):
    """Mean front-end latency (s) and a saturation flag per entry; read fraction from the traffic."""
    from densim.models.storage.vmio import datastore_latency_s

    with np.errstate(invalid="ignore", divide="ignore"):
        rf = np.where(iops > 0, read_iops / np.maximum(iops, 1e-300), st.read_fraction)
    lat, _util, sat = datastore_latency_s(model, iops, rf, st.burstiness)
    return np.where(iops > 0, lat, 0.0), sat


def max_iops_at_latency(model, st: LocalStorage, bound_s: float, read_fraction: float) -> float:
    """Largest front-end IOPS whose mean latency stays <= ``bound_s`` (0 if even an idle datastore
    is slower)."""
    from densim.models.storage.vmio import datastore_latency_s

    def lat(x):
        ll, _u, sat = datastore_latency_s(model, np.array([[x]]), np.array([[read_fraction]]), st.burstiness)
        return np.inf if sat[0, 0] else float(ll[0, 0])

    if lat(1e-9) > bound_s:
        return 0.0
    lo, hi = 0.0, 1.0
    while lat(hi) <= bound_s and hi < 1e12:
        lo, hi = hi, hi * 2.0
    # own bisection rather than scipy.optimize.bisect: the answer must stay on the feasible side
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if lat(mid) <= bound_s:
            lo = mid
        else:
            hi = mid
    return lo


@dataclass
class StorageCheck:
    latency_worst_s: np.ndarray  # (H,) worst step's mean I/O latency
    latency_mean_s: np.ndarray  # (H,) IOPS-weighted mean latency
    iops_peak: np.ndarray  # (H,)
    saturated_steps: np.ndarray  # (H,)


def storage_check(host_of, n_hosts, read_Bps, write_Bps, st: LocalStorage, model) -> StorageCheck:
    iops, rd = host_io(host_of, n_hosts, read_Bps, write_Bps, st.block_size_bytes)
    lat, sat = latency_s(model, st, iops, rd)
    lat = np.where(sat, np.inf, lat)
    tot = iops.sum(axis=0)
    finite = np.where(np.isfinite(lat), lat, 0.0)
    mean = np.divide((finite * iops).sum(axis=0), tot, out=np.zeros(n_hosts), where=tot > 0)
    return StorageCheck(lat.max(axis=0, initial=0.0), mean, iops.max(axis=0, initial=0.0), sat.sum(axis=0))


# ---------------------------------------------------------------------------------------------
# over time (the report's view of the chosen candidate)


@dataclass
class StepSeries:
    hours: np.ndarray  # (B,) start of each bin, hours from the start of the demand series
    steps: np.ndarray  # (B,) steps in each bin (the last may be shorter)
    util_mean: np.ndarray  # (B,) mean CPU utilisation of the hosts with VMs over the bin
    util_max: np.ndarray  # (B,) busiest host's utilisation at its busiest step of the bin
    ready_worst: np.ndarray  # (B,) worst VM's CPU Ready % per vCPU at the bin's worst step
    mem_used_max: np.ndarray | None  # (B,) fullest host's memory in use / usable memory (None: no series)


def step_series(host_of: np.ndarray, n_hosts: int, host, vcpus: np.ndarray, cpu_mhz: np.ndarray,
                mem_used_bytes: np.ndarray | None, step_s: float, max_points: int = 480) -> StepSeries:
    """A placement's CPU utilisation and CPU Ready over time, at most ``max_points`` bins.

    Each bin of consecutive steps goes through the same full-resolution check the plan's answer
    passed (:func:`densim.placement.tspack.host_metrics`), so nothing is re-modelled: the maximum of
    ``util_max`` and of ``ready_worst`` over the bins are the candidate's peak utilisation and worst
    CPU Ready, and the step-weighted mean of ``util_mean`` its mean utilisation over the hosts with VMs.
    """
    from densim.placement.tspack import host_metrics

    t_total = int(cpu_mhz.shape[0])
    f = max(1, -(-t_total // max_points))
    starts = np.arange(0, t_total, f)
    b = starts.size
    util_mean, util_max, ready, mem = np.zeros(b), np.zeros(b), np.zeros(b), np.zeros(b)
    for i, t0 in enumerate(starts):
        t1 = min(t_total, t0 + f)
        m = host_metrics(host_of, n_hosts, host, vcpus, cpu_mhz[t0:t1],
                         None if mem_used_bytes is None else mem_used_bytes[t0:t1])
        util_mean[i] = float(m.cpu_util_mean.mean()) if n_hosts else 0.0
        util_max[i] = float(m.cpu_util_peak.max(initial=0.0))
        ready[i] = float(m.ready_pct_worst.max(initial=0.0))
        mem[i] = float(m.mem_used_peak_frac.max(initial=0.0))
    return StepSeries(starts * step_s / 3600.0, np.minimum(f, t_total - starts), util_mean, util_max, ready,
                      mem if mem_used_bytes is not None else None)
