"""The tile consolidation benchmark (modelling guide §3.5).

A tile is six VMs (web, infrastructure/NFS, Java application server, database, IMAP mail, idle)
driven by closed user populations with think times; the Java application load rises and falls over
the run. Tiles are added until any workload misses its QoS (a response-time bound met by a share of
requests in every measured interval). The result is the tile count, the score (sum of normalised
throughputs: each workload instance's throughput over its driven rate ``users/think``) and each
workload's QoS margin, written as one self-describing JSON document.

Per interval the host is solved as a fixed point: node (pool) utilisations -> CPU-ready stretch and
turbo clock -> per request class MVA (:mod:`densim.models.requests`) -> node demand.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from pydantic import BaseModel, ConfigDict
from densim._distributions import binom_pmf

import densim
from densim.errors import InputError, PartError
from densim.models.cpu_power import package_power_w, power_limited_frequency_mhz, turbo_frequency_mhz
from densim.models.devices import DeviceSpec, device_response_s
from densim.models.numa import costop_stretch, remote_fraction
from densim.models.requests import (
    PathCosts,
    RequestClass,
    VmRole,
    qos_margin,
    ready_stretch,
    response_quantile_s,
    solve_class,
    users_in_interval,
    visit_cycles,
)
from densim.models.virtualization import CorePower, ExitCosts, IoPath, PlatformSpec, StorageRef, TlbSpec  # noqa: F401
from densim.spec.tiles import BenchHost, RunSpec  # noqa: F401
from densim.placement import numa as placement
from densim.rng import make_rng
from densim.catalog.core import Catalog, CatalogError, builtin_catalog
from densim.models.hardware import CpuSpec, ServerSpec
from densim.plant import resolve_cpu
from densim.plant.core import shadow_paging

_CFG = ConfigDict(defer_build=True, allow_inf_nan=False, frozen=True, extra="forbid", populate_by_name=True)
SCHEMA_ID = "densim-bench-tiles/1"
GiB = 1024**3


class TileSpec(BaseModel):
    model_config = _CFG
    name: str
    version: int = 1
    vms: list[VmRole]
    classes: list[RequestClass]


def builtin_tile() -> TileSpec:
    from densim.catalog.profiles import expand_tile_visit

    text = (resources.files("densim") / "tools" / "tiles" / "tile.yaml").read_text(encoding="utf-8")
    doc = yaml.safe_load(text)
    for rc in doc.get("classes", []):  # a visit may name a catalog workload profile (``profile: oltp-database``)
        rc["visits"] = [expand_tile_visit(v) for v in rc.get("visits", [])]
    return TileSpec.model_validate(doc)


def load_host(path: str | Path) -> BenchHost:
    """Read and validate a HOST.yaml with the one loader, then resolve its server and platform;
    every problem names the file and the field path."""
    from densim.spec.loader import load_spec

    p = Path(path)
    host = load_spec(p, BenchHost, what="host file", imports=False, resolve_paths=False)
    try:
        Bench(host)
    except (CatalogError, KeyError) as exc:
        raise InputError(p, "server", str(exc).strip("'\"")) from None
    return host


@dataclass
class EvalResult:
    tiles: int
    fraction: float
    passed: bool
    reason: str
    score: float
    margins: dict[str, float]
    p_response_s: dict[str, float]
    throughput_per_s: dict[str, float]
    normalised: dict[str, float]
    utilisation: list[list[float]]
    frequency_mhz: list[float]
    package_power_w: float
    moves: int
    placement: list[int] = field(default_factory=list)


class Bench:
    """The tile benchmark on one host configuration."""

    def __init__(self, host: BenchHost, catalog: Catalog | None = None, tile: TileSpec | None = None) -> None:
        cat = catalog or builtin_catalog()
        self.host = host
        self.tile = tile or builtin_tile()
        self.server: ServerSpec = cat.get("servers", host.server, ServerSpec) if isinstance(host.server, str) else host.server
        self.cpu: CpuSpec = resolve_cpu(self.server.cpu, cat)
        pname = host.platform if isinstance(host.platform, str) else self.server.name
        self.platform: PlatformSpec = host.platform if isinstance(host.platform, PlatformSpec) else cat.get("virt_platforms", pname, PlatformSpec)
        v = host.virtualization
        self.v = v
        kvm = v.model == "kvm"
        exits = cat.get("virt_exit_costs", v.hypervisor.exit_costs or self.platform.exit_costs, ExitCosts)
        net_name = {"emulated": "emulated-e1000", "virtio": "virtio-net", "vhost": "vhost-net", "sriov": "sriov-vf"}[v.hypervisor.network]
        disk_name = {"emulated": "emulated-ide", "virtio": "virtio-blk"}[v.hypervisor.storage]
        self.costs = PathCosts(
            exits=exits,
            network=cat.get("virt_io_paths", net_name if kvm else "native", IoPath),
            storage=cat.get("virt_io_paths", disk_name if kvm else "native", IoPath),
            tlb=self.platform.tlb,
            numa=self.platform.numa,
            paging=v.hypervisor.paging if kvm else "native",
            host_hugepages=v.hypervisor.host_hugepages,
            guest_large_pages=v.hypervisor.guest_large_pages,
            shadow=shadow_paging(v.hypervisor.shadow, cat) if kvm and v.hypervisor.paging == "shadow" else None,
        )
        st = host.storage or self.platform.storage
        self.device = cat.get("devices", st.device, DeviceSpec)
        self.device_count = st.count
        self.nic_bps = (host.nic_gbps or self.platform.nic_gbps) * 1e9
        # processor
        self.sockets = self.server.cpu.sockets
        self.cores = self.cpu.cores
        self.threads = self.cpu.threads_per_core if v.power.smt else 1
        self.h = self.cpu.smt_gain if (v.power.smt and self.cpu.threads_per_core > 1) else 1.0
        self.logical_per_node = self.cores * self.threads
        self.memory_per_node = self.server.memory_bytes / self.sockets
        pw = self.platform.power
        k = np.arange(0, self.cores + 1, dtype=float)
        if v.power.turbo and self.cpu.turbo_mhz is not None:
            f_bins = turbo_frequency_mhz(k, self.cores, self.cpu.base_mhz, self.cpu.turbo_mhz, self.platform.all_core_turbo_mhz)
        else:
            f_bins = np.full_like(k, self.cpu.base_mhz)
        if self.cpu.tdp_w is None:
            raise PartError(f"CPU {self.cpu.name!r}: tdp is required by the bench power-limited clock model")
        f_pwr = power_limited_frequency_mhz(k, tdp_w=self.cpu.tdp_w, base_mhz=self.cpu.base_mhz, uncore_w=pw.uncore_w,
                                            core_dynamic_w_at_base=pw.core_dynamic_w_at_base, core_leakage_w=pw.core_leakage_w,
                                            cores=self.cores, gated_core_w=pw.gated_core_w, power_gating=v.power.power_gating)
        # the clock never drops below base for power (base is the TDP-rated clock)
        self.freq_by_busy_cores = np.minimum(f_bins, np.maximum(f_pwr, self.cpu.base_mhz))
        self.policy = v.numa.policy if kvm else "none"
        self.pools = 1 if self.policy == "none" else self.sockets
        self.pool_cores = self.cores * (self.sockets if self.pools == 1 else 1)
        self.roles = [r.name for r in self.tile.vms]
        self.role_index = {r: i for i, r in enumerate(self.roles)}
        self.role_vcpus = np.array([r.vcpus for r in self.tile.vms])
        self.role_mem = np.array([r.memory_bytes for r in self.tile.vms], dtype=float)
        self._cycles: dict[tuple[int, int, float, int], tuple[float, float]] = {}
        self.r_unbound = float(remote_fraction(1, bound=False, guest_numa_aware=v.numa.guest_numa_aware,
                                               aware_remote_fraction=self.platform.numa.aware_remote_fraction, host_nodes=self.sockets)) if kvm else 0.0

    # ---------------------------------------------------------------- helpers
    def cycles(self, c: int, j: int, remote: float, vms_on_host: int = 1) -> tuple[float, float]:
        """(vCPU, host) cycles of visit ``j`` of class ``c``; ``vms_on_host`` matters under shadow paging only."""
        if self.costs.paging != "shadow":
            vms_on_host = 1
        key = (c, j, remote, vms_on_host)
        if key not in self._cycles:
            visit = self.tile.classes[c].visits[j]
            self._cycles[key] = visit_cycles(visit, self.costs, remote, vcpus=int(self.role_vcpus[self.role_index[visit.vm]]),
                                             vms_on_host=vms_on_host)
        return self._cycles[key]

    def effective_mhz(self, u_core):
        """Work-weighted clock with each core busy with probability ``u_core`` (per socket)."""
        u = np.clip(np.atleast_1d(np.asarray(u_core, dtype=float)), 1e-6, 1.0)
        k = np.arange(0, self.cores + 1)
        pmf = binom_pmf(k[None, :], self.cores, u[:, None])
        return (pmf * k * self.freq_by_busy_cores).sum(axis=1) / np.maximum((pmf * k).sum(axis=1), 1e-12)

    def package_power_w(self, u_core) -> float:
        """Mean socket power with ``K ~ Binomial(cores, u)`` busy cores at the clock table ``f(K)``."""
        pw = self.platform.power
        k = np.arange(0, self.cores + 1, dtype=float)
        p_k = package_power_w(k, self.cores, self.freq_by_busy_cores, base_mhz=self.cpu.base_mhz, uncore_w=pw.uncore_w,
                              core_dynamic_w_at_base=pw.core_dynamic_w_at_base, core_leakage_w=pw.core_leakage_w,
                              gated_core_w=pw.gated_core_w, power_gating=self.v.power.power_gating)
        pmf = binom_pmf(k, self.cores, float(np.clip(u_core, 0.0, 1.0)))
        return float(np.sum(pmf * p_k))

    def vm_names(self, n_tiles: int) -> list[str]:
        return [f"tile{t + 1}-{r}" for t in range(n_tiles) for r in self.roles]

    def initial_placement(self, n_tiles: int) -> np.ndarray:
        n = n_tiles * len(self.roles)
        if self.policy == "none":
            return placement.place_none(n)
        if self.policy == "manual":
            pins = placement.place_manual(self.vm_names(n_tiles), self.v.numa.pinning, self.sockets)
            tile_rr = np.repeat(np.arange(n_tiles) % self.sockets, len(self.roles))
            return np.where(pins >= 0, pins, tile_rr)  # unpinned VMs: whole tiles round-robin over nodes
        vcpus = np.tile(self.role_vcpus, n_tiles)
        mem = np.tile(self.role_mem, n_tiles)
        return placement.place_auto_start(vcpus, mem, self.sockets, self.logical_per_node, self.memory_per_node)

    # ---------------------------------------------------------------- one run
    def evaluate(self, n_full: int, fraction: float = 0.0, stop_on_fail: bool = True) -> EvalResult:
        """Run the benchmark with ``n_full`` tiles plus a tile at ``fraction`` of its load."""
        run = self.host.run
        n_tiles = n_full + (1 if fraction > 0 else 0)
        nr = len(self.roles)
        scale = np.ones(n_tiles)
        if fraction > 0:
            scale[-1] = fraction
        mem_total = n_tiles * self.role_mem.sum() + run.hypervisor_memory_bytes
        classes = self.tile.classes
        empty = {rc.name: 0.0 for rc in classes}
        if mem_total > self.server.memory_bytes:
            return EvalResult(n_full, fraction, False, "memory", 0.0, {k: -1.0 for k in empty}, empty, empty, empty, [], [], 0.0, 0)
        rng = make_rng(run.seed)
        phase_k = rng.integers(0, 2, size=n_tiles)  # each tile's application load starts 0 or 1 interval late
        node = self.initial_placement(n_tiles)
        migrating = np.zeros(n_tiles * nr, dtype=bool)
        n_int = run.warmup_intervals + run.intervals
        pool_capacity_cores = self.pool_cores * self.h
        u = np.full(self.pools, 0.5)
        iops = net_bps = 0.0
        read_frac = 0.7
        worst = {rc.name: np.inf for rc in classes}
        worst_q = {rc.name: 0.0 for rc in classes}
        thr = {rc.name: 0.0 for rc in classes}
        norm = {rc.name: 0.0 for rc in classes}
        util_hist: list[list[float]] = []
        f_hist: list[float] = []
        power = 0.0
        moves = 0
        saturated = False
        for it in range(n_int):
            measured = it >= run.warmup_intervals
            pool_of_vm = np.where(node < 0, 0, node) if self.pools > 1 else np.zeros_like(node)
            remote_of_vm = np.where(node < 0, self.r_unbound, 0.0)
            remote_of_vm = np.where(migrating, max(0.5, self.r_unbound), remote_of_vm)
            groups = []  # (class, users, count, [(pool, vcpus, vcpu_cyc, host_cyc, visit)], instance index arrays, ref rate)
            for c, rc in enumerate(classes):
                vis_roles = np.array([self.role_index[vz.vm] for vz in rc.visits])
                vm_ids = np.arange(n_tiles)[:, None] * nr + vis_roles[None, :]  # (tiles, visits)
                users = np.maximum(1, np.rint(users_in_interval(rc, it - phase_k) * scale)).astype(int)
                full_users = users_in_interval(rc, it - phase_k)
                key = np.column_stack([users, pool_of_vm[vm_ids], (remote_of_vm[vm_ids] * 1000).astype(int)])
                uniq, inv, counts = np.unique(key, axis=0, return_inverse=True, return_counts=True)
                inv = inv.reshape(-1)
                for g in range(uniq.shape[0]):
                    members = np.flatnonzero(inv == g)
                    row = uniq[g]
                    nv = len(rc.visits)
                    pools = row[1 : 1 + nv]
                    remotes = row[1 + nv :] / 1000.0
                    vis = [(int(pools[j]), int(self.role_vcpus[vis_roles[j]]), *self.cycles(c, j, float(remotes[j]), n_tiles * nr), rc.visits[j]) for j in range(nv)]
                    ref = full_users[members] / rc.think_s
                    groups.append((c, int(row[0]), int(counts[g]), vis, members, vm_ids[members], ref))
            # migration work in this interval lands on the destination node
            mig = np.zeros(self.pools)
            if migrating.any():
                np.add.at(mig, pool_of_vm[migrating], np.tile(self.role_mem, n_tiles)[migrating] * self.v.numa.migrate_cycles_per_byte / run.interval_s)
            # Illinois (regula falsi) root of g(u) = demand(u)/capacity(u) - u on each node
            state = {"iops": iops, "net": net_bps, "rf": read_frac}

            def g(uu):
                un, so, io_new, rd, by = self._solve_at(uu, groups, mig, state["iops"], state["rf"], state["net"], pool_capacity_cores)
                state["iops"], state["net"] = io_new, by * 8.0
                state["rf"] = rd / io_new if io_new > 0 else 0.7
                return un - uu, so

            a = np.zeros(self.pools)
            b = np.full(self.pools, 0.999)
            ga, sols = g(a)
            gb, sols = g(b)
            u = b.copy()
            if np.all(gb >= 0):
                u = b  # saturated even at 99.9 %
            else:
                for _ in range(run.solver_steps):
                    u = np.where(gb != ga, (a * gb - b * ga) / (gb - ga), 0.5 * (a + b))
                    gu, sols = g(u)
                    if np.max(np.abs(gu)) < run.solver_tolerance:
                        break
                    side_a = np.sign(gu) == np.sign(ga)
                    a, ga, gb = np.where(side_a, u, a), np.where(side_a, gu, ga), np.where(side_a, gb / 2.0, gb)
                    b, gb, ga = np.where(side_a, b, u), np.where(side_a, gb, gu), np.where(side_a, ga, ga / 2.0)
            iops, net_bps, read_frac = state["iops"], state["net"], state["rf"]
            util_hist.append([float(x) for x in u])
            f_hist.append(float(np.mean(self.effective_mhz(np.minimum(u, 1.0)))))
            if np.any(u > 0.99):
                saturated = True
            # observed per-VM CPU use, for the balancer
            vm_load = np.zeros(n_tiles * nr)
            for (c, users, count, vis, members, vmids, ref), (x, r) in zip(groups, sols, strict=True):
                for j, (p, vc, cyc_v, cyc_h, vz) in enumerate(vis):
                    vm_load[vmids[:, j]] += x * (cyc_v + cyc_h)
                if measured:
                    name = classes[c].name
                    worst[name] = min(worst[name], float(qos_margin(r, classes[c].qos_bound_s, classes[c].qos_share)))
                    worst_q[name] = max(worst_q[name], float(response_quantile_s(r, classes[c].qos_share)))
                    thr[name] += count * x / run.intervals
                    norm[name] += float(np.sum(x / ref)) / run.intervals
            if measured and stop_on_fail and (saturated or min(worst.values()) < 0):
                break
            if measured:
                u_core = float(np.mean(np.minimum(u, 1.0)))
                power += self.sockets * self.package_power_w(u_core) / run.intervals
            migrating[:] = False
            if self.policy == "auto":
                every = max(1, int(round(self.v.numa.rebalance_interval_s / run.interval_s)))
                if (it + 1) % every == 0:
                    cap_node = self.cores * self.h * float(np.mean(self.effective_mhz(np.minimum(u, 1.0)))) * 1e6
                    node, moved = placement.rebalance(node, vm_load, np.tile(self.role_mem, n_tiles), self.sockets, cap_node,
                                                      self.memory_per_node, self.v.numa.imbalance_threshold)
                    migrating = moved
                    moves += int(moved.sum())
        margins = {k: float(v) for k, v in worst.items()}
        failed = [k for k, v in margins.items() if v < 0]
        reason = "saturated" if saturated else (f"QoS: {', '.join(failed)}" if failed else "")
        passed = not failed and not saturated
        return EvalResult(n_full, fraction, passed, reason, float(sum(norm.values())), margins, worst_q, thr, norm,
                          util_hist, f_hist, power, moves, [int(x) for x in node])

    def _solve_at(self, u, groups, mig, iops, read_frac, net_bps, pool_capacity_cores):
        """Per-class MVA with every node at utilisation ``u``; returns the implied utilisation."""
        run = self.host.run
        f = self.effective_mhz(np.minimum(u, 1.0))
        cap = pool_capacity_cores * f * 1e6
        stretch = ready_stretch(np.minimum(u, 0.999), pool_capacity_cores, run.burstiness)
        r_disk = float(device_response_s(self.device, iops / self.device_count, read_frac))
        if not np.isfinite(r_disk):
            r_disk = 1.0
        rho_net = min(net_bps / self.nic_bps, 0.98)
        per_byte_s = 8.0 / self.nic_bps / (1.0 - rho_net)
        demand = mig.copy()
        iops_new = reads = bytes_new = 0.0
        sols = []
        classes = self.tile.classes
        host_logical = self.logical_per_node * (self.sockets if self.pools == 1 else 1)
        for c, users, count, vis, members, vmids, ref in groups:
            d, srv, dl = [], [], []
            for p, vc, cyc_v, cyc_h, vz in vis:
                hz = f[p] * 1e6
                wide = costop_stretch(vc, host_logical, 0, 0.0) if vc > self.cores else 1.0
                d.append(cyc_v / hz * stretch[p] * wide), srv.append(vc), dl.append(False)
                if cyc_h > 0:
                    d.append(cyc_h / hz * stretch[p]), srv.append(1), dl.append(False)
                if vz.disk_ios > 0:
                    d.append(vz.disk_ios * r_disk), srv.append(1), dl.append(True)
                if vz.net_bytes > 0:
                    d.append(vz.net_bytes * per_byte_s), srv.append(1), dl.append(True)
            res = solve_class(d, srv, dl, users, classes[c].think_s)
            x = res.throughput_per_s
            for p, vc, cyc_v, cyc_h, vz in vis:
                demand[p] += count * x * (cyc_v + cyc_h)
                iops_new += count * x * vz.disk_ios
                reads += count * x * vz.disk_ios * vz.disk_read_fraction
                bytes_new += count * x * vz.net_bytes
            sols.append((x, res.response_s))
        return demand / cap, sols, iops_new, reads, bytes_new

    # ---------------------------------------------------------------- search
    def run(self) -> dict[str, Any]:
        """Add tiles until a workload misses QoS; then the largest passing share of one more tile."""
        cache: dict[tuple[int, float], EvalResult] = {}

        def ev(n: int, frac: float = 0.0) -> EvalResult:
            k = (n, round(frac, 6))
            if k not in cache:
                cache[k] = self.evaluate(n, frac)
            return cache[k]

        max_t = self.host.run.max_tiles
        n = min(max(1, self.estimate_tiles()), max_t)
        if ev(n).passed:
            while n < max_t and ev(n + 1).passed:
                n += 1
            best, fail = n, n + 1
        else:
            while n > 0 and not ev(n).passed:
                n -= 1
            best, fail = n, n + 1
        step = self.host.run.fraction_step
        n_steps = int(round(1.0 / step))
        lo_s, hi_s = 0, n_steps
        while hi_s - lo_s > 1:
            mid = (lo_s + hi_s) // 2
            if ev(best, mid * step).passed:
                lo_s = mid
            else:
                hi_s = mid
        frac = lo_s * step
        final = ev(best, frac) if frac > 0 else (ev(best) if best > 0 else None)
        failing = ev(fail) if fail <= max_t else None
        return self._document(best, frac, final, failing)

    def estimate_tiles(self) -> int:
        """Starting guess: 90 % of the host's all-core cycles over one tile's unloaded cycle demand."""
        per_tile = 0.0
        r = self.r_unbound if self.policy == "none" else 0.0
        for c, rc in enumerate(self.tile.classes):
            rate = rc.users / rc.think_s
            per_tile += rate * sum(sum(self.cycles(c, j, r)) for j in range(len(rc.visits)))
        cap = self.sockets * self.cores * self.h * float(self.freq_by_busy_cores[-1]) * 1e6
        return int(0.9 * cap / per_tile)

    def _document(self, tiles: int, frac: float, final: EvalResult | None, failing: EvalResult | None) -> dict[str, Any]:
        cls = self.tile.classes
        workloads = []
        for rc in cls:
            workloads.append({
                "name": rc.name,
                "qos_bound_s": rc.qos_bound_s,
                "qos_share": rc.qos_share,
                "p_response_s": final.p_response_s[rc.name] if final else None,
                "qos_margin": final.margins[rc.name] if final else None,
                "throughput_per_s": final.throughput_per_s[rc.name] if final else 0.0,
                "normalised_throughput": final.normalised[rc.name] if final else 0.0,
            })
        limiting = None
        if failing is not None:
            limiting = "memory" if failing.reason == "memory" else min(failing.margins, key=failing.margins.get)
        return {
            "schema": SCHEMA_ID,
            "densim_version": densim.__version__,
            "seed": self.host.run.seed,
            "host": {
                "name": self.host.name,
                "server": self.server.model_dump(mode="json", by_alias=True),
                "cpu": self.cpu.model_dump(mode="json", by_alias=True),
                "platform": self.platform.model_dump(mode="json", by_alias=True),
                "storage": {"device": self.device.name, "count": self.device_count},
                "nic_gbps": self.nic_bps / 1e9,
            },
            "configuration": {
                "virtualization": self.v.model_dump(mode="json", by_alias=True),
                "run": self.host.run.model_dump(mode="json", by_alias=True),
                "tile": self.tile.model_dump(mode="json", by_alias=True),
            },
            "result": {
                "tiles": tiles,
                "tiles_fractional": round(tiles + frac, 6),
                "vms": tiles * len(self.roles) + (len(self.roles) if frac > 0 else 0),
                "score": final.score if final else 0.0,
                "limiting_workload": limiting,
                "workloads": workloads,
                "node_utilisation": final.utilisation if final else [],
                "mean_clock_mhz": float(np.mean(final.frequency_mhz)) if final and final.frequency_mhz else None,
                "cpu_package_power_w": final.package_power_w if final else 0.0,
                "numa_moves": final.moves if final else 0,
            },
        }


def run_bench(host: BenchHost, catalog: Catalog | None = None) -> dict[str, Any]:
    """Run the tile benchmark and return the result document (validated against the schema when jsonschema is installed)."""
    doc = Bench(host, catalog).run()
    validate_document(doc)
    return doc


def schema() -> dict[str, Any]:
    import json

    return json.loads((resources.files("densim") / "tools" / "tiles" / "tiles.schema.json").read_text(encoding="utf-8"))


def validate_document(doc: dict[str, Any]) -> None:
    """Validate a result against the published schema (skipped when jsonschema is not installed)."""
    try:
        import jsonschema
    except ImportError:  # pragma: no cover
        return
    jsonschema.validate(doc, schema())
