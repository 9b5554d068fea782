"""Named placement policies built from filters and weighers, and the scheduler that runs them.

The scheduler takes VMs one at a time (largest first unless the policy says otherwise), keeps the
hosts that pass every filter, scores them with the weighers and places the VM on the best; when
no open host passes, it opens a new one. Per-host state is held in arrays so filters and weighers
are vectorised over hosts and time windows.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from densim.placement.capacity import capacity
from densim.placement.filters import FILTERS
from densim.placement.weighers import WEIGHERS
from densim.placement import POLICIES, Recipe, planner_policies


@dataclass(frozen=True)
class HostType:
    """What one host offers to VMs."""

    name: str
    sockets: int
    cores_per_socket: int
    threads_per_core: int
    core_mhz: float
    mem_bytes: float
    smt_gain: float = 1.0
    hypervisor_mem_bytes: float = 0.0  # memory the hypervisor keeps for itself

    @property
    def cores(self) -> int:
        return self.sockets * self.cores_per_socket

    @property
    def logical_cpus(self) -> int:
        return self.cores * self.threads_per_core

    @property
    def logical_cpus_per_socket(self) -> int:
        return self.cores_per_socket * self.threads_per_core

    @property
    def logical_capacity(self) -> float:
        """C of the ready model: cores x SMT throughput gain (vCPUs that can run at full speed)."""
        return self.cores * self.smt_gain

    @property
    def capacity_mhz(self) -> float:
        return self.cores * self.core_mhz * self.smt_gain

    @property
    def usable_mem_bytes(self) -> float:
        return self.mem_bytes - self.hypervisor_mem_bytes


@dataclass
class PackingProblem:
    """VMs to place on identical hosts, with optional per-window demand (windows x VMs)."""

    host: HostType
    vcpus: np.ndarray  # (N,)
    mem_bytes: np.ndarray  # (N,)
    cpu_w_mhz: np.ndarray | None = None  # (W, N) CPU demand per window (window maximum)
    mem_w_bytes: np.ndarray | None = None  # (W, N) memory in use per window
    io_w_iops: np.ndarray | None = None  # (W, N) disk I/Os per second per window
    io_cap_iops: float = float("inf")  # per host: the IOPS its datastore serves within the latency bound
    u_w: np.ndarray | None = None  # (W, N) per-vCPU busy fraction on this host type, in [0, 1]
    cpu_overcommit: float = 4.0  # vCPUs per logical CPU
    memory_overcommit: float = 1.0
    max_cpu_utilisation: float = 1.0
    ready_bound_pct: float = 5.0
    anti_affinity: np.ndarray | None = None  # (N,) group label or ""
    affinity: np.ndarray | None = None  # (N,) group label or "": members share a host

    @property
    def n_vms(self) -> int:
        return int(self.vcpus.shape[0])

    @property
    def n_windows(self) -> int:
        return 0 if self.cpu_w_mhz is None else int(self.cpu_w_mhz.shape[0])

    @property
    def capacity(self) -> np.ndarray:
        """(2,) one host's capacity: [vCPUs = cpu_overcommit x logical CPUs, bytes = memory_overcommit x usable memory]."""
        return capacity(self.host.logical_cpus, self.host.usable_mem_bytes, self.cpu_overcommit, self.memory_overcommit)

    def size_key(self) -> np.ndarray:
        """Sort key for "decreasing" orders: the VM's largest share of a host in any dimension."""
        cap = self.capacity
        cpu = self.vcpus / cap[0]
        mem = self.mem_bytes / cap[1]
        key = np.maximum(cpu, mem)
        if self.cpu_w_mhz is not None:
            key = np.maximum(key, self.cpu_w_mhz.max(axis=0) / self.host.capacity_mhz)
        return key


class HostState:
    """Running sums per open host (arrays grow by doubling)."""

    def __init__(self, p: PackingProblem) -> None:
        self.p = p
        self.n_open = 0
        cap = 8
        w = p.n_windows
        self.vcpus_used = np.zeros(cap)
        self.mem_used_bytes = np.zeros(cap)
        self.cpu_w_mhz = np.zeros((cap, w))
        self.mem_w_bytes = np.zeros((cap, w)) if p.mem_w_bytes is not None else None
        self.io_w_iops = np.zeros((cap, w)) if p.io_w_iops is not None else None
        self.k_mean = np.zeros((cap, w))
        self.k_var = np.zeros((cap, w))
        self.u_max = np.zeros((cap, w))
        self.groups: list[set] = []

    def _grow(self) -> None:
        for name in ("vcpus_used", "mem_used_bytes", "cpu_w_mhz", "mem_w_bytes", "io_w_iops", "k_mean", "k_var", "u_max"):
            arr = getattr(self, name)
            if arr is not None:
                setattr(self, name, np.concatenate([arr, np.zeros_like(arr)]))

    def open_host(self) -> int:
        if self.n_open == self.vcpus_used.shape[0]:
            self._grow()
        self.groups.append(set())
        self.n_open += 1
        return self.n_open - 1

    def add(self, h: int, j: int) -> None:
        p = self.p
        self.vcpus_used[h] += p.vcpus[j]
        self.mem_used_bytes[h] += p.mem_bytes[j]
        if p.cpu_w_mhz is not None:
            self.cpu_w_mhz[h] += p.cpu_w_mhz[:, j]
        if p.mem_w_bytes is not None:
            self.mem_w_bytes[h] += p.mem_w_bytes[:, j]
        if p.io_w_iops is not None:
            self.io_w_iops[h] += p.io_w_iops[:, j]
        if p.u_w is not None:
            u = p.u_w[:, j]
            self.k_mean[h] += p.vcpus[j] * u
            self.k_var[h] += p.vcpus[j] * u * (1.0 - u)
            np.maximum(self.u_max[h], u, out=self.u_max[h])
        if p.anti_affinity is not None and p.anti_affinity[j]:
            self.groups[h].add(p.anti_affinity[j])


# The planner's policies are the recipes of the one placement registry (densim.placement.POLICIES).
Policy = Recipe


def recipe(name: str) -> Recipe:
    """The planner recipe of placement policy ``name``."""
    pol = POLICIES.get(name)
    if pol.recipe is None:
        raise KeyError(f"placement policy {name!r} places onto a fixed set of hosts (the engine); the planner's: "
                       f"{', '.join(planner_policies())}")
    return pol.recipe


@dataclass
class Placement:
    host_of_vm: np.ndarray  # (N,) host index
    n_hosts: int
    policy: str
    unplaceable: list[tuple[int, str]] = field(default_factory=list)  # (vm, first filter that rejected it alone)


def _affinity_groups(p: PackingProblem) -> list[np.ndarray]:
    if p.affinity is None:
        return [np.array([j]) for j in range(p.n_vms)]
    out: dict[str, list[int]] = {}
    units: list[np.ndarray] = []
    for j, g in enumerate(p.affinity):
        if g:
            out.setdefault(g, []).append(j)
        else:
            units.append(np.array([j]))
    return units + [np.array(v) for v in out.values()]


def place(p: PackingProblem, policy: str | Policy = "consolidate", *, order: np.ndarray | None = None) -> Placement:
    """Place every VM of ``p`` with ``policy``; opens hosts as needed.

    Affinity groups are placed as a unit (the members are checked one after another on the same host).
    A VM that does not fit even an empty host is recorded in ``unplaceable`` and given host -1.
    """
    pol = recipe(policy) if isinstance(policy, str) else policy
    filters = [FILTERS.get(f) for f in pol.filters]
    weighers = [(WEIGHERS.get(w), m) for w, m in pol.weighers]
    units = _affinity_groups(p)
    if order is None:
        if pol.order == "decreasing":
            key = p.size_key()
            unit_key = np.array([key[u].sum() for u in units])
            units = [units[i] for i in np.argsort(-unit_key, kind="stable")]
        else:
            units.sort(key=lambda u: int(u[0]))
    else:
        rank = np.empty(p.n_vms, dtype=np.int64)
        rank[np.asarray(order)] = np.arange(p.n_vms)
        units.sort(key=lambda u: int(rank[u].min()))
    state = HostState(p)
    host_of = np.full(p.n_vms, -1, dtype=np.int64)
    bad: list[tuple[int, str]] = []

    def feasible(j: int) -> np.ndarray:
        mask = np.ones(state.n_open, dtype=bool)
        for f in filters:
            if not mask.any():
                break
            mask &= f(state, j)
        return mask

    for unit in units:
        if unit.size == 1:
            j = int(unit[0])
            mask = feasible(j) if state.n_open else np.zeros(0, dtype=bool)
            if mask.any():
                score = np.zeros(state.n_open)
                for w, m in weighers:
                    score += m * w(state, j)
                score = np.where(mask, score, -np.inf)
                h = int(np.argmax(score))
            else:
                h = state.open_host()
                ok = feasible(j)[h]
                if not ok:
                    reason = next((name for name, f in zip(pol.filters, filters) if not f(state, j)[h]), "?")
                    bad.append((j, reason))
                    host_of[j] = -1
                    # an empty host that cannot take the VM stays open but empty; close it again
                    state.n_open -= 1
                    state.groups.pop()
                    continue
            state.add(h, j)
            host_of[j] = h
        else:
            # affinity group: first host where all members fit in sequence; a new host otherwise
            placed = False
            for h in list(range(state.n_open)) + [None]:
                if h is None:
                    h = state.open_host()
                snapshot = _snapshot(state, h)
                ok = True
                for j in unit:
                    if not feasible(int(j))[h]:
                        ok = False
                        break
                    state.add(h, int(j))
                if ok:
                    host_of[unit] = h
                    placed = True
                    break
                _restore(state, h, snapshot)
                if h == state.n_open - 1 and state.vcpus_used[h] == 0:
                    for j in unit:
                        bad.append((int(j), "affinity group does not fit one host"))
                    state.n_open -= 1
                    state.groups.pop()
                    placed = True
                    break
            assert placed
    return Placement(host_of, state.n_open, pol.name, bad)


def _snapshot(state: HostState, h: int) -> dict:
    out = {}
    for name in ("vcpus_used", "mem_used_bytes", "cpu_w_mhz", "mem_w_bytes", "io_w_iops", "k_mean", "k_var", "u_max"):
        arr = getattr(state, name)
        if arr is not None:
            out[name] = np.copy(arr[h])
    out["groups"] = set(state.groups[h])
    return out


def _restore(state: HostState, h: int, snap: dict) -> None:
    for name, val in snap.items():
        if name == "groups":
            state.groups[h] = val
        else:
            getattr(state, name)[h] = val


def lower_bound_hosts(p: PackingProblem) -> int:
    """Hosts no placement can beat: the largest of the per-dimension volume bounds."""
    cap = p.capacity
    lb = np.ceil(p.vcpus.sum() / cap[0] - 1e-9)
    lb = max(lb, np.ceil(p.mem_bytes.sum() / cap[1] - 1e-9))
    if p.cpu_w_mhz is not None:
        lb = max(lb, np.ceil((p.cpu_w_mhz.sum(axis=1) / (p.host.capacity_mhz * p.max_cpu_utilisation)).max() - 1e-9))
    if p.mem_w_bytes is not None:
        lb = max(lb, np.ceil((p.mem_w_bytes.sum(axis=1) / p.host.usable_mem_bytes).max() - 1e-9))
    if p.io_w_iops is not None and p.io_cap_iops > 0 and np.isfinite(p.io_cap_iops):
        lb = max(lb, np.ceil((p.io_w_iops.sum(axis=1) / p.io_cap_iops).max() - 1e-9))
    return int(max(lb, 1 if p.n_vms else 0))
