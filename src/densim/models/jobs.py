"""Batch jobs made of phases, run on VMs that share CPUs, networks and storage (fluid model).

A job (a :class:`BatchProfile`, e.g. Spark Terasort) is a sequence of stages. Each stage processes a
share of the job's data; per byte it costs CPU-seconds (``cpu_per_byte``, the only fitted numbers),
bytes read from and written to the VM's volumes, and bytes sent over the cluster network
(shuffle fetches, HDFS replicas). A stage ends when every VM of the job has finished its part
(a barrier); the job ends when its last stage does.

Every VM runs ``executor_cores`` task slots. A task works through its bytes serially: CPU, then an
I/O of ``io_size`` bytes that waits for the path's latency (:mod:`densim.models.fabric`), then a
network fetch. With ``N`` tasks the VM would process ``X_demand = N / tau`` bytes/s, where
``tau = c + t_io + t_net`` is the time per byte of one task (closed loop; Little's law, modelling
guide §0.2). What it actually gets is the weighted max-min fair allocation
(:func:`densim.models.sharing.maxmin_rates`) of every shared component (host CPU, vCPUs, NICs,
switches, target ports, controllers, drives) with ``X_demand`` as each flow's cap. Latencies grow
with the utilisation of every component on the path, which lowers ``X_demand``; the two are
iterated to a fixed point. When a flow is held below its demand by a full component, its tasks
queue there: ``N - X*tau`` tasks wait at that bottleneck (Little's law).

CPU accounting per VM (Linux terms): user = ``X * cpu_per_byte``, system = ``X`` x guest I/O and
network stack cost, iowait = tasks waiting for block I/O (up to the idle vCPUs), idle = the rest
(network waits, free slots, barriers). Host CPU = busy vCPUs + the host's storage stack
(``cycles per I/O and per byte`` of the transport) over its logical CPUs.

Every CPU cost, per byte of stage data of one VM (VMs of a job are symmetric, so what a VM serves
to its peers equals what it asks of them):

==========================  ========================================================  ===========
cost                        amount                                                    charged to
==========================  ========================================================  ===========
user (``cpu_per_byte``)     fitted per stage (F)                                      vCPUs, host
guest block I/O             ``guest_cpu_per_io`` x I/Os the guest issues: its reads,  vCPUs, host
                            its own writes and the replicas it stores for peers
guest network stack         ``guest_cpu_per_network_byte`` x bytes through its        vCPUs, host
                            virtual NIC, both ways: shuffle fetched from and served
                            to the other VMs (any host), replicas sent and received
host storage stack          transport ``(host_cpu_per_io / io_size +                  host
                            host_cpu_per_byte)`` x bytes stored or read
==========================  ========================================================  ===========

Not modelled: the host's virtual-switch / vhost-net work per network byte and QEMU's I/O threads
beyond the transport's per-I/O cost (no catalog figure), which would add host CPU.

The simulation is event driven: the allocation is recomputed whenever a stage ends or a job
starts, and is constant in between (a fluid model, modelling guide §5.2).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from densim.models.fabric import (
    Components,
    PathCost,
)
from densim.models.sharing import maxmin_rates, mmc_stretch
from densim.units import PosBytes, PosSeconds, Seconds

_CFG = ConfigDict(defer_build=True, frozen=True, extra="forbid", populate_by_name=True)

STORAGE_KINDS = {"drives", "controller", "target-ports", "host-adapter"}
NETWORK_KINDS = {"data-nic", "switch"}


class StageSpec(BaseModel):
    """One stage of a batch job. Byte fields are bytes per byte of stage data processed."""

    model_config = _CFG

    name: str
    data_fraction: float = Field(default=1.0, gt=0, description="share of the job's input this stage processes")
    cpu_per_byte_s: Seconds = Field(alias="cpu_per_byte", description="vCPU-seconds per byte (user time)")
    read_data: float = Field(default=0.0, ge=0)
    read_temp: float = Field(default=0.0, ge=0)
    write_data: float = Field(default=0.0, ge=0)
    write_temp: float = Field(default=0.0, ge=0)
    shuffle_fetch: float = Field(default=0.0, ge=0, description="bytes fetched from all VMs' shuffle files")
    replicate: bool = Field(default=False, description="data writes are stored 'replication' times (HDFS)")


class BatchProfile(BaseModel):
    """A batch job: input size, stages and the software costs that are not hardware figures."""

    model_config = _CFG

    name: str
    description: str = ""
    input_bytes: PosBytes = Field(alias="input")
    row_size_bytes: PosBytes = Field(default=100.0, alias="row_size")
    replication: int = Field(default=3, ge=1)
    io_size_bytes: PosBytes = Field(default=1048576.0, alias="io_size", description="size of one storage I/O")
    executor_cores: int = Field(gt=0, description="task slots per VM")
    guest_cpu_per_io_s: Seconds = Field(default=20e-6, alias="guest_cpu_per_io", description="guest kernel time per I/O")
    guest_cpu_per_network_byte_s: Seconds = Field(
        default=0.0, alias="guest_cpu_per_network_byte",
        description="guest kernel time per byte sent or received through the VM's virtual NIC (each end pays)")
    network_latency_s: PosSeconds = Field(default=50e-6, alias="network_latency", description="per fetch round trip")
    stages: list[StageSpec] = Field(min_length=1)
    fit: str = ""
    source: str = ""

    @property
    def rows(self) -> float:
        return self.input_bytes / self.row_size_bytes


@dataclass
class HostInfo:
    name: str
    logical_cpus: float
    core_hz: float


@dataclass
class Flow:
    """One VM's share of a tenant's job."""

    tenant: int
    host: int
    name: str
    vcpus: int
    slots: int
    storage: PathCost
    data_nic_rx: int
    data_nic_tx: int
    data_switch: int
    nic_port_bps: float
    vm_cpu: int
    host_cpu: int
    bytes_per_stage: list[float]
    remote_shuffle: float  # share of shuffle fetches that cross the data NIC (peers on other hosts)
    remote_replica: float  # share of HDFS replicas sent to another host
    peer_shuffle: float  # share of shuffle fetches served by another VM (through the guest's virtual NIC)
    cap_bw_bps: float = np.inf
    cap_iops: float = np.inf


@dataclass
class TenantInfo:
    name: str
    profile: BatchProfile
    weight: float
    start_s: float
    flows: list[int] = field(default_factory=list)
    hosts: list[int] = field(default_factory=list)


@dataclass
class JobSystem:
    """Everything the fluid simulation needs, built by :func:`build_system`."""

    comps: Components
    hosts: list[HostInfo]
    flows: list[Flow]
    tenants: list[TenantInfo]
    rho_max: float = 0.95


@dataclass
class StageTerms:
    """Per-flow, per-byte terms of one stage (vectorised over the active flows)."""

    load: np.ndarray  # (F, C) incidence
    cpu_user: np.ndarray  # (F,) vCPU-s per byte
    cpu_sys: np.ndarray
    io_fixed: np.ndarray  # (F,) s per byte that does not queue
    io_serv: np.ndarray  # (F, C) s per byte at unit stretch
    net_fixed: np.ndarray
    net_serv: np.ndarray
    storage_bytes: np.ndarray  # (F,) bytes moved to/from storage per byte
    io_count: np.ndarray  # (F,) storage I/Os per byte


def _vm_stage_terms(sys: JobSystem, f: Flow, stage: StageSpec, prof: BatchProfile) -> dict[str, Any]:
    n_c = len(sys.comps)
    io = prof.io_size_bytes
    r = prof.replication if stage.replicate else 1
    rd = stage.read_data + stage.read_temp
    wr_stored = stage.write_temp + stage.write_data * r  # this VM's volumes receive its own + others' replicas
    wr_waited = stage.write_temp + stage.write_data  # a task waits for its pipeline write once
    net = stage.shuffle_fetch * f.remote_shuffle + stage.write_data * (r - 1) * f.remote_replica  # over the data NIC
    # bytes through the guest's virtual NIC, sent and received: shuffle fetched from every other VM
    # (on any host) and as much served to them; r - 1 replicas sent and as many received
    vnic = 2.0 * (stage.shuffle_fetch * f.peer_shuffle + stage.write_data * (r - 1))
    load = np.zeros(n_c)
    io_serv = np.zeros(n_c)
    net_serv = np.zeros(n_c)
    p = f.storage
    for c, v in p.read_load.items():
        load[c] += rd * v
    for c, v in p.write_load.items():
        load[c] += wr_stored * v
    for c, v in p.read_service.items():
        io_serv[c] += rd * v / io
    for c, v in p.write_service.items():
        io_serv[c] += wr_waited * v / io
    io_fixed = (rd * p.read_fixed_s + wr_waited * p.write_fixed_s) / io
    io_count = (rd + wr_stored) / io
    cpu_user = stage.cpu_per_byte_s
    # the guest's block layer issues its own reads and writes and stores its peers' replicas
    cpu_sys = (rd + wr_stored) / io * prof.guest_cpu_per_io_s + vnic * prof.guest_cpu_per_network_byte_s
    host = sys.hosts[f.host]
    host_io_s = (rd + wr_stored) * p.host_cycles_per_byte / host.core_hz
    load[f.vm_cpu] += cpu_user + cpu_sys
    load[f.host_cpu] += cpu_user + cpu_sys + host_io_s
    load[f.data_nic_rx] += net
    load[f.data_nic_tx] += net
    load[f.data_switch] += net
    net_serv[f.data_nic_rx] += net / f.nic_port_bps
    net_fixed = net * prof.network_latency_s / io
    return dict(
        load=load,
        cpu_user=cpu_user,
        cpu_sys=cpu_sys,
        io_fixed=io_fixed,
        io_serv=io_serv,
        net_fixed=net_fixed,
        net_serv=net_serv,
        storage_bytes=rd + wr_stored,
        io_count=io_count,
    )


def stage_terms(sys: JobSystem, flows: list[int], stage_idx: list[int]) -> StageTerms:
    rows = []
    for fi, si in zip(flows, stage_idx):
        f = sys.flows[fi]
        prof = sys.tenants[f.tenant].profile
        rows.append(_vm_stage_terms(sys, f, prof.stages[si], prof))
    stack = {k: np.array([r[k] for r in rows], dtype=float) for k in rows[0]}
    return StageTerms(**stack)


@dataclass
class FixedPoint:
    rate: np.ndarray  # bytes/s of stage data per flow
    tau: np.ndarray  # unloaded-by-bottleneck time per byte of one task
    t_io: np.ndarray
    t_net: np.ndarray
    blocked: np.ndarray  # tasks queued at a full component
    bottleneck: np.ndarray  # component index or -1 (own demand)
    utilisation: np.ndarray  # per component
    stretch: np.ndarray  # (F, C) latency stretch each flow's requests see at each component


def solve_rates(sys: JobSystem, flows: list[int], terms: StageTerms, iterations: int = 200, tol: float = 1e-7) -> FixedPoint:
    """Fixed point of closed-loop demand and max-min fair allocation (module docstring)."""
    cap = sys.comps.capacity_array()
    slots = np.array([sys.flows[f].slots for f in flows], dtype=float)
    w = np.array([sys.tenants[sys.flows[f].tenant].weight for f in flows], dtype=float)
    qos = np.full(len(flows), np.inf)
    for i, f in enumerate(flows):
        fl = sys.flows[f]
        if np.isfinite(fl.cap_bw_bps) and terms.storage_bytes[i] > 0:
            qos[i] = min(qos[i], fl.cap_bw_bps / terms.storage_bytes[i])
        if np.isfinite(fl.cap_iops) and terms.io_count[i] > 0:
            qos[i] = min(qos[i], fl.cap_iops / terms.io_count[i])
    servers = sys.comps.servers_array()
    stretch = np.ones(terms.load.shape)
    cpu = terms.cpu_user + terms.cpu_sys
    for _ in range(iterations):
        t_io = terms.io_fixed + (terms.io_serv * stretch).sum(axis=1)
        t_net = terms.net_fixed + (terms.net_serv * stretch).sum(axis=1)
        tau = cpu + t_io + t_net
        demand = slots / tau
        alloc = maxmin_rates(terms.load, cap, w, np.minimum(demand, qos))
        # arrival theorem: a task does not queue behind itself, so flow f sees the component's
        # utilisation less one of its own N tasks' share (matters only for small populations)
        own = alloc.rate[:, None] * terms.load / np.where(cap > 0, cap, np.inf)[None, :]
        seen = np.maximum(alloc.utilisation[None, :] - own / slots[:, None], 0.0)
        new = mmc_stretch(seen, servers[None, :], sys.rho_max)
        if np.max(np.abs(new - stretch) / stretch) < tol:
            stretch = new
            break
        stretch = 0.5 * stretch + 0.5 * new
    t_io = terms.io_fixed + (terms.io_serv * stretch).sum(axis=1)
    t_net = terms.net_fixed + (terms.net_serv * stretch).sum(axis=1)
    tau = cpu + t_io + t_net
    alloc = maxmin_rates(terms.load, cap, w, np.minimum(slots / tau, qos))
    blocked = np.maximum(slots - alloc.rate * tau, 0.0)
    return FixedPoint(alloc.rate, tau, t_io, t_net, blocked, alloc.bottleneck, alloc.utilisation, stretch)


@dataclass
class FlowSeries:
    """Piecewise-constant per-flow rates between events: row ``k`` holds on ``[t[k], t[k+1])``.

    ``busy_vcpus`` (user + system), ``iowait_vcpus``, ``storage_bps`` and ``host_io_threads`` (host
    CPU of the storage stack) have shape ``(events, flows)``; :meth:`step_means` averages them over
    a time grid for the engine.
    """

    t: np.ndarray
    busy_vcpus: np.ndarray
    iowait_vcpus: np.ndarray
    storage_bps: np.ndarray
    host_io_threads: np.ndarray

    def step_means(self, name: str, edges_s: np.ndarray) -> np.ndarray:
        """Time averages of series ``name`` over the intervals between ``edges_s`` (shape (len-1, flows))."""
        vals = getattr(self, name)
        cum = np.vstack([np.zeros((1, vals.shape[1])), np.cumsum(vals * np.diff(self.t)[:, None], axis=0)])
        e = np.clip(np.asarray(edges_s, dtype=float), self.t[0], self.t[-1])
        k = np.clip(np.searchsorted(self.t, e, side="right") - 1, 0, len(self.t) - 2)
        at = cum[k] + vals[k] * (e - self.t[k])[:, None]
        width = np.diff(np.asarray(edges_s, dtype=float))
        return np.divide(np.diff(at, axis=0), width[:, None], out=np.zeros((len(width), vals.shape[1])), where=width[:, None] > 0)


@dataclass
class JobsResult:
    """Per-tenant runtimes and stage details, per-VM and per-host CPU shares, and a timeline."""

    tenants: list[dict[str, Any]]
    hosts: list[dict[str, Any]]
    vms: list[dict[str, Any]]
    timeline: list[dict[str, Any]]
    components: list[dict[str, Any]]
    events: "FlowSeries | None" = None

    def summary(self) -> dict[str, Any]:
        return {"tenants": self.tenants, "hosts": self.hosts, "components": self.components, "timeline": self.timeline}


def _label(sys: JobSystem, fp: FixedPoint, terms: StageTerms, i: int, flow: Flow) -> str:
    """The bottleneck of flow ``i``: the full component that froze it, else the busiest resource.

    Operational analysis (guide §0.2): the bottleneck is the resource with the largest utilisation.
    Candidates are the task slots' CPU share ``X c / N``, the utilisation of every component on the
    flow's path, and the shares of task time spent on storage and network latency.
    """
    b = int(fp.bottleneck[i])
    if b >= 0:
        return "cpu" if sys.comps.kinds[b] == "vm-cpu" else sys.comps.names[b]
    x = fp.rate[i]
    cand = {
        "cpu": x * (terms.cpu_user[i] + terms.cpu_sys[i]) / flow.slots,
        "storage latency": x * fp.t_io[i] / flow.slots,
        "network latency": x * fp.t_net[i] / flow.slots,
    }
    for c in np.flatnonzero(terms.load[i] > 0):
        if sys.comps.kinds[c] not in ("vm-cpu", "host-cpu"):
            cand[sys.comps.names[c]] = float(fp.utilisation[c])
    return max(cand, key=cand.get)


def simulate_jobs(sys: JobSystem, *, max_events: int = 100000) -> JobsResult:
    """Run every tenant's job to completion; see the module docstring for the model."""
    n_f = len(sys.flows)
    n_t = len(sys.tenants)
    n_c = len(sys.comps)
    stage = np.zeros(n_f, dtype=int)
    remaining = np.array([sys.flows[f].bytes_per_stage[0] for f in range(n_f)], dtype=float)
    flow_tenant = np.array([f.tenant for f in sys.flows])
    t_stage = np.zeros(n_t, dtype=int)
    started = np.zeros(n_t, dtype=bool)
    done = np.zeros(n_t, dtype=bool)
    stage_start = np.array([t.start_s for t in sys.tenants], dtype=float)
    stage_times: list[list[float]] = [[] for _ in range(n_t)]
    stage_label: list[list[dict[str, float]]] = [[defaultdict(float) for _ in t.profile.stages] for t in sys.tenants]
    end_time = np.full(n_t, np.nan)
    acc = {k: np.zeros(n_f) for k in ("user", "sys", "iowait", "netwait", "storage_bytes", "host_io")}
    comp_busy = np.zeros(n_c)
    stage_storage = [[0.0 for _ in t.profile.stages] for t in sys.tenants]
    timeline: list[dict[str, Any]] = []
    ev_t: list[float] = []
    ev_rows: dict[str, list[np.ndarray]] = {k: [] for k in ("busy_vcpus", "iowait_vcpus", "storage_bps", "host_io_threads")}
    t = 0.0
    for _ in range(max_events):
        for ti, ten in enumerate(sys.tenants):
            if not started[ti] and ten.start_s <= t + 1e-12:
                started[ti] = True
        if done.all():
            break
        active = [f for f in range(n_f) if started[flow_tenant[f]] and not done[flow_tenant[f]] and remaining[f] > 0]
        pending = [sys.tenants[ti].start_s for ti in range(n_t) if not started[ti]]
        if not active:
            if not pending:
                break
            t = min(pending)
            continue
        terms = stage_terms(sys, active, [int(stage[f]) for f in active])
        fp = solve_rates(sys, active, terms)
        rate = fp.rate
        if (rate <= 0).any():
            bad = sys.flows[active[int(np.argmin(rate))]].name
            raise ValueError(f"flow {bad} cannot progress (a component on its path has no capacity)")
        dt = float(np.min(remaining[active] / rate))
        if pending:
            dt = min(dt, min(pending) - t)
        dt = max(dt, 0.0)
        cpu = terms.cpu_user + terms.cpu_sys
        vcpus = np.array([sys.flows[f].vcpus for f in active], dtype=float)
        busy = rate * cpu
        io_tasks = rate * terms.io_fixed + rate * (terms.io_serv * fp.stretch).sum(axis=1)
        kinds = np.array([sys.comps.kinds[b] if b >= 0 else "" for b in fp.bottleneck])
        at_storage = np.isin(kinds, list(STORAGE_KINDS))
        io_tasks = io_tasks + np.where(at_storage, fp.blocked, 0.0)
        idle_vcpus = np.maximum(vcpus - busy, 0.0)
        iowait = np.minimum(io_tasks, idle_vcpus)
        idx = np.array(active)
        acc["user"][idx] += rate * terms.cpu_user * dt
        acc["sys"][idx] += rate * terms.cpu_sys * dt
        acc["iowait"][idx] += iowait * dt
        acc["storage_bytes"][idx] += rate * terms.storage_bytes * dt
        host_cpu_cols = np.array([sys.flows[f].host_cpu for f in active])
        host_load = terms.load[np.arange(len(active)), host_cpu_cols] * rate
        acc["host_io"][idx] += (host_load - busy) * dt
        comp_busy += (rate @ terms.load) * dt
        if dt > 0:
            ev_t.append(t)
            for k, v in (("busy_vcpus", busy), ("iowait_vcpus", iowait), ("storage_bps", rate * terms.storage_bytes),
                         ("host_io_threads", host_load - busy)):
                row = np.zeros(n_f)
                row[idx] = v
                ev_rows[k].append(row)
        # per-tenant timeline segment and stage bottleneck votes
        for ti in set(flow_tenant[idx].tolist()):
            sel = flow_tenant[idx] == ti
            s_i = int(t_stage[ti])
            stage_storage[ti][s_i] += float((rate[sel] * terms.storage_bytes[sel]).sum() * dt)
            for j in np.flatnonzero(sel):
                stage_label[ti][s_i][_label(sys, fp, terms, int(j), sys.flows[active[int(j)]])] += dt
            n_slots = np.array([sys.flows[active[j]].slots for j in np.flatnonzero(sel)], dtype=float)
            r_sel = rate[sel]
            used = sorted({int(c) for j in np.flatnonzero(sel) for c in np.flatnonzero(terms.io_serv[j] > 0)})
            share = {"cpu": float(np.mean(r_sel * cpu[sel] / n_slots))}
            for c in used:
                share[sys.comps.names[c]] = float(np.mean(r_sel * terms.io_serv[sel, c] * fp.stretch[sel, c] / n_slots))
            share["storage path latency"] = float(np.mean(r_sel * terms.io_fixed[sel] / n_slots))
            share["network"] = float(np.mean(r_sel * fp.t_net[sel] / n_slots))
            share["blocked at bottleneck"] = float(np.mean(fp.blocked[sel] / n_slots))
            ios = terms.io_count[sel]
            timeline.append(
                {
                    "tenant": sys.tenants[ti].name,
                    "stage": sys.tenants[ti].profile.stages[s_i].name,
                    "t_start_s": t,
                    "t_end_s": t + dt,
                    "storage_mb_per_s": float((r_sel * terms.storage_bytes[sel]).sum() / 1e6),
                    "io_latency_ms": float(np.mean(fp.t_io[sel] / ios) * 1e3) if (ios > 0).all() else 0.0,
                    "wait_share": share,
                }
            )
        t += dt
        remaining[idx] -= rate * dt
        remaining[idx[remaining[idx] <= rate * 1e-9]] = 0.0  # finished (to rounding)
        for ti in range(n_t):
            if not started[ti] or done[ti]:
                continue
            fl = sys.tenants[ti].flows
            if (remaining[fl] <= 0).all():
                stage_times[ti].append(t - stage_start[ti])
                stage_start[ti] = t
                t_stage[ti] += 1
                if t_stage[ti] >= len(sys.tenants[ti].profile.stages):
                    done[ti] = True
                    end_time[ti] = t
                else:
                    for f in fl:
                        stage[f] = t_stage[ti]
                        remaining[f] = sys.flows[f].bytes_per_stage[t_stage[ti]]
    else:  # pragma: no cover - defensive
        raise RuntimeError("batch-job simulation did not finish")
    res = _collect(sys, stage_times, stage_label, stage_storage, end_time, acc, comp_busy, timeline)
    if ev_t:
        res.events = FlowSeries(np.array(ev_t + [t]), *(np.array(ev_rows[k]) for k in ev_rows))
    return res


def _collect(sys, stage_times, stage_label, stage_storage, end_time, acc, comp_busy, timeline) -> JobsResult:
    tenants = []
    vms = []
    for ti, ten in enumerate(sys.tenants):
        runtime = float(end_time[ti] - ten.start_s)
        fl = ten.flows
        vcpus = np.array([sys.flows[f].vcpus for f in fl], dtype=float)
        denom = vcpus * runtime
        user = acc["user"][fl] / denom
        sysc = acc["sys"][fl] / denom
        iow = acc["iowait"][fl] / denom
        for k, f in enumerate(fl):
            vms.append(
                {
                    "vm": sys.flows[f].name,
                    "tenant": ten.name,
                    "host": sys.hosts[sys.flows[f].host].name,
                    "user": float(user[k]),
                    "system": float(sysc[k]),
                    "iowait": float(iow[k]),
                    "idle": float(max(0.0, 1 - user[k] - sysc[k] - iow[k])),
                }
            )
        host_share = []
        for h in ten.hosts:
            on_h = [f for f in range(len(sys.flows)) if sys.flows[f].host == h]
            busy = acc["user"][on_h].sum() + acc["sys"][on_h].sum() + acc["host_io"][on_h].sum()
            host_share.append(busy / (sys.hosts[h].logical_cpus * runtime))
        tenants.append(
            {
                "tenant": ten.name,
                "job": ten.profile.name,
                "runtime_s": runtime,
                "stages": [s.name for s in ten.profile.stages],
                "stage_runtimes_s": [float(x) for x in stage_times[ti]],
                "stage_bottlenecks": [max(lbl, key=lbl.get) if lbl else "" for lbl in stage_label[ti]],
                "stage_storage_mb_per_s": [
                    float(b / max(d, 1e-12) / 1e6) for b, d in zip(stage_storage[ti], stage_times[ti])
                ],
                "storage_mb_per_s": float(acc["storage_bytes"][fl].sum() / runtime / 1e6),
                "vm_cpu_user": float(user.mean()),
                "vm_cpu_system": float(sysc.mean()),
                "vm_cpu_busy": float((user + sysc).mean()),
                "vm_iowait": float(iow.mean()),
                "host_cpu_busy": float(np.mean(host_share)),
            }
        )
    horizon = float(np.nanmax(end_time)) if len(end_time) else 0.0
    cap = sys.comps.capacity_array()
    components = [
        {
            "component": sys.comps.names[c],
            "kind": sys.comps.kinds[c],
            "capacity": float(cap[c]),
            "mean_utilisation": float(comp_busy[c] / (cap[c] * horizon)) if cap[c] > 0 and horizon > 0 else 0.0,
        }
        for c in range(len(cap))
    ]
    hosts = []
    for h, info in enumerate(sys.hosts):
        on_h = [f for f in range(len(sys.flows)) if sys.flows[f].host == h]
        ends = [end_time[t] - sys.tenants[t].start_s for t in range(len(sys.tenants)) if h in sys.tenants[t].hosts]
        span = float(max(ends)) if ends else 0.0
        denom = info.logical_cpus * span if span > 0 else 1.0
        vm_busy = float(acc["user"][on_h].sum() + acc["sys"][on_h].sum())
        host_io = float(acc["host_io"][on_h].sum())
        hosts.append(
            {
                "host": info.name,
                "logical_cpus": info.logical_cpus,
                "user": float(acc["user"][on_h].sum()) / denom,
                "system": float(acc["sys"][on_h].sum() + host_io) / denom,
                "iowait": float(acc["iowait"][on_h].sum()) / denom,
                "cpu_busy": (vm_busy + host_io) / denom,
                "cpu_vms": vm_busy / denom,
                "cpu_storage_stack": host_io / denom,
            }
        )
    return JobsResult(tenants=tenants, hosts=hosts, vms=vms, timeline=timeline, components=components)


def stored_bytes_per_vm(prof: BatchProfile, n_vms: int) -> float:
    """Bytes a job leaves on one VM's volumes: its input (stored ``replication`` times) + every stage's writes."""
    per_vm = prof.input_bytes / n_vms
    total = per_vm * prof.replication
    for s in prof.stages:
        total += per_vm * s.data_fraction * (s.write_temp + s.write_data * (prof.replication if s.replicate else 1))
    return total
