"""Engine stage ``storage``: per-VM disk traffic on datastores, per-VM I/O latency per step.

Switched on by ``storage: {model: queueing, datastores: [...]}``. Each VM's I/O comes from its
trace (channels ``disk_read_Bps``/``disk_write_Bps`` divided by ``storage.block_size``), from
``vms[].workload`` (``iops``, ``read_fraction``) for profile-driven VMs, and from swap traffic the
memory stage adds with :func:`densim.models.storage.vmio.add_swap_io` (``memory.swap_datastore``).
The I/O lands on the VM's datastore (``vms[].datastore`` or ``storage.default_datastore``), swap
on the datastore the VM's swap lives on; a ``per-host`` datastore is one array per host (local
disks), a ``shared`` one is a single array for every VM naming it. The latency of every datastore
is solved for all steps at once (:mod:`densim.models.storage.vmio`), so VMs on one datastore slow
each other. The stage runs after ``memory`` (declared), and offers the memory stage
:meth:`StorageStage.swap_queues`: the datastores' latency as a function of swap load, with the
other VMs' I/O of the step, for the memory model's fault-cost fixed point.

Saturation: the busiest station's utilisation of every datastore slot, per step (``datastore``).

Metrics: ``io_iops`` and ``io_latency_s`` per VM, ``io_saturated`` (share of steps whose datastore
was saturated), ``vm_io_iops`` per host; ``summary["storage"]`` per datastore.

Failures (``failures:``, :mod:`densim.engine.storage_faults`): drives and controllers of the datastores
fail, arrays run degraded and rebuild, a datastore may be lost (``io_down`` per VM, its I/O not
served); HA restarts read ``failures.ha.boot_read`` bytes/s on the restarted VM's datastore while it
boots (every VM, trace- or profile-driven). ``summary["storage_failures"]`` per datastore.
A VM instance that is not up (a run with lifetimes or failures) issues no I/O.
"""

from __future__ import annotations

import numpy as np

from typing import TypedDict

from densim.engine.hci import HciSummary
from densim.engine.stages import STAGES, BaseStage, add_saturation, step_sums


class DatastoreSummary(TypedDict):
    energy_kwh: float | None  # its drives and controllers (in the hosts' energy too); None: the device gives no power
    mean_iops: float
    peak_iops: float
    mean_latency_s: float
    peak_utilisation: float
    saturated_steps: int


class StorageSummary(TypedDict):
    """``summary["storage"]``."""

    model: str
    datastores: dict[str, DatastoreSummary]


class DatastoreFailureSummary(TypedDict):
    drive_failures: int
    controller_failures: int
    degraded_h: float  # steps with a drive down or rebuilding, or a controller down
    rebuilds: int  # finished
    rebuilds_unfinished: int
    rebuild_s_mean: float | None
    rebuild_s_max: float | None
    data_lost: bool
    down_h: float  # data lost, or every controller down
    latency_s_degraded_mean: float | None  # IOPS-weighted over the degraded steps (without a boot storm)
    latency_s_degraded_worst: float | None  # the worst step
    latency_s_outside_mean: float | None  # the quiet steps: not degraded, down or under a boot storm
    latency_s_outside_worst: float | None


class BootStormSummary(TypedDict):
    boot_read_bytes: float
    latency_s_boot_mean: float | None  # IOPS-weighted over the steps with boot reads
    latency_s_boot_worst: float | None
    latency_s_outside_mean: float | None  # the quiet steps, as in DatastoreFailureSummary


class StorageFailuresSummary(TypedDict):
    """``summary["storage_failures"]``."""

    rebuild_rate_basis: str
    data_loss_events: int
    vm_io_down_minutes: float
    datastores: dict[str, DatastoreFailureSummary]
    boot_storms: dict[str, BootStormSummary]


class StorageStage(BaseStage):
    summary_sections = {"storage": StorageSummary, "storage_failures": StorageFailuresSummary,
                        "hci": HciSummary}
    name = "storage"

    def __init__(self, ctx) -> None:
        from densim.models.storage.vmio import DatastoreModel

        st = ctx.scenario.storage
        self.settings = st
        self.models = [DatastoreModel.build(d.spec.name, d.device, d.spec.drives, d.spec.raid, d.controller, d.spec.controllers,
                                            st.block_size_bytes) for d in ctx.plant.datastores]
        self.ds_index = {d.name: i for i, d in enumerate(st.datastores)}

    def prepare(self, ctx) -> None:
        from scipy import sparse

        st = self.settings
        sc = ctx.scenario
        vms = ctx.vms
        H = ctx.hosts.n
        V = vms.n
        D = len(self.models)
        group_ds = []
        wl_iops = []
        wl_rf = []
        for g in sc.vms:
            name = g.datastore or st.default_datastore
            group_ds.append(self.ds_index.get(name, -1) if name else -1)
            wl = g.workload or {}
            wl_iops.append(float(wl.get("iops", 0.0) or 0.0))
            wl_rf.append(float(wl.get("read_fraction", st.read_fraction)))
        grp = np.asarray(vms.group, dtype=np.int64)
        ds = np.asarray(group_ds, dtype=np.int64)[grp] if V else np.zeros(0, np.int64)
        host = np.asarray(vms.host, dtype=np.int64)
        per_host = np.array([d.scope == "per-host" for d in st.datastores] or [False], dtype=bool)  # (only an HCI datastore: none)

        def slot_key(ds_of_vm, ok_vm):
            """One slot per shared datastore, one per (datastore, host) for a per-host one."""
            key = np.full(V, -1, dtype=np.int64)
            ph_ = ok_vm & per_host[np.maximum(ds_of_vm, 0)]
            key[ok_vm & ~ph_] = ds_of_vm[ok_vm & ~ph_] * (H + 1)
            key[ph_] = ds_of_vm[ph_] * (H + 1) + 1 + host[ph_]
            return key

        ok = (ds >= 0) & (host >= 0)
        slot = slot_key(ds, ok)
        # where each VM's swap lives (memory.swap_datastore); swap added with add_swap_io and no
        # swap_datastore goes to the VM's own datastore
        swap_ds, swap_ok = self._swap_datastores(ctx, ds, ok)
        swap_key = slot_key(swap_ds, swap_ok)
        used = np.unique(np.concatenate([slot[ok], swap_key[swap_ok]]))
        self.vm_slot = np.searchsorted(used, slot[ok])
        self.slot_ds = used // (H + 1)
        self.slot_host = used % (H + 1) - 1  # -1 for shared
        self.vm_ok = ok
        full_slot = np.full(V, -1, dtype=np.int64)
        full_slot[ok] = self.vm_slot
        self.full_slot = full_slot
        swap_slot = np.full(V, -1, dtype=np.int64)
        swap_slot[swap_ok] = np.searchsorted(used, swap_key[swap_ok])
        self.swap_slot = swap_slot  # per VM: the slot its host swap lives on (-1: none)
        S = used.size
        rows = np.nonzero(ok)[0]
        self.M = sparse.csr_matrix((np.ones(rows.size), (rows, self.vm_slot)), shape=(V, S))
        srows = np.nonzero(swap_ok)[0]
        self.M_swap = sparse.csr_matrix((np.ones(srows.size), (srows, swap_slot[swap_ok])), shape=(V, S))
        self._base = None
        names = [d.name for d in st.datastores]
        host_names = list(getattr(ctx.hosts, "names", []))
        self.slot_names = [names[self.slot_ds[k]] + (f"@{host_names[self.slot_host[k]]}" if self.slot_host[k] >= 0 else "")
                           for k in range(S)]
        self.wl_iops = np.asarray(wl_iops, dtype=np.float64)[grp] if V else np.zeros(0)
        self.wl_rf = np.asarray(wl_rf, dtype=np.float64)[grp] if V else np.zeros(0)
        self.host_onehot = sparse.csr_matrix(
            (np.ones(int((host >= 0).sum())), (np.nonzero(host >= 0)[0], host[host >= 0])), shape=(V, H))
        self.n_ds = D
        self.grid = ctx.grid
        self.ctx = ctx  # the window state of each chunk (chunk.window(ctx)): rows alive, hosts up
        self.hci = None
        if getattr(ctx.plant, "hci", None) is not None:  # storage.hci: VMs on the hyper-converged datastore
            from densim.engine.hci import HciRuntime

            self.hci = HciRuntime(ctx, self)
            self.reads_cpu_results = True  # its summary's CPU Ready during resyncs reads chunk.vm["cpu_ready_s"]
        self._power_setup(ctx, H)
        self._failures_setup(ctx, V)
        self.acc = {k: np.zeros(S) for k in ("iops_s", "lat_iops_s", "sat_steps", "steps")}
        self.peak_iops = np.zeros(S)
        self.peak_util = np.zeros(S)
        ctx.declare("io_iops", level="vm", agg="mean", unit="1/s", doc="I/Os per second the VM issues (incl. swap)")
        ctx.declare("io_latency_s", level="vm", agg="mean", unit="s", doc="mean I/O latency on the VM's datastore")
        ctx.declare("io_saturated", level="vm", agg="mean", unit="", doc="1 when the VM's datastore was saturated")
        ctx.declare("vm_io_iops", level="host", agg="mean", unit="1/s", doc="I/Os per second of the host's VMs")
        if self.faults:
            ctx.declare("io_down", level="vm", agg="mean", unit="", doc="1 when the VM's datastore was down (data lost or no controller)")
        if self.hci is not None:
            ctx.declare("hci_net_Bps", level="host", agg="mean", unit="B/s",
                        doc="HCI storage traffic on the host's storage adapter, each direction (VM I/O and resync)")
            ctx.declare("hci_resync_Bps", level="host", agg="mean", unit="B/s",
                        doc="HCI resync traffic on the host's storage adapter, each direction (k bytes per rebuilt byte)")
            ctx.declare("hci_resync_cpu_mhz", level="host", agg="mean", unit="MHz",
                        doc="host CPU the HCI resync's storage stack takes (before the CPU step: CPU Ready includes it)")

    def _failures_setup(self, ctx, V: int) -> None:
        """Up-times of the instances, boot reads of restarts, and the arrays with drive or controller failures."""
        from densim.engine.storage_faults import array_faults

        fr = getattr(ctx, "failures", None)
        self.boot = None
        if fr is not None and fr.boot_read_Bps > 0 and fr.boot_from_s is not None:
            b, u = np.asarray(fr.boot_from_s, float), np.asarray(fr.up_s, float)
            on = self.vm_ok if self.hci is None else (self.vm_ok | self.hci.vm_on)  # boot reads on the HCI datastore too
            idx = np.flatnonzero(np.isfinite(b) & np.isfinite(u) & (u > b) & on)
            self.boot = (idx, b[idx], u[idx], fr.boot_read_Bps / self.settings.block_size_bytes)
        self.faults = array_faults(ctx, self.slot_ds, self.slot_host, self.slot_names, self.models,
                                   [d.device for d in ctx.plant.datastores])
        S = self.slot_ds.size
        self.facc = {k: np.zeros(S) for k in ("deg_s", "down_s", "deg_iops", "deg_lat", "out_iops", "out_lat",
                                               "boot_bytes", "boot_iops", "boot_lat")}
        self.fworst = {k: np.full(S, np.nan) for k in ("deg", "out", "boot")}
        self.vm_down_s = 0.0
        self.has_failures = fr is not None

    def _power_setup(self, ctx, H: int) -> None:
        """Drive and controller power per slot (idle + (active - idle) x the drives' busy share, plus the
        controllers' power), handed to the hosts: a per-host datastore's to its host, a shared one's
        to the hosts of the VMs on it in proportion to their number (its energy counts once)."""
        idle, span, ctl, known = [], [], [], []
        for d in ctx.plant.datastores:
            dev = d.device
            has = dev.idle_power_w is not None and dev.active_power_w is not None
            known.append(has)  # a device without datasheet power: its drives add none, and its summary says so
            idle.append(float(dev.idle_power_w) if has else 0.0)
            span.append(float(dev.active_power_w) - float(dev.idle_power_w) if has else 0.0)
            ctl.append(float(d.controller.power_w) * d.spec.controllers if d.controller is not None else 0.0)
        self.p_idle, self.p_span, self.p_ctl = (np.asarray(x, dtype=np.float64) for x in (idle, span, ctl))
        self.p_known = np.asarray(known, dtype=bool)
        S = self.slot_ds.size
        counts = np.asarray((self.M + self.M_swap).T.dot(self.host_onehot).todense(), dtype=np.float64).reshape(S, H)
        tot = counts.sum(axis=1, keepdims=True)
        self.slot_to_host = np.divide(counts, tot, out=np.zeros_like(counts), where=tot > 0)
        self.energy_j = np.zeros(S)

    def _host_power(self, ctx, chunk, slot_w: np.ndarray) -> np.ndarray:
        """(steps, hosts) W of the slots' drives and controllers. A host that is down (failures) draws
        none: its local (per-host) drives are off with it, and a shared array's power goes to the
        hosts of its VMs that are up (to all of them when none is)."""
        P = self.slot_to_host
        fr = getattr(ctx, "failures", None)
        if fr is None:
            return slot_w @ P
        up = chunk.window(ctx).host_up  # (steps, hosts)
        local = self.slot_host >= 0
        out = (slot_w[:, local] @ P[local]) * up
        if (~local).any():
            Ps = P[~local]
            w = slot_w[:, ~local]
            denom = up @ Ps.T  # (steps, shared slots): the up share of each array's hosts
            some = denom > 1e-12
            out += ((w * some / np.where(some, denom, 1.0)) @ Ps) * up + (w * ~some) @ Ps
        return out

    def _swap_datastores(self, ctx, own_ds, own_ok):
        """Datastore index of each VM's swap (``memory.swap_datastore``) and which VMs have one."""
        mem = ctx.scenario.memory
        where = mem.swap_datastore if mem.model != "none" else None
        host_ok = np.asarray(ctx.vms.host) >= 0
        if where is None or where == "vm":  # the VM's own datastore
            return own_ds, own_ok
        d = self.ds_index[where]  # checked by the memory stage
        return np.full(own_ds.size, d, dtype=np.int64), host_ok.copy()

    def base_load(self, chunk):
        """``(total, read)`` IOPS (steps x slots) the VMs' own I/O puts on each slot (no swap); per chunk, memoised."""
        if self._base is not None and self._base[0] is chunk:
            return self._base[1], self._base[2]
        read, write = self._vm_io(chunk)
        read[:, ~self.vm_ok] = 0.0
        write[:, ~self.vm_ok] = 0.0
        write += read
        MT = self.M.T
        total = np.asarray(MT.dot(write.T).T, dtype=np.float64)
        rd = np.asarray(MT.dot(read.T).T, dtype=np.float64)
        self._base = (chunk, total, rd)
        return total, rd

    def swap_queues(self, chunk, t0: int, t1: int):
        """:class:`~densim.models.storage.vmio.SwapQueues` for steps ``t0..t1`` of ``chunk`` (chunk-relative)."""
        from densim.models.storage.vmio import SwapQueues

        total, rd = self.base_load(chunk)
        return SwapQueues(self.models, self.slot_ds, total[t0:t1], rd[t0:t1], self.settings.burstiness)

    def _vm_io(self, chunk):
        """(read, write) IOPS per VM, float32 (steps x VMs), fresh arrays the caller may modify.

        A profile's ``iops`` counts the share of each step the VM (instance) is up; a restarted
        instance adds its boot reads while it boots (placed to up, :class:`FailureRun`)."""
        from densim.workloads.tasks import alive_fraction

        ws = chunk.window(self.ctx)
        n = chunk.n_steps
        inv_bs = np.float32(1.0 / self.settings.block_size_bytes)
        V = self.wl_iops.size
        out = []
        for key, wl in (("disk_read_Bps", self.wl_iops * self.wl_rf), ("disk_write_Bps", self.wl_iops * (1.0 - self.wl_rf))):
            src = chunk.vm.get(key)
            arr = np.zeros((n, V), dtype=np.float32) if src is None else np.asarray(src, dtype=np.float32) * inv_bs
            if np.any(wl):
                if not ws.dynamic:
                    arr += wl.astype(np.float32)[None, :]
                else:  # VMs with lifetimes or failures: only while up (the window state's alive shares)
                    on = np.flatnonzero(wl)
                    arr[:, on] += wl[on].astype(np.float32) * ws.alive(on)
            out.append(arr)
        self._boot_chunk = None
        if self.boot is not None and self.boot[0].size:
            idx, b, u, iops = self.boot
            edges = ws.edges
            live = np.flatnonzero((b < edges[-1]) & (u > edges[0]))
            if live.size:
                add = np.float32(iops) * alive_fraction(b[live], u[live], edges)
                out[0][:, idx[live]] += add
                self._boot_chunk = (idx[live], add)
        return out[0], out[1]

    def before_cpu(self, ctx, chunk) -> None:
        cyc = self.settings.cycles_per_io
        if cyc > 0:
            read, write = self._vm_io(chunk)
            chunk.vm["cpu_demand_mhz"] = chunk.vm["cpu_demand_mhz"] + ((read + write) * (cyc / 1e6)).astype(
                chunk.vm["cpu_demand_mhz"].dtype)
        self._hci_out = None
        if self.hci is not None:
            # the HCI step needs no CPU result (VM I/O, swap, the timeline and the hardware decide the resync), so it
            # runs here and its storage-stack CPU is taken from the hosts before the CPU step (CPU Ready includes it)
            read, write = self._vm_io(chunk)
            out = self._hci_step(ctx, chunk, read, write)
            if out["cpu_mhz"].any():
                cap = chunk.host_capacity_mhz
                chunk.host_capacity_mhz = np.maximum(cap - out["cpu_mhz"].astype(cap.dtype), 0.0).astype(cap.dtype)
            self._hci_out = (chunk, out)

    def after_cpu(self, ctx, chunk) -> None:
        from densim.models.storage.vmio import datastore_operating_point

        read, write = self._vm_io(chunk)
        hci_out = None
        if self.hci is not None:
            assert self._hci_out is not None and self._hci_out[0] is chunk, "the HCI step runs in before_cpu of the chunk"
            hci_out = self._hci_out[1]
            self._hci_out = None
            self.hci.after_cpu(ctx, chunk, hci_out)
        if hci_out is not None:
            hci_io = read[:, self.hci.vm_on] + write[:, self.hci.vm_on]
        read[:, ~self.vm_ok] = 0.0
        write[:, ~self.vm_ok] = 0.0
        total = write
        total += read  # write is not used on its own below
        S = self.M.shape[1]
        swap_r = chunk.vm.get("swap_read_iops")
        swap_w = chunk.vm.get("swap_write_iops")
        swap_tot = None
        if swap_r is not None or swap_w is not None:
            swap_r = np.zeros_like(total) if swap_r is None else np.asarray(swap_r, dtype=np.float32)
            swap_w = np.zeros_like(total) if swap_w is None else np.asarray(swap_w, dtype=np.float32)
            swap_tot = swap_r + swap_w
        n = chunk.n_steps
        lat = np.zeros((n, S))
        sat = np.zeros((n, S), dtype=bool)
        util = np.zeros((n, S))
        slot_w = np.zeros((n, S))
        if S:
            slot_total = np.asarray(self.M.T.dot(total.T).T, dtype=np.float64)  # (steps, S)
            slot_read = np.asarray(self.M.T.dot(read.T).T, dtype=np.float64)
            del read
            if swap_tot is not None:  # swap lands on the datastore the VM's swap lives on
                slot_total += np.asarray(self.M_swap.T.dot(swap_tot.T).T)
                slot_read += np.asarray(self.M_swap.T.dot(swap_r.T).T)
            with np.errstate(invalid="ignore", divide="ignore"):
                rf = np.where(slot_total > 0, slot_read / np.maximum(slot_total, 1e-300), self.settings.read_fraction)
            for d, model in enumerate(self.models):  # loop over datastores, vectorised over steps and slots
                cols = np.nonzero(self.slot_ds == d)[0]
                if cols.size == 0:
                    continue
                # latency as datastore_latency_s, and the drives' busy share for their power
                ll, uu, ss, udev = datastore_operating_point(model, slot_total[:, cols], rf[:, cols], self.settings.burstiness)
                lat[:, cols] = ll
                util[:, cols] = uu
                sat[:, cols] = ss
                slot_w[:, cols] = (model.drives * (self.p_idle[d] + self.p_span[d] * np.clip(udev, 0.0, 1.0))
                                   + self.p_ctl[d])
            down = self._apply_faults(chunk, slot_total, rf, lat, util, sat) if self.faults else None
            if self.has_failures:
                self._failure_sums(chunk, slot_total, lat, down)
            served = slot_total if down is None else slot_total * ~down  # I/O to a down datastore is not served
            # per slot in time order (step_sums): a part of a split run holding one slot adds it as the whole run does
            self.acc["iops_s"] += step_sums(served)
            self.acc["lat_iops_s"] += step_sums(lat * served)
            self.acc["sat_steps"] += sat.sum(axis=0)
            self.acc["steps"] += n
            self.peak_iops = np.maximum(self.peak_iops, slot_total.max(axis=0))
            self.peak_util = np.maximum(self.peak_util, util.max(axis=0))
            add_saturation(ctx, "datastore", self.slot_names, util)  # busiest station's utilisation
            # drives and controllers draw power: into the hosts' power, energy and carbon
            self.energy_j += step_sums(slot_w) * chunk.step_s
            chunk.add_host_power(self._host_power(ctx, chunk, slot_w))
        vm_lat = np.zeros(total.shape, dtype=np.float32)
        vm_sat = np.zeros(total.shape, dtype=np.float32)
        okv = self.vm_ok
        if S:
            vm_lat[:, okv] = lat.astype(np.float32)[:, self.vm_slot]
            vm_sat[:, okv] = sat[:, self.vm_slot]
        if hci_out is not None:  # the VMs on the HCI datastore
            total[:, self.hci.vm_on] = hci_io
            vm_lat[:, self.hci.vm_on] = hci_out["lat"][:, self.hci.vm_on]
            chunk.host_out["hci_net_Bps"] = hci_out["net_host_Bps"].astype(np.float32)
            chunk.host_out["hci_resync_Bps"] = hci_out["resync_host_Bps"].astype(np.float32)
            chunk.host_out["hci_resync_cpu_mhz"] = hci_out["cpu_mhz"].astype(np.float32)
            chunk.add_host_power(hci_out["host_w"])
            add_saturation(ctx, "hci", [f"{self.hci.spec.name}@{h}" for h in self.hci.host_names], hci_out["util"])
        if swap_tot is not None:
            total += swap_tot  # a VM's I/O includes its swap traffic
        chunk.vm_out["io_iops"] = total
        chunk.vm_out["io_latency_s"] = vm_lat
        chunk.vm_out["io_saturated"] = vm_sat
        if self.faults:
            vm_down = np.zeros(total.shape, dtype=np.float32)
            if S:
                vm_down[:, okv] = down[:, self.vm_slot]
            self.vm_down_s += float(vm_down.sum(dtype=np.float64)) * chunk.step_s
            chunk.vm_out["io_down"] = vm_down
        chunk.host_out["vm_io_iops"] = np.asarray(self.host_onehot.T.dot(total.T).T, dtype=np.float32)

    def _hci_step(self, ctx, chunk, read, write):
        """The HCI datastore's step (:mod:`densim.engine.hci`) for its VMs; their swap lands on it when memory puts
        swap on the VM's own datastore."""
        on = self.hci.vm_on
        r = np.where(on[None, :], read, 0.0).astype(np.float32)
        w = np.where(on[None, :], write, 0.0).astype(np.float32)
        if self.hci.swap_here:
            for key, arr in (("swap_read_iops", r), ("swap_write_iops", w)):
                sw = chunk.vm.get(key)
                if sw is not None:
                    arr[:, on] += np.asarray(sw, dtype=np.float32)[:, on]
        return self.hci.step(ctx, chunk, r, w)

    def _apply_faults(self, chunk, slot_total, rf, lat, util, sat):
        """Degraded, rebuilding and down arrays (:mod:`densim.engine.storage_faults`): rewrites their cells of
        ``lat``/``util``/``sat`` in place; returns (steps, slots) bool: the datastore is down."""
        from densim.models.storage.vmio import degraded_latency_s

        edges = self.grid.edges_s(chunk.t0, chunk.t1)
        down = np.zeros(lat.shape, dtype=bool)
        self._degraded = np.zeros(lat.shape, dtype=bool)
        burst = self.settings.burstiness
        for f in self.faults:
            k, m = f.slot, f.model
            lam, r = slot_total[:, k], rf[:, k]
            redundant = f.parity > 0 and m.drives > 1
            u = degraded_latency_s(m, lam, r, 1, 0, None, burst)[3] if (redundant and f.ev_start.size) else np.zeros(lam.size)
            nbad, rb, nctl = f.step_states(edges, u)
            dn = (nbad < 0) | ((m.controllers > 0) & (nctl >= max(m.controllers, 1)))
            deg = ~dn & ((nbad > 0) | (nctl > 0) | (rb > 0))
            down[:, k] = dn
            self._degraded[:, k] = deg
            lat[dn, k] = 0.0
            util[dn, k] = 0.0
            sat[dn, k] = False
            if not deg.any():
                continue
            share = np.clip(1.0 - rb * f.rate0 * np.maximum(1.0 - u, 0.0) / f.seq_read, 0.05, 1.0)
            for nb, nc in {(int(a), int(b)) for a, b in zip(nbad[deg], nctl[deg])}:
                cells = np.flatnonzero(deg & (nbad == nb) & (nctl == nc))
                ll, uu, ss, _ = degraded_latency_s(m, lam[cells], r[cells], nb, nc, share[cells], burst)
                lat[cells, k] = ll
                util[cells, k] = uu
                sat[cells, k] = ss
        return down

    def _failure_sums(self, chunk, slot_total, lat, down) -> None:
        """Latency during degraded steps and boot storms against the other steps, per slot."""
        a, w = self.facc, self.fworst
        dt = chunk.step_s
        deg = self._degraded if self.faults else np.zeros(lat.shape, dtype=bool)
        dn = down if down is not None else np.zeros(lat.shape, dtype=bool)
        boot = np.zeros(lat.shape)
        if getattr(self, "_boot_chunk", None) is not None:
            idx, add = self._boot_chunk
            ok = self.full_slot[idx] >= 0
            np.add.at(boot.T, self.full_slot[idx][ok], add.T[ok])
        booting = (boot > 0) & ~dn
        deg = deg & ~booting
        quiet = ~deg & ~dn & ~booting  # no failure effect on the datastore in the step
        a["deg_s"] += (self._degraded.sum(axis=0) * dt) if self.faults else 0.0
        a["down_s"] += dn.sum(axis=0) * dt
        a["boot_bytes"] += step_sums(boot) * dt * self.settings.block_size_bytes
        for key, mask in (("deg", deg), ("out", quiet), ("boot", booting)):
            a[key + "_iops"] += step_sums(slot_total * mask)
            a[key + "_lat"] += step_sums(lat * slot_total * mask)
            if mask.any():
                m = np.where(mask, lat, -np.inf).max(axis=0)
                w[key] = np.fmax(w[key], np.where(np.isfinite(m), m, np.nan))

    def _failures_summary(self, ctx) -> dict:
        a, w = self.facc, self.fworst

        def ratio(x, y):
            return float(x / y) if y > 0 else None

        def fl(x):
            return None if np.isnan(x) else float(x)

        until = ctx.grid.start_s + ctx.grid.horizon_s
        ds = {}
        lost = 0
        for f in self.faults:
            k = f.slot
            dur, unfinished = f.rebuilds(until)
            data_lost = bool(f.lost_at < until)
            lost += int(data_lost)
            ds[f.name] = {
                "drive_failures": int(np.count_nonzero(f.ev_start < until)),
                "controller_failures": int(np.count_nonzero(f.ctl_start < until)),
                "degraded_h": float(a["deg_s"][k] / 3600.0),
                "rebuilds": int(dur.size),
                "rebuilds_unfinished": unfinished,
                "rebuild_s_mean": float(dur.mean()) if dur.size else None,
                "rebuild_s_max": float(dur.max()) if dur.size else None,
                "data_lost": data_lost,
                "down_h": float(a["down_s"][k] / 3600.0),
                "latency_s_degraded_mean": ratio(a["deg_lat"][k], a["deg_iops"][k]),
                "latency_s_degraded_worst": fl(w["deg"][k]),
                "latency_s_outside_mean": ratio(a["out_lat"][k], a["out_iops"][k]),
                "latency_s_outside_worst": fl(w["out"][k]),
            }
        boots = {}
        for k in np.flatnonzero(a["boot_bytes"] > 0):
            boots[self.slot_names[k]] = {
                "boot_read_bytes": float(a["boot_bytes"][k]),
                "latency_s_boot_mean": ratio(a["boot_lat"][k], a["boot_iops"][k]),
                "latency_s_boot_worst": fl(w["boot"][k]),
                "latency_s_outside_mean": ratio(a["out_lat"][k], a["out_iops"][k]),
            }
        rb = ctx.scenario.failures.rebuild
        basis = f"rate {rb.rate_Bps:g} B/s" if rb.rate_Bps is not None else f"{rb.share:g} x the drive's sequential write rate"
        return {"rebuild_rate_basis": basis, "data_loss_events": lost, "vm_io_down_minutes": self.vm_down_s / 60.0,
                "datastores": ds, "boot_storms": boots}

    def report_section(self, ctx, result) -> dict | None:
        """The HCI datastore in the run report: capacity, policies, each resync and VM latency over time."""
        return self.hci.report_section(ctx) if self.hci is not None else None

    def finish(self, ctx, summary) -> None:
        out = {}
        for k in range(self.slot_ds.size):
            label = self.slot_names[k]
            steps = max(self.acc["steps"][k], 1)
            iops_s = self.acc["iops_s"][k]
            out[label] = {
                "energy_kwh": float(self.energy_j[k] / 3.6e6) if self.p_known[self.slot_ds[k]] else None,
                "mean_iops": float(iops_s / steps),
                "peak_iops": float(self.peak_iops[k]),
                "mean_latency_s": float(self.acc["lat_iops_s"][k] / iops_s) if iops_s > 0 else 0.0,
                "peak_utilisation": float(self.peak_util[k]),
                "saturated_steps": int(self.acc["sat_steps"][k]),
            }
        summary.add("storage", {"model": "queueing", "datastores": out})
        if self.hci is not None:
            summary.add("hci", self.hci.summary(ctx))
        if self.has_failures:
            summary.add("storage_failures", self._failures_summary(ctx))


@STAGES.register("storage", description="per-VM disk I/O on datastores (open queueing per step)",
                 source="modelling guide §4; densim.models.storage.vmio",
                 after=("memory",))  # the memory stage's swap I/O must be on chunk.vm before the queues are solved
def storage_stage(ctx):
    if ctx.scenario.storage.model == "none":
        return None
    return StorageStage(ctx)
