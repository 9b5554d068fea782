"""The hyper-converged datastore inside the storage stage: VM I/O across hosts, resyncs after host absences.

Built by :class:`densim.engine.plugins.storage.StorageStage` when ``storage.hci`` is given
(:mod:`densim.models.storage.hci` has the policies and the arithmetic; docs/background/hci.md the model).

Per step, for the VMs on the HCI datastore:

* **back-end load per host.** A policy turns the VMs' reads and writes into back-end reads and writes
  (:func:`~densim.models.storage.hci.io_costs`). vSAN spreads them over the hosts that are up; a Nutanix
  policy keeps the reads and the first copy of every write on the VM's own host (data locality) and
  spreads the other copies. Each host's disks are one station group (a JBOD of ``disks_per_host``
  drives, :func:`densim.models.storage.vmio._latency_parts`, the datastores' queueing model).
* **network per host.** The transfers the policy puts on the network, spread over the hosts up, plus
  the resync's, on each host's storage adapter; a remote I/O pays ``B / bandwidth / (1 - rho) +
  network_latency``.
* **latency of a VM.** A read: one back-end response (its host's disks under locality, the cluster's
  mean otherwise) plus the network when remote; a write: every phase of its fork-join (``H_m`` x the
  mean back-end response for ``m`` members; ``H_2 = 1.5``) plus one network delay per phase.
* **absences, from the one timeline.** A host down (``ctx.failures``' down intervals) or in maintenance
  (from the landing of its last evacuation, the event loop's records ``ctx.moves``) is *absent*: it
  serves nothing, and EC reads of its components are rebuilt from their stripe until it is
  re-protected. Who is up in a step is read from those intervals for that step, never a snapshot.
* **resync.** A host absent longer than ``repair_delay`` has its share of the raw data
  (``used raw / hosts``) rebuilt on the others from then; one back sooner has the writes it missed
  copied back when it returns (delta resync). ``full-data-migration`` maintenance copies the host's
  share away from the maintenance decision on. The resyncs run one after the other at
  ``r(t) = rebuild_share x hosts_up x per-host rate(k) x (1 - u(t))`` (:func:`~densim.models.storage.hci.resync_rate_Bps`,
  ``u`` the foreground's busiest mean utilisation of disks or adapters; ``k`` the pieces read per piece rebuilt:
  1 for a mirror, ``d`` for a ``d + p`` erasure code, :func:`~densim.models.storage.hci.rebuild_reads`; an
  evacuation copies, ``k = 1``); each host up reads ``k r / hosts_up`` and writes ``r / hosts_up`` on its disks
  and sends and receives ``k r / hosts_up`` on its adapter. A rebuild cannot run while fewer hosts are up than
  the policy places on; it waits (and becomes a delta resync if the host returns first).
* **a disk failing inside a host** (``failures`` target ``datastore:<hci>@<host>/drive:<i>``): its components
  are lost (degraded), not absent, so its share of the host's data (host share / disks per host) is rebuilt
  from the failure on, no repair delay, as a ``drive`` resync with the same machinery; the host stays up.
* **resync CPU.** ``3 k + 1`` stack bytes per rebuilt byte at ``storage.hci.resync_cycles_per_byte``, taken
  from every host up while the resync runs. Nothing here needs a CPU result, so the storage stage runs
  :meth:`HciRuntime.step` before the CPU step and takes the CPU from the hosts' capacity there (CPU Ready
  includes it); :meth:`HciRuntime.after_cpu` adds the CPU Ready sums.

``summary["hci"]``: the capacity answer, per policy the write amplification and network bytes, each
resync (start, end, bytes, time to compliance) and VM latency during resyncs against outside them, with
a per-step series around each resync (the report's "latency during resync" chart).
"""

from __future__ import annotations

import math
from typing import Any, TypedDict

import numpy as np

from densim.errors import InputError
from densim.models.queueing import max_iid_factors
from densim.models.storage.hci import TIB, GroupData, capacity, host_resync_Bps, io_costs, mean_rebuild_reads, policy
from densim.models.storage.vmio import SATURATION, DatastoreModel, _latency_parts

class HciSummary(TypedDict):
    """``summary["hci"]``."""

    datastore: str
    capacity: dict  # CapacityAnswer.as_dict() + the inputs it used
    policies: dict  # per policy: ftt, min_hosts, write amplification, network transfers, bytes, source
    mean_latency_s: float | None
    latency_s_resync_mean: float | None  # IOPS-weighted over the steps a resync ran
    latency_s_resync_worst: float | None
    latency_s_outside_mean: float | None
    latency_s_outside_worst: float | None
    cpu_ready_pct_resync_mean: float | None  # CPU Ready per vCPU over the steps a resync ran (as cpu_ready_pct_mean)
    cpu_ready_pct_outside_mean: float | None  # over the other steps
    network_bytes: float  # VM I/O on the storage network (one direction, cluster)
    resync_bytes: float
    saturated_steps: int
    per_host_resync_Bps: float  # rebuilt bytes/s one host accounts for at the rebuild's reads per byte (k)
    rebuild_reads_per_byte: float  # k: pieces read per piece rebuilt (1 mirror, d for a d+p erasure code; raw-weighted)
    rebuild_share: float
    resync_cycles_per_byte: float  # CPU cycles per byte through a host's storage stack (storage.hci input)
    resync_cpu_cycles: float  # CPU cycles the resyncs took from the hosts (3k + 1 stack bytes per rebuilt byte)
    energy_kwh: float | None  # the capacity disks (in the hosts' energy too)
    resyncs: list  # one per resync: host, event, kind, start/end, bytes, time to compliance, series


MAX_SERIES_POINTS = 400  # per resync, in summary["hci"]["resyncs"][i]["series"]


class Job:
    """One resync: ``bytes`` to move from ``start_s``, each rebuilt byte reading ``reads`` bytes."""

    def __init__(self, host: int, kind: str, start_s: float, bytes_: float, absent_from: float, absent_to: float,
                 event: str, reads: float = 1.0) -> None:
        self.host, self.kind, self.start_s, self.bytes = host, kind, start_s, bytes_
        self.reads = float(reads)
        self.left = bytes_
        self.absent_from, self.absent_to, self.event = absent_from, absent_to, event
        self.began: float | None = None
        self.end_s: float | None = None
        self.delta_bytes = 0.0  # writes it missed while absent (for a delta resync)


class HciRuntime:
    """State of the HCI datastore across chunks (one per run)."""

    def __init__(self, ctx, stage) -> None:
        hp = ctx.plant.hci
        self.hp, self.spec = hp, hp.spec
        st = ctx.scenario.storage
        self.block = float(st.block_size_bytes)
        self.burst = float(st.burstiness)
        self.H = H = ctx.hosts.n
        sc = ctx.scenario
        self.host_names = [str(h) for h in ctx.hosts.names]
        # VMs on the datastore, their policy
        grp = np.asarray(ctx.vms.group, dtype=np.int64)
        names = [g.name for g in sc.vms]
        on = np.array([(g.datastore or st.default_datastore) == self.spec.name for g in sc.vms], dtype=bool)
        pol_names = sorted({p.policy for p in self.spec.policies})
        self.policies = [policy(n) for n in pol_names]
        gpol = np.array([pol_names.index(hp.group_policy[n].policy) if on[i] else -1 for i, n in enumerate(names)],
                        dtype=np.int64)
        self.vm_pol = gpol[grp] if grp.size else np.zeros(0, np.int64)
        self.vm_on = self.vm_pol >= 0
        # data stored: each VM once (a run with failures or maintenance has a row per run of a VM)
        vm_of = getattr(ctx.source, "vm_of", None)
        rows = np.flatnonzero(self.vm_on)
        groups = []
        for i, n in enumerate(names):
            if not on[i]:
                continue
            mine = rows[grp[rows] == i]
            count = np.unique(vm_of[mine]).size if vm_of is not None else mine.size
            pg = hp.group_policy[n]
            groups.append(GroupData(n, pg.policy, count * pg.disk_bytes, pg.cold_fraction or 0.0))
        self.groups = groups
        self.cap = capacity(groups, H, hp.raw_per_host_bytes, slack=self.spec.slack,
                            reserve_hosts=self.spec.rebuild_reserve_hosts, dedupe_compression=self.spec.dedupe_compression)
        if self.cap.used_raw_bytes > self.cap.raw_bytes:
            raise InputError(sc.name, "storage.hci.policies",
                             f"the VMs' data takes {self.cap.used_raw_bytes / TIB:,.1f} TiB raw at their policies but the "
                             f"{H} hosts have {self.cap.raw_bytes / TIB:,.1f} TiB raw ({self.spec.disks_per_host} x "
                             f"{hp.device.name} each): it cannot be stored (add hosts or disks, or a cheaper policy)")
        self.host_share_bytes = self.cap.used_raw_bytes / H  # a host's share of the raw data
        self.min_hosts = max(p.min_hosts for p in self.policies)
        self.disks = DatastoreModel.build(self.spec.name, hp.device, self.spec.disks_per_host, "jbod", None, 0, self.block)
        d = hp.device
        k = self.spec.disks_per_host
        self.nic_Bps = float(hp.nic.bandwidth_bps)
        self.seq_Bps = (d.seq_bps(False, "HCI model"), d.seq_bps(True, "HCI model"))
        # a rebuilt byte reads k bytes on other hosts (1: a mirror copy; d: a d+p erasure code), raw-weighted over the
        # groups' policies; a host evacuating its own components copies them (k = 1)
        self.k_rebuild = mean_rebuild_reads(groups, H)
        self.per_host_Bps = self.per_host_at(self.k_rebuild)
        self.cycles_per_byte = float(self.spec.resync_cycles_per_byte)
        self.cpu_cycles = 0.0
        self.share = float(self.spec.rebuild_share)
        has_power = d.idle_power_w is not None and d.active_power_w is not None
        self.p_idle = k * float(d.idle_power_w) if has_power else 0.0
        self.p_span = k * (float(d.active_power_w) - float(d.idle_power_w)) if has_power else 0.0
        self.power_known = has_power
        self.energy_j = 0.0
        # swap of VMs on the datastore goes to it when memory puts swap on the VM's own datastore
        mem = sc.memory
        self.swap_here = mem.model != "none" and mem.swap_datastore in (None, "vm")
        self._absences(ctx)
        self.acc = {k_: 0.0 for k_ in ("iops_s", "lat_iops", "rs_iops", "rs_lat", "out_iops", "out_lat", "net_bytes",
                                        "resync_bytes", "steps", "sat_steps")}
        self.worst = {"rs": 0.0, "out": 0.0}
        self.series: list[tuple[float, float, float, float]] = []  # (t_s, latency_s, resync_Bps, hosts_up)
        self.pol_iops = np.zeros((len(self.policies), 2))  # reads, writes (IOPS x s)
        # CPU Ready of every VM (row) during resyncs and outside them: per row, the sum over steps of its
        # per-step CPU Ready per vCPU (%) and the steps it was alive (the weighting of cpu_ready_pct_mean)
        V = ctx.vms.n
        self.ready = {k_: np.zeros(V) for k_ in ("rs_pct", "rs_alive", "out_pct", "out_alive")}

    # ---- the timeline ----------------------------------------------------------------------------
    def _absences(self, ctx) -> None:
        """Host absences and their resync jobs from the event loop's records."""
        t0 = ctx.grid.start_s
        self.until = t0 + ctx.grid.horizon_s
        ab: list[tuple[int, float, float, str]] = []
        fr = getattr(ctx, "failures", None)
        if fr is not None:
            for h, s, e in zip(fr.down_host.tolist(), fr.down_start_s.tolist(), fr.down_end_s.tolist()):
                ab.append((int(h), float(s), float(e), "failure"))
        moves = getattr(ctx, "moves", None)
        mig = ctx.scenario.migration
        jobs: list[Job] = []
        if moves is not None and mig.model != "none" and mig.maintenance:
            from densim.placement import timeline as TL

            names = {h: i for i, h in enumerate(self.host_names)}
            order = np.argsort([e.at_s for e in mig.maintenance], kind="stable")
            m = moves.mig if moves.mig is not None else np.zeros((0, 12))
            for k, i in enumerate(order):
                e = mig.maintenance[i]
                at = t0 + float(e.at_s)
                mine = m[m[:, TL.M_EVENT] == k] if m.size else m
                landed = mine[:, TL.M_END] if mine.size else np.zeros(0)
                enter = float(max(landed.max(), at)) if landed.size else at  # in maintenance once it is empty
                h = names[e.host]
                if self.spec.maintenance_mode == "full-data-migration":
                    jobs.append(Job(h, "evacuate", at, self.host_share_bytes, enter, math.inf, f"maintenance {e.host}", 1.0))
                    ab.append((h, enter, math.inf, "maintenance-evacuated"))
                else:
                    ab.append((h, enter, math.inf, "maintenance"))
        # a capacity disk failing inside a host (failures target datastore:<hci>@<host>/drive:<i>): its components are
        # lost, not absent (vSAN marks them degraded and re-protects at once; Nutanix re-replicates a failed disk's
        # extents at once): its share of the host's data, host share / disks per host, is rebuilt across the cluster
        # from the failure on; the host stays up
        if fr is not None and getattr(fr, "events", None) is not None and fr.events.storage is not None:
            ev, parts = fr.events, fr.events.storage
            sel = np.flatnonzero(ev.target >= ev.first_storage)
            p = ev.target[sel] - ev.first_storage
            mine = parts.kind[p] == 2
            per_disk = self.host_share_bytes / self.spec.disks_per_host
            for i, q in zip(sel[mine].tolist(), p[mine].tolist()):
                at = float(fr.t0 + ev.time_s[i])
                jobs.append(Job(int(parts.host[q]), "drive", at, per_disk, at, math.inf, f"drive failure {parts.names[q]}",
                                self.k_rebuild))
        delay = float(self.spec.repair_delay_s)
        for h, s, e, kind in ab:
            if kind == "maintenance-evacuated":
                continue
            label = f"{kind} {self.host_names[h]}"
            if e - s <= delay:  # back before the repair timer: the writes it missed, rebuilt from the survivors
                jobs.append(Job(h, "delta", e, 0.0, s, e, label, self.k_rebuild))
            else:
                jobs.append(Job(h, "rebuild", s + delay, self.host_share_bytes, s, e, label, self.k_rebuild))
        jobs.sort(key=lambda j: (j.start_s, j.host))
        self.jobs = jobs
        self.ab = ab
        self.ab_host = np.array([a[0] for a in ab], dtype=np.int64)
        self.ab_from = np.array([a[1] for a in ab], dtype=np.float64)
        self.ab_to = np.array([a[2] for a in ab], dtype=np.float64)

    def _absent_share(self, edges: np.ndarray) -> np.ndarray:
        """(steps, hosts): the share of each step each host is absent (down or in maintenance)."""
        from densim.workloads.tasks import alive_fraction

        out = np.zeros((edges.size - 1, self.H))
        if self.ab_host.size:
            a = alive_fraction(self.ab_from, self.ab_to, edges).astype(np.float64)
            np.add.at(out.T, self.ab_host, a.T)
        return np.minimum(out, 1.0)

    # ---- one chunk -------------------------------------------------------------------------------
    def per_host_at(self, reads: float) -> float:
        """Rebuilt bytes/s one host accounts for when each rebuilt byte reads ``reads`` bytes
        (:func:`~densim.models.storage.hci.host_resync_Bps`)."""
        return host_resync_Bps(self.spec.disks_per_host, self.seq_Bps[0], self.seq_Bps[1], self.nic_Bps, reads)

    def step(self, ctx, chunk, read: np.ndarray, write: np.ndarray):
        """Latency (steps, VMs) of the VMs on the datastore (0 elsewhere), the resync's traffic and its CPU per host;
        ``read``/``write``: (steps, VMs) IOPS of every VM (swap included by the caller when it lands here).

        Needs no CPU result (the VMs' I/O, the timeline, the hardware and the rebuild share decide it), so the
        storage stage runs it before the CPU step and adds ``out["cpu_mhz"]`` (the resync's storage-stack CPU per
        host) to the hosts' demand there; :meth:`after_cpu` then adds the CPU Ready sums."""
        edges = ctx.grid.edges_s(chunk.t0, chunk.t1)
        T, V = read.shape
        on = self.vm_on
        host = np.asarray(ctx.vms.host, dtype=np.int64)
        placed = on & (host >= 0)
        absent = self._absent_share(edges)
        up = 1.0 - absent
        n_up = np.maximum(up.sum(axis=1), 1e-9)  # (T,)
        B = self.block
        for k in range(len(self.policies)):
            sel = np.flatnonzero(placed & (self.vm_pol == k))
            self.pol_iops[k] += (float(read[:, sel].sum(dtype=np.float64)) * chunk.step_s,
                                 float(write[:, sel].sum(dtype=np.float64)) * chunk.step_s)
        load, rf, net, be_total, costs = self._load(read, write, host, placed, up, n_up, self._degraded_hosts(edges))
        net_host = (net * B / n_up)[:, None] * up  # bytes/s each direction per host
        # pass 1: the foreground alone, for the resync's rate
        _, _, _, _, u_dev = _latency_parts(self.disks, load, rf, self.burst)
        u_nic = net_host / self.nic_Bps
        u_fg = np.maximum((np.minimum(u_dev, 1.0) * up).sum(axis=1), (np.minimum(u_nic, 1.0) * up).sum(axis=1)) / n_up
        written, reads, active = self._walk(edges, n_up, u_fg, be_total, up)
        load, rf, net, be_total, costs = self._load(read, write, host, placed, up, n_up, self._degraded_hosts(edges))
        net_host = (net * B / n_up)[:, None] * up
        # per host up: rebuilt bytes/s it writes, and the bytes/s it reads and sends (k per rebuilt byte) and receives
        per_host_rs = written / n_up
        per_host_rd = reads / n_up
        disk_busy = (per_host_rd / (self.spec.disks_per_host * self.seq_Bps[0])
                     + per_host_rs / (self.spec.disks_per_host * self.seq_Bps[1]))  # share of the disks' time
        drive_share = np.clip(1.0 - disk_busy, 0.05, 1.0)[:, None] * np.ones((1, self.H))
        # pass 2: with the resync's share of the disks and adapters
        lat_d, _, util_d, sat_d, u_dev = _latency_parts(self.disks, load, rf, self.burst, drive_share=drive_share)
        rho = (net_host + per_host_rd[:, None] * up) / self.nic_Bps
        sat_n = rho >= SATURATION
        rho_c = np.minimum(rho, SATURATION)
        net_delay = B / self.nic_Bps / (1.0 - rho_c) + float(self.spec.network_latency_s)  # (T, H)
        w_up = up / n_up[:, None]
        mean_dev = (lat_d * w_up).sum(axis=1)  # (T,) mean back-end response over the hosts up
        mean_net = (net_delay * w_up).sum(axis=1)
        lat = np.zeros((T, V), dtype=np.float32)
        rf_vm = np.divide(read, read + write, out=np.ones_like(read, dtype=np.float32), where=(read + write) > 0)
        for k, sel, c, rr in costs:
            if not sel.size:
                continue
            p = self.policies[k]
            hv = host[sel]
            if p.locality:
                rd = lat_d[:, hv]
            else:  # rr back-end reads (a degraded EC read: a fork-join over its stripe, taken as rr responses' mean)
                rd = (mean_dev + c.read_remote * mean_net)[:, None]
            wr = np.zeros(T)
            for m in c.write_phases:
                wr = wr + (max_iid_factors(m, 1.0)[0] if m > 1 else 1.0) * mean_dev + mean_net
            f = rf_vm[:, sel]
            lat[:, sel] = (f * rd + (1.0 - f) * wr[:, None]).astype(np.float32)
        # accounting
        iops = (read + write)[:, placed].sum(axis=1).astype(np.float64)
        vm_lat = np.divide((lat[:, placed] * (read + write)[:, placed]).sum(axis=1), iops, out=np.zeros(T), where=iops > 0)
        dt = chunk.step_s
        rs_on = active > 0
        a = self.acc
        a["iops_s"] += float(iops.sum())
        a["lat_iops"] += float((vm_lat * iops).sum())
        a["rs_iops"] += float(iops[rs_on].sum())
        a["rs_lat"] += float((vm_lat * iops)[rs_on].sum())
        a["out_iops"] += float(iops[~rs_on].sum())
        a["out_lat"] += float((vm_lat * iops)[~rs_on].sum())
        a["net_bytes"] += float((net * B).sum() * dt)
        a["resync_bytes"] += float(written.sum() * dt)
        a["steps"] += T
        sat = (sat_d | sat_n).any(axis=1)
        a["sat_steps"] += float(sat.sum())
        if rs_on.any():
            self.worst["rs"] = max(self.worst["rs"], float(vm_lat[rs_on].max()))
        if (~rs_on).any():
            self.worst["out"] = max(self.worst["out"], float(vm_lat[~rs_on].max()))
        mid = 0.5 * (edges[:-1] + edges[1:]) - ctx.grid.start_s
        self.series.extend(zip(mid.tolist(), vm_lat.tolist(), written.tolist(), n_up.tolist()))
        # the storage stacks' CPU: 3k + 1 stack bytes per rebuilt byte (k read, sent and received, 1 written), spread
        # over the hosts up like the traffic (cycles/s -> MHz)
        stack_Bps = 3.0 * reads + written  # = (3 k + 1) x written for one job's k (models.storage.hci.resync_stack_bytes)
        cpu_mhz = (self.cycles_per_byte * stack_Bps / n_up / 1e6)[:, None] * up
        self.cpu_cycles += float(cpu_mhz.sum() * 1e6 * dt)
        util = np.maximum(util_d, rho) * up
        host_w = (self.p_idle + self.p_span * np.clip(u_dev, 0.0, 1.0)) * up
        self.energy_j += float(host_w.sum() * dt)
        out = {"lat": lat, "util": util, "host_w": host_w, "net_host_Bps": (net_host + per_host_rd[:, None] * up),
               "resync_host_Bps": per_host_rd[:, None] * up, "cpu_mhz": cpu_mhz, "rs_on": rs_on, "edges": edges}
        return out

    def after_cpu(self, ctx, chunk, out) -> None:
        """After the CPU step: CPU Ready during resyncs and outside them (``out`` from :meth:`step` of this chunk)."""
        self._ready_sums(ctx, chunk, out["edges"], out["rs_on"])

    def _ready_sums(self, ctx, chunk, edges: np.ndarray, rs_on: np.ndarray) -> None:
        """Add the chunk's CPU Ready per vCPU (%) of every VM, and its alive steps, to the resync / outside sums
        (the storage stage reads the per-VM CPU results when the HCI datastore is on)."""
        ready_s = chunk.vm.get("cpu_ready_s")
        if ready_s is None:
            raise RuntimeError("the HCI datastore needs the per-VM CPU Ready (storage stage reads_cpu_results)")
        vcpus = np.maximum(np.asarray(ctx.vms.vcpus, dtype=np.float64), 1.0)
        pct = np.asarray(ready_s, dtype=np.float64) * (100.0 / (vcpus * chunk.step_s))[None, :]  # (T, V)
        alive = chunk.window(ctx).alive().astype(np.float64)  # the window state: ones when every row lives the run
        r, rs = self.ready, rs_on.astype(np.float64)
        r["rs_pct"] += rs @ pct
        r["rs_alive"] += rs @ alive
        r["out_pct"] += (1.0 - rs) @ pct
        r["out_alive"] += (1.0 - rs) @ alive

    def ready_means(self, ctx) -> tuple[float | None, float | None]:
        """CPU Ready per vCPU (%) during resyncs and outside them: each VM's ready time over its alive time in
        those steps (its runs pooled), averaged over the VMs alive in them: as ``cpu_ready_pct_mean``."""
        from densim.engine.summary import ready_over_life

        vm_of = getattr(ctx.source, "vm_of", None)
        r = self.ready
        out = []
        for k in ("rs", "out"):
            share, lived = ready_over_life(r[f"{k}_pct"], r[f"{k}_alive"], vm_of)
            out.append(float(share[lived].mean()) if lived.any() else None)
        return out[0], out[1]

    def _load(self, read, write, host, placed, up, n_up, degraded):
        """Back-end IOPS and read share per host (steps, hosts), network transfers/s and back-end I/Os/s of the
        cluster (steps,), and per policy ``(index, VMs, healthy costs, back-end reads per read per step)``."""
        T = read.shape[0]
        H = self.H
        be_total = np.zeros(T)
        be_read = np.zeros(T)
        local = np.zeros((T, H))  # back-end I/Os kept on the VM's host (locality)
        local_read = np.zeros((T, H))
        net = np.zeros(T)  # transfers/s, cluster
        costs = []
        vals, inv = np.unique(degraded, return_inverse=True)
        for k, p in enumerate(self.policies):
            sel = np.flatnonzero(placed & (self.vm_pol == k))
            c0 = io_costs(p, H)
            if not sel.size:
                costs.append((k, sel, c0, np.ones(T)))
                continue
            r = read[:, sel].astype(np.float64)
            w = write[:, sel].astype(np.float64)
            R, W = r.sum(axis=1), w.sum(axis=1)
            cv = [io_costs(p, H, float(a)) for a in vals]  # degraded EC reads: per distinct count of absent hosts
            rr = np.array([c.read_reads for c in cv])[inv]
            rn = np.array([c.read_net for c in cv])[inv]
            costs.append((k, sel, c0, rr))
            be_read += R * rr + W * c0.write_reads
            be_total += R * rr + W * c0.write_amplification
            net += R * rn + W * c0.write_net
            if p.locality:  # reads and the first copy of each write on the VM's host
                hv = host[sel]
                lr = np.zeros((T, H))
                lw = np.zeros((T, H))
                np.add.at(lr.T, hv, r.T)
                np.add.at(lw.T, hv, w.T)
                local += lr + lw
                local_read += lr
        spread = np.maximum(be_total - local.sum(axis=1), 0.0)
        spread_read = np.maximum(be_read - local_read.sum(axis=1), 0.0)
        load = (local + (spread / n_up)[:, None]) * up  # back-end IOPS per host (absent hosts: none)
        rload = (local_read + (spread_read / n_up)[:, None]) * up
        rf = np.divide(rload, load, out=np.ones_like(load), where=load > 0)
        self._be_write = be_total - be_read  # back-end writes/s, cluster (for a delta resync's missed writes)
        return load, rf, net, be_total, costs

    def _degraded_hosts(self, edges: np.ndarray) -> np.ndarray:
        """(steps,) hosts absent and not re-protected at the step's start: an absence counts until its resync ends
        (a rebuild, or the delta resync after it returns); a failed disk counts as ``1 / disks_per_host`` of a host
        until its data is rebuilt (its components' share of the EC reads is degraded)."""
        lo = edges[:-1]
        out = np.zeros(lo.size, dtype=np.float64)
        for j in self.jobs:
            if j.kind == "evacuate":
                continue
            stop = j.end_s if j.end_s is not None else math.inf
            w = 1.0 / self.spec.disks_per_host if j.kind == "drive" else 1.0
            out += w * ((lo >= j.absent_from) & (lo < stop))
        return out

    def _walk(self, edges: np.ndarray, n_up: np.ndarray, u_fg: np.ndarray, be_total: np.ndarray, up: np.ndarray):
        """Advance the resync jobs over the chunk, one after the other; per step the cluster's rebuilt bytes/s and
        read bytes/s (means over the step: a job at ``r = share x hosts up x per-host(k) x (1 - u)`` for the share of
        the step it runs; it reads ``k r``) and the share of the step a resync ran."""
        lo, hi = edges[:-1], edges[1:]
        T = lo.size
        base = self.share * n_up * np.clip(1.0 - u_fg, 0.0, 1.0)  # x per-host rate at the job's k
        active = np.zeros(T)
        written = np.zeros(T)
        reads = np.zeros(T)
        # writes a host misses while absent (a delta resync copies them back): the share of the back-end writes its
        # components would have taken, 1 / hosts of them
        wr_per_host = self._be_write * self.block / self.H
        for j in self.jobs:
            if j.kind in ("rebuild", "delta") and j.end_s is None:  # (a rebuild that cannot run turns into a delta resync)
                ov = np.clip(np.minimum(hi, j.absent_to) - np.maximum(lo, j.absent_from), 0.0, None)
                j.delta_bytes += float((wr_per_host * ov).sum())
        t_free = lo[0] if T else 0.0
        for j in self.jobs:
            if j.end_s is not None:
                t_free = max(t_free, j.end_s)
                continue
            if j.kind == "delta":
                if hi[-1] <= j.absent_to:
                    continue  # not back yet (a later job may run meanwhile)
                j.left = j.bytes = j.delta_bytes
            begin = max(j.start_s, t_free)
            if begin >= hi[-1]:
                break
            # a rebuild needs the policy's hosts up besides the absent one (a failed disk's: the policy's hosts up)
            if j.kind in ("rebuild", "drive"):
                ok = (n_up >= self.min_hosts - 1e-9) & (lo < j.absent_to)  # (once it is back: a delta resync instead)
                first = np.flatnonzero(ok & (hi > begin))
                if not first.size:
                    if hi[-1] > j.absent_to:  # it came back first: copy back what it missed instead
                        j.kind, j.start_s = "delta", j.absent_to
                        j.left = j.bytes = j.delta_bytes
                        begin = max(j.start_s, t_free)
                    else:
                        continue  # waits for hosts; a later job may run meanwhile
                else:
                    begin = max(begin, lo[first[0]])
            if j.began is None:
                j.began = begin
            rate = base * self.per_host_at(j.reads)
            # the job's time in each step starts after ``begin`` and after what earlier jobs took of the step
            t_s = np.maximum(np.maximum(lo, begin), lo + active * (hi - lo))
            avail = np.clip(hi - t_s, 0.0, None)
            if j.kind in ("rebuild", "drive"):
                avail = avail * (n_up >= self.min_hosts - 1e-9) * (lo < j.absent_to)
            prog = rate * avail
            cum = np.cumsum(prog)
            if j.left <= 0.0:
                j.end_s = begin
                t_free = begin
                continue
            idx = int(np.searchsorted(cum, j.left - 1e-6))
            if idx >= T:  # not done in this chunk
                j.left -= float(cum[-1]) if T else 0.0
                share = avail / np.maximum(hi - lo, 1e-12)
                active += share
                written += rate * share
                reads += j.reads * rate * share
                break
            before = float(cum[idx - 1]) if idx > 0 else 0.0
            need = (j.left - before) / max(rate[idx], 1e-300)
            end = min(t_s[idx] + need, hi[idx])
            frac = avail.copy()
            frac[idx + 1:] = 0.0
            frac[idx] = max(end - t_s[idx], 0.0)
            share = frac / np.maximum(hi - lo, 1e-12)
            active += share
            written += rate * share
            reads += j.reads * rate * share
            j.end_s = float(end)
            j.left = 0.0
            t_free = j.end_s
        return written, reads, np.clip(active, 0.0, 1.0)

    # ---- summary ---------------------------------------------------------------------------------
    def summary(self, ctx) -> dict[str, Any]:
        a = self.acc
        t0 = ctx.grid.start_s

        def ratio(x, y):
            return float(x / y) if y > 0 else None

        pols = {}
        for k, p in enumerate(self.policies):
            c = io_costs(p, self.H)
            r_s, w_s = self.pol_iops[k]
            pols[p.name] = {"ftt": p.ftt, "min_hosts": p.min_hosts, "write_amplification": c.write_amplification,
                            "network_transfers_per_write": c.write_net, "network_transfers_per_read": c.read_net,
                            "network_bytes": float((r_s * c.read_net + w_s * c.write_net) * self.block),
                            "source": p.source}
        ser = np.asarray(self.series, dtype=np.float64).reshape(-1, 4)
        resyncs = []
        for j in self.jobs:
            row = {"host": self.host_names[j.host], "event": j.event, "kind": j.kind,
                   "absent_from_s": j.absent_from - t0, "absent_to_s": None if not math.isfinite(j.absent_to) else j.absent_to - t0,
                   "start_s": (j.began - t0) if j.began is not None else None,
                   "end_s": (j.end_s - t0) if j.end_s is not None else None, "bytes": float(j.bytes),
                   "time_to_compliance_s": (j.end_s - (j.absent_from if j.kind != "evacuate" else j.start_s))
                   if j.end_s is not None else None, "finished": j.end_s is not None}
            if j.began is not None and ser.size:
                lo = j.began - t0 - 10 * ctx.grid.step_s
                hi = (j.end_s - t0 if j.end_s is not None else math.inf) + 10 * ctx.grid.step_s
                sel = ser[(ser[:, 0] >= lo) & (ser[:, 0] <= hi)]
                if sel.shape[0] > MAX_SERIES_POINTS:
                    sel = sel[np.linspace(0, sel.shape[0] - 1, MAX_SERIES_POINTS).astype(int)]
                row["series"] = {"t_s": sel[:, 0].tolist(), "latency_s": sel[:, 1].tolist(),
                                 "resync_Bps": sel[:, 2].tolist(), "hosts_up": sel[:, 3].tolist()}
            elif j.began is None and j.kind in ("rebuild", "drive"):
                row["waiting"] = (f"{self.min_hosts} hosts must be up to place every component; the rebuild waits"
                                  if self.H - 1 < self.min_hosts else "not started by the end of the run")
            resyncs.append(row)
        ready_rs, ready_out = self.ready_means(ctx)
        return {
            "datastore": self.spec.name,
            "capacity": self.cap.as_dict() | {"dedupe_compression": self.spec.dedupe_compression, "slack": self.spec.slack,
                                              "rebuild_reserve_hosts": self.spec.rebuild_reserve_hosts,
                                              "over_slack": self.cap.used_raw_bytes > self.cap.available_raw_bytes},
            "policies": pols,
            "mean_latency_s": ratio(a["lat_iops"], a["iops_s"]),
            "latency_s_resync_mean": ratio(a["rs_lat"], a["rs_iops"]),
            "latency_s_resync_worst": self.worst["rs"] if a["rs_iops"] > 0 else None,
            "latency_s_outside_mean": ratio(a["out_lat"], a["out_iops"]),
            "latency_s_outside_worst": self.worst["out"] if a["out_iops"] > 0 else None,
            "cpu_ready_pct_resync_mean": ready_rs, "cpu_ready_pct_outside_mean": ready_out,
            "network_bytes": a["net_bytes"], "resync_bytes": a["resync_bytes"], "saturated_steps": int(a["sat_steps"]),
            "per_host_resync_Bps": self.per_host_Bps, "rebuild_reads_per_byte": self.k_rebuild, "rebuild_share": self.share,
            "resync_cycles_per_byte": self.cycles_per_byte, "resync_cpu_cycles": self.cpu_cycles,
            "energy_kwh": self.energy_j / 3.6e6 if self.power_known else None,
            "resyncs": resyncs,
        }

    def report_section(self, ctx) -> dict[str, Any]:
        """Run-report section: notes, a table of the resyncs and a figure of VM latency and resync traffic over time."""
        h = self.summary(ctx)
        c = h["capacity"]
        notes = [f"{c['hosts']} hosts x {self.spec.disks_per_host} x {self.hp.device.name}: {c['raw_tib']:,.1f} TiB raw, "
                 f"{c['usable_tib']:,.1f} TiB usable after a {c['rebuild_reserve_hosts']}-host rebuild reserve and "
                 f"{100 * c['slack']:.0f} % slack ({c['used_raw_tib']:,.1f} TiB raw used); hosts needed {c['hosts_needed']} "
                 f"(limit: {c['limiting']})."]
        if c["over_slack"]:
            notes.append(f"The data takes more raw than the slack and rebuild reserve leave ({c['used_raw_tib']:,.1f} of "
                         f"{c['available_raw_tib']:,.1f} TiB): {c['hosts_needed']} hosts would keep them.")
        for name, p in h["policies"].items():
            notes.append(f"{name}: FTT={p['ftt']}, at least {p['min_hosts']} hosts; {p['write_amplification']:.2f} back-end "
                         f"I/Os and {p['network_transfers_per_write']:.2f} network transfers per write, "
                         f"{p['network_transfers_per_read']:.2f} per read.")
        if h["latency_s_resync_mean"] is not None:
            notes.append(f"VM I/O latency during resyncs {1e3 * h['latency_s_resync_mean']:.3f} ms mean "
                         f"({1e3 * h['latency_s_resync_worst']:.3f} ms worst step) against "
                         f"{1e3 * (h['latency_s_outside_mean'] or 0.0):.3f} ms outside them.")
        if h["cpu_ready_pct_resync_mean"] is not None:
            out_ready = h["cpu_ready_pct_outside_mean"]
            notes.append(f"CPU Ready per vCPU during resyncs {h['cpu_ready_pct_resync_mean']:.2f} % mean against "
                         + (f"{out_ready:.2f} % outside them" if out_ready is not None else "no steps outside them")
                         + " (each VM's ready time over its alive time in those steps, averaged over the VMs).")
        if h["resync_bytes"] > 0:
            notes.append(f"Resyncs moved {h['resync_bytes'] / 2**30:,.1f} GiB; a rebuilt byte reads "
                         f"{h['rebuild_reads_per_byte']:.2f} bytes on other hosts (1 for a mirror, d for a d+p erasure code), "
                         f"so one host accounts for {h['per_host_resync_Bps'] / 1e9:.2f} GB/s at most; their storage stacks "
                         f"took {h['resync_cpu_cycles'] / 1e9 / 3600:,.2f} GHz-hours of the hosts' CPU "
                         f"({h['resync_cycles_per_byte']:g} cycles per byte).")
        rows = [[r["host"], r["event"], r["kind"], r["absent_from_s"], r["start_s"], r["end_s"], r["bytes"] / 2**30,
                 r["time_to_compliance_s"], r.get("waiting", "")] for r in h["resyncs"]]
        ser = np.asarray(self.series, dtype=np.float64).reshape(-1, 4)
        fig = None
        if ser.size:
            k = max(1, int(math.ceil(ser.shape[0] / 2000)))
            s = ser[::k]
            fig = {"data": [{"type": "scatter", "mode": "lines", "name": "VM I/O latency (ms)", "x": (s[:, 0] / 3600).tolist(),
                             "y": (1e3 * s[:, 1]).tolist()},
                            {"type": "scatter", "mode": "lines", "name": "resync (GB/s)", "yaxis": "y2",
                             "x": (s[:, 0] / 3600).tolist(), "y": (s[:, 2] / 1e9).tolist()}],
                   "layout": {"title": {"text": f"HCI datastore {self.spec.name}: VM latency and resync over time"},
                              "xaxis": {"title": {"text": "hours from start"}}, "yaxis": {"title": {"text": "ms"}, "rangemode": "tozero"},
                              "yaxis2": {"title": {"text": "GB/s"}, "overlaying": "y", "side": "right", "rangemode": "tozero"},
                              "height": 340}}
        return {"title": f"HCI datastore {self.spec.name}", "notes": notes, "figure": fig,
                "table": {"columns": ["host", "event", "resync", "absent from (s)", "started (s)", "ended (s)", "GiB",
                                      "time to compliance (s)", "note"], "rows": rows}}
