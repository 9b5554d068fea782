"""Online placement with host failures, HA restarts and admission control.

:func:`failover` generalises :func:`densim.placement.online.schedule`: besides VMs that arrive, wait
and leave, hosts go down over given intervals. At a host's failure every VM running on it stops (its
run on that host ends there) and becomes a *restart*: ``detection`` seconds later it is released to
the restart queue, which is served in restart-priority order (high first; then by release time, then
VM order) before the arrival queue, whenever a restart is released or capacity frees (a departure, a
host repaired). A restart is placed by the policy on the hosts that are up; what fits nowhere waits
for capacity. A restarted VM reserves its host's capacity from its placement and is up ``boot``
seconds later. A VM leaves at its first start + its run length whatever happened in between (its
lifetime is wall-clock: a VM deleted at 17:00 is deleted at 17:00).

Admission control (vSphere HA's "cluster resource percentage" model) refuses the power-on of an
arriving VM when the capacity reserved by running VMs would exceed the capacity of the hosts up
minus a reserve: ``used + vm <= up - reserve`` in vCPUs (against cores x over-commit) and in memory,
with ``reserve = max(fixed, share x up)``; ``fixed`` is the capacity of the k largest hosts (N+k) or
of the largest failure domain, ``share`` the percentage policy. Restarts are never refused (HA
admission control guards power-ons, not failover). In a run without lifetimes (VMs placed once at
the start, ``initial`` hosts given) a refused VM is not placed.

The loop is :mod:`densim.placement.timeline` (with maintenance evacuations when given); per-host lists of
running VMs make a failure O(VMs on the host).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from densim.placement import timeline as TL
from densim.placement.online import DISCIPLINES, ONLINE_POLICIES

@dataclass(frozen=True)
class Failover:
    """The runs of every VM (instances) and every outage a failure caused. Times in seconds."""

    # per VM
    status: np.ndarray  # int8, online.STATUS codes as seen at ``until``; 3 also for an admission refusal
    refused: np.ndarray  # bool: admission control refused its power-on (at its arrival, or at the start)
    first_start_s: np.ndarray  # NaN if never started
    end_s: np.ndarray  # first start + run (NaN if never started)
    # per instance (one run of a VM on one host)
    inst_vm: np.ndarray
    inst_host: np.ndarray
    inst_placed_s: np.ndarray  # capacity reserved from here
    inst_start_s: np.ndarray  # up from here (placed + boot for a restart)
    inst_end_s: np.ndarray  # failure of its host, or the VM's end
    # per outage (a VM stopped by a host failure)
    out_vm: np.ndarray
    out_interval: np.ndarray  # index into the host-down intervals given
    out_fail_s: np.ndarray
    out_placed_s: np.ndarray  # NaN: not restarted by ``until``
    out_up_s: np.ndarray  # placed + boot (NaN as above)
    out_host: np.ndarray  # host it restarted on, -1
    until: float
    # per migration (maintenance evacuations; :mod:`densim.placement.timeline`)
    mig: np.ndarray | None = None  # (migrations, 11) records, columns timeline.M_*
    evac: np.ndarray | None = None  # (maintenance events, 3): VMs migrated, stranded, last landing planned (s)
    # per instance, when VMs ask for GPUs: the bit mask of its host's GPUs it holds and its MIG start (-1)
    inst_gpus: np.ndarray | None = None
    inst_mig: np.ndarray | None = None
    # per balance check (the balancer's events): imbalance seen (NaN: < 2 hosts), triggered, refused by cost, moves
    bal: np.ndarray | None = None


def failover(arrival_s, run_s, vm_cpu, vm_mem, cpu_cap, mem_cap, *, down_host, down_start_s, down_end_s,
             priority=None, initial=None, policy: str = "first-fit", discipline: str = "fifo", until: float = np.inf,
             detection_s: float = 0.0, boot_s: float = 0.0, admission: bool = False, reserve_cpu: float = 0.0,
             reserve_mem: float = 0.0, reserve_share: float = 0.0, maintenance: Maintenance | None = None,
             core_mhz=None, gpu=None, balance: Balance | None = None) -> Failover:
    """Place VMs online through host failures (see the module docstring).

    ``down_*``: one row per host-down interval, sorted by start. ``initial``: a host per VM placed at
    its arrival (a run without lifetimes; -1 = placed nowhere), or None to place every VM as it arrives.
    ``priority``: higher restarts first. ``reserve_cpu``/``reserve_mem``: the fixed reserve of
    admission control (vCPU and memory units of ``cpu_cap``/``mem_cap``); ``reserve_share``: the share of
    the capacity up kept free. ``maintenance``: hosts evacuated by live migration (``core_mhz`` per
    host then gives each VM's CPU utilisation from its demand). ``gpu``: a
    :class:`densim.placement.gpu.GpuProblem` when VMs ask for GPUs: with ``initial`` its state is the static
    placement's (:func:`densim.placement.gpu.place_gpu` made it), else every GPU starts free; each instance's
    GPUs come back in ``inst_gpus``/``inst_mig``. ``balance``: the DRS-style balancer's checks
    (:class:`Balance`; its moves are migrations of the same loop, ``core_mhz`` needed as for maintenance).
    """
    if policy not in ONLINE_POLICIES:
        raise KeyError(f"placement policy {policy!r} cannot restart VMs online; use one of: {', '.join(ONLINE_POLICIES)}")
    if discipline not in DISCIPLINES:
        raise KeyError(f"queue discipline {discipline!r}; one of: {', '.join(DISCIPLINES)}")
    n = len(arrival_s)
    f64 = lambda a: np.ascontiguousarray(a, dtype=np.float64)  # noqa: E731
    start = f64(down_start_s)
    if start.size > 1 and np.any(np.diff(start) < 0):
        raise ValueError("host-down intervals must be sorted by start")
    init = np.full(n, -2, dtype=np.int64) if initial is None else np.ascontiguousarray(initial, dtype=np.int64)
    pr = np.zeros(n, dtype=np.int64) if priority is None else np.ascontiguousarray(priority, dtype=np.int64)
    mt = maintenance if maintenance is not None else Maintenance.none(n)
    H = len(cpu_cap)
    bl = balance if balance is not None else Balance.none(n)
    if core_mhz is None and (mt.host.size or bl.at_s.size):
        raise ValueError("maintenance needs core_mhz (each VM's CPU utilisation, hence its dirty rate, is its demand "
                         "over its vCPUs at its host's core speed)")
    cm = np.ones(H) if core_mhz is None else f64(core_mhz)  # read only by evacuations
    from densim.placement.gpu import no_gpu_state

    if gpu is not None and (initial is None or gpu.gmode.shape[0] != H or gpu.vg.shape[0] != n):
        gpu.reset(H)  # placed as they arrive (a static placement's state is kept: the loop starts from it)
    cap_mhz = f64(bl.cap_mhz) if bl.cap_mhz is not None else np.ones(H)
    st, refused, vf, inst, outs, migs, evac, bstat = TL._event_loop(
        f64(arrival_s), f64(run_s), f64(vm_cpu), f64(vm_mem), pr, init, f64(cpu_cap), f64(mem_cap),
        np.ascontiguousarray(down_host, dtype=np.int64), start, f64(down_end_s), ONLINE_POLICIES[policy],
        DISCIPLINES[discipline], float(until), float(detection_s), float(boot_s), bool(admission),
        np.array([reserve_cpu, reserve_mem, reserve_share], dtype=np.float64), mt.host, mt.at_s, mt.demand_mhz, cm,
        mt.params(), gpu.state() if gpu is not None else no_gpu_state(), f64(bl.at_s),
        np.ascontiguousarray(bl.demand_mhz, dtype=np.float64), bl.params(), cap_mhz)
    status = st.copy()
    status[status == TL.DOWN] = TL.WAITING  # down at ``until``, waiting for a restart: waiting
    first, dep = vf[:, 0].copy(), vf[:, 1].copy()
    i_vm = inst[:, TL.I_VM].astype(np.int64)
    o_vm = outs[:, TL.O_VM].astype(np.int64)
    o_place = outs[:, TL.O_PLACE].copy()
    o_up = np.where(np.isnan(o_place), np.nan, np.minimum(o_place + boot_s, dep[o_vm]))
    return Failover(status=status, refused=refused, first_start_s=first, end_s=dep, inst_vm=i_vm,
                    inst_host=inst[:, TL.I_HOST].astype(np.int64), inst_placed_s=inst[:, TL.I_PLACE].copy(),
                    inst_start_s=inst[:, TL.I_START].copy(), inst_end_s=inst[:, TL.I_END].copy(), out_vm=o_vm,
                    out_interval=outs[:, TL.O_INTERVAL].astype(np.int64), out_fail_s=outs[:, TL.O_FAIL].copy(),
                    out_placed_s=o_place, out_up_s=o_up, out_host=outs[:, TL.O_HOST].astype(np.int64), until=float(until),
                    mig=migs, evac=evac,
                    inst_gpus=inst[:, TL.I_GPUS].astype(np.int64) if gpu is not None else None,
                    inst_mig=inst[:, TL.I_MIG].astype(np.int64) if gpu is not None else None,
                    bal=bstat if bl.at_s.size else None)


@dataclass(frozen=True)
class Maintenance:
    """Hosts put into maintenance (evacuated by pre-copy live migration) for :func:`failover`.

    ``host``/``at_s``: one row per event, sorted by time; ``demand_mhz`` (events, VMs): each VM's CPU
    demand around the event (its dirty rate is ``dirty_rate_bps x`` demand / (vCPUs x core MHz of its host)).
    """

    host: np.ndarray
    at_s: np.ndarray
    demand_mhz: np.ndarray
    link_bps: float = 1.25e9
    dirty_rate_bps: float = 0.0
    wws_fraction: float = 1.0
    downtime_target_s: float = 0.3
    resume_s: float = 0.0
    max_rounds: int = 30
    max_concurrent: int = 8
    zero_fraction: float = 0.0  # share of each VM's memory never touched (zero): round 0 sends it as flags
    zero_scan_bps: float = 0.0  # the migration thread's read rate of zero pages (0: free)

    @classmethod
    def none(cls, n_vms: int) -> Maintenance:
        return cls(host=np.zeros(0, dtype=np.int64), at_s=np.zeros(0), demand_mhz=np.zeros((1, n_vms)))

    def params(self) -> np.ndarray:
        return np.array([self.link_bps, self.dirty_rate_bps, self.wws_fraction, self.downtime_target_s, self.resume_s,
                         self.max_rounds, self.max_concurrent, self.zero_fraction, self.zero_scan_bps], dtype=np.float64)


@dataclass(frozen=True)
class Balance:
    """The DRS-style balancer's checks for :func:`failover` (:func:`densim.placement.timeline._balance`).

    ``at_s``: the check times, sorted; ``demand_mhz`` (checks, VMs): each VM's mean CPU demand over the interval
    before each check; ``cap_mhz`` (hosts,): each host's CPU capacity (MHz). The parameters are the scenario's
    ``migration.balance`` (``horizon_s``: its benefit horizon, the interval by default) and ``cores_busy``, the
    cores a migration keeps busy on each of its hosts; ``idle_on``: empty hosts are powered (unused_hosts: idle)
    and so balanced onto.
    """

    at_s: np.ndarray
    demand_mhz: np.ndarray
    cap_mhz: np.ndarray | None
    threshold: float
    budget: int
    min_gain: float
    horizon_s: float
    cores_busy: float
    slowdown: float
    idle_on: bool

    @classmethod
    def none(cls, n_vms: int) -> Balance:
        """No balance check (the parameters are then never read)."""
        return cls(at_s=np.zeros(0), demand_mhz=np.zeros((1, n_vms)), cap_mhz=None, threshold=0.0, budget=0,
                   min_gain=0.0, horizon_s=0.0, cores_busy=0.0, slowdown=0.0, idle_on=False)

    def params(self) -> np.ndarray:
        return np.array([self.threshold, self.budget, self.min_gain, self.horizon_s, self.cores_busy, self.slowdown,
                         1.0 if self.idle_on else 0.0], dtype=np.float64)


def reserve(cpu_cap: np.ndarray, mem_cap: np.ndarray, k: int, domains: list[np.ndarray] | None = None) -> tuple[float, float]:
    """The N+k reserve: the capacity of the k largest hosts (each dimension on its own, as vSphere's
    percentage derived from host failures to tolerate), or of the largest domain when ``domains`` is given."""
    if domains is not None:
        if not domains:
            return 0.0, 0.0
        c = max(float(cpu_cap[d].sum()) for d in domains)
        m = max(float(mem_cap[d].sum()) for d in domains)
        return c, m
    k = min(int(k), cpu_cap.size)
    return float(np.sort(cpu_cap)[::-1][:k].sum()), float(np.sort(mem_cap)[::-1][:k].sum())
