"""Engine stage ``power_cap``: a power limit per host, met by lowering the clock to a P-state.

Active when a host group has ``power_cap`` (``cluster.hosts[].power_cap``, W). Before the CPU step it
takes each capped host's demand ``D`` (the VMs' claims, each at most its vCPUs x the core clock, as
the CPU model claims them) and the capacity ``C0`` the earlier stages left (turbo, storage
and fabric CPU), and picks the highest P-state whose power is within the cap
(:func:`densim.models.cpu_power.capped_scale`)::

    P(s) = P(0) + (P(min(u0 / s, 1)) - P(0)) s^3,   u0 = D / C0,   s = f / f_base on the grid
           power.min_clock, + power.pstate_step, ..., base clock

The host's capacity in that step is ``s C0``. After the CPU step the hosts' power is put on the
same footing: the CPU model computed ``P(u)`` at the capped capacity's utilisation ``u``; the stage
adds ``-(P(u) - P(0)) (1 - s^3)`` so the host draws ``P(0) + (P(u) - P(0)) s^3 <= cap`` (its dynamic
power at the lower clock). ``summary["power_cap"]`` reports per group the clock and power of a fully
busy host at its cap, how many host-steps ran capped, and the work the cap held back::

    shortfall = sum over steps of max(min(D, C0) - s C0, 0) x step     (MHz x s)
    slowdown  = shortfall / sum min(D, C0) x step

**Hosts with GPUs** (``cluster.hosts[].gpus``; the gpu stage runs first and reports what each GPU draws in
the step at its own limit, ``G``). The CPU is lowered first: its P-state is picked within ``cap - G``
(less the HCI drives). Only where even the lowest P-state does not fit, ``P_cpu(s_min) > cap - G``, are
the GPUs' power limits lowered, all to one limit ``L`` per host (``nvidia-smi -pl L`` on each GPU),
the busiest GPUs first (water-filling, :func:`densim.models.gpu_power.shared_limit_w`)::

    sum over the host's GPUs of min(P_j, L) = cap - P_cpu(s_min),    L >= the card's power_limit_min

A GPU held at ``L`` runs at clock scale ``sigma`` (:mod:`densim.models.gpu_power`: dynamic power ~ sigma^3)
and serves ``min(b, sigma)`` of its full-clock busy share ``b``. CPU first, because the CPU's P-states
cost the VMs' CPU work only where the host is busy, while a GPU held at its limit slows the work that
drew the power; a GPU host is usually bought for its GPUs. ``summary["power_cap"]`` then also reports
how many host-steps the cap lowered the GPUs, their mean limit there, the GPU work it held back
(``gpu_slowdown_pct`` = 100 x sum max(b - sigma, 0) / sum b over the capped hosts' GPU-steps, beyond what
their own limits cost) and the GPU energy it saved.

The cap is checked when the scenario is resolved (:func:`densim.plant.checks.power_cap_issues`, so
``densim validate`` refuses it too): a fully busy host at the lowest P-state must fit it
(``P(0) + (P(1) - P(0)) (f_min / f_base)^3 <= cap``), otherwise no clock could keep it within
the cap and the scenario is refused naming that floor. With GPUs the floor adds each GPU at its lowest
power limit (:func:`densim.plant.gpu.gpu_issues`).
"""

from __future__ import annotations

from typing import TypedDict

import numpy as np

from densim.engine.stages import STAGES, BaseStage, step_sums
from densim.errors import InputError


class _PowerCapGpuKeys(TypedDict, total=False):
    """Capped host groups with GPUs (optional keys in a total=False base)."""

    full_load_gpu_limit_w: dict[str, float]  # host group -> each GPU's limit with CPU and GPUs fully busy
    gpu_host_steps_limited: int  # host-steps where the CPU's lowest P-state was not enough
    mean_gpu_limit_w_when_limited: float | None  # the GPUs' limit there, mean
    gpu_slowdown_pct: float  # 100 x GPU busy time (full clock) the lower limits did not serve / asked
    gpu_energy_saved_kwh: float  # GPU energy the lower limits held back


class PowerCapSummary(_PowerCapGpuKeys):
    """``summary["power_cap"]``."""

    caps_w: dict[str, float]  # host group -> cap (W per host)
    min_clock_mhz: float
    pstate_step_mhz: float
    full_load_clock_mhz: dict[str, float]  # host group -> clock of a fully busy host at its cap (the P-state)
    full_load_power_w: dict[str, float]  # host group -> its power there (<= the cap)
    uncapped_peak_power_w: dict[str, float]  # host group -> the power model's P(1) at the base clock
    host_steps: int  # steps x capped hosts
    host_steps_capped: int  # of them, run below the base clock
    share_capped: float
    mean_clock_mhz_when_capped: float | None
    demand_mhz_s: float  # sum min(D, C0) x step over capped hosts: what they would deliver uncapped (at most)
    shortfall_mhz_s: float  # of it, above the capped capacity s C0
    delivered_mhz_s: float  # what the capped hosts delivered (the CPU model, capped)
    slowdown_pct: float  # 100 x shortfall / demand
    energy_saved_kwh: float  # sum over capped steps of P(u0) - capped power, x step


class PowerCapStage(BaseStage):
    name = "power_cap"
    reads_host_results = True  # the CPU model's utilisation and delivered MHz per host and step
    accepts_factored_demand = True  # reads the demand through chunk.demand()
    summary_sections = {"power_cap": PowerCapSummary}
    # its float figures are sums over the steps per capped host (in the order of ``hc``), added over the hosts in
    # finish: a run split by host partitions puts its parts' per-host arrays side by side, so its totals are the one
    # process's to the bit (densim.engine.partition); its counts it adds up
    partition_host_sums = ("clock_h", "dem_h", "short_h", "deliv_h", "saved_h", "g_lim_h", "g_busy_h", "g_lost_h",
                           "g_saved_h")
    partition_sums = ("n_host_steps", "n_capped", "g_steps")

    def __init__(self, ctx) -> None:
        from densim.models.cpu_power import full_load_capped_scale, pstate_scales
        from densim.models.power import as_table_w
        from densim.plant.checks import power_cap_issues

        sc, hosts = ctx.scenario, ctx.hosts
        ps = sc.power
        issues = power_cap_issues(sc, ctx.plant.host_groups)  # made by resolve; again for a context built otherwise
        if issues:
            raise InputError(sc.name, *issues[0])
        self.settings = ps
        self.caps: dict[str, float] = {}
        self.full_clock: dict[str, float] = {}
        self.full_power: dict[str, float] = {}
        self.peak: dict[str, float] = {}
        self.full_gpu_limit: dict[str, float] = {}
        cap_h = np.full(hosts.n, np.nan)
        grids = {}
        # an HCI datastore's drives sit in the capped host and draw from its cap: the CPU gets the cap less their
        # active power (budgeted at full, as their load is known only after the CPU step)
        hci = getattr(ctx.plant, "hci", None)
        dev = hci.device if hci is not None else None
        self.drives_w = (hci.spec.disks_per_host * float(dev.active_power_w)
                         if dev is not None and dev.active_power_w is not None else 0.0)
        for gi, (g, hg) in enumerate(zip(sc.cluster.hosts, ctx.plant.host_groups)):
            if g.power_cap_w is None:
                continue
            base = float(hg.cpu.base_mhz)
            scales = pstate_scales(base, ps.min_mhz, ps.pstate_step_mhz)
            t = as_table_w(hg.server.power)
            p0, p1 = float(t[0]), float(t[-1])
            cap = float(g.power_cap_w) - self.drives_w
            n_gpu = hg.gpu_count if hg.gpu is not None else 0
            if n_gpu:  # CPU first, within what the GPUs leave at their own limits; then the GPUs' limit
                own = min(float(hg.gpu.max_power_w), float(g.gpus.power_limit_w or np.inf))
                low = min(float(hg.gpu.power_limit_min_w or own), own)
                full = full_load_capped_scale(p0, p1, cap - n_gpu * own, scales)
                if full is None and p0 + (p1 - p0) * float(scales[0]) ** 3 + n_gpu * low <= cap * (1 + 1e-12):
                    full = float(scales[0])
                if full is not None:
                    room = (cap - (p0 + (p1 - p0) * full**3)) / n_gpu
                    self.full_gpu_limit[hg.label] = float(min(max(room, low), own))
            else:
                full = full_load_capped_scale(p0, p1, cap, scales)
            if full is None:
                raise InputError(sc.name, f"cluster.hosts[{gi}].power_cap",
                                 f"{g.power_cap_w:g} W less the HCI drives' {self.drives_w:g} W leaves {cap:g} W: a fully busy "
                                 f"host at the lowest P-state draws {p0 + (p1 - p0) * float(scales[0]) ** 3:.1f} W")
            self.caps[hg.label] = float(g.power_cap_w)
            self.full_clock[hg.label] = float(full * base)
            self.full_power[hg.label] = float(p0 + (p1 - p0) * full**3)
            self.peak[hg.label] = p1
            sel = hosts.group == gi
            cap_h[sel] = cap
            grids[gi] = scales
        self.hc = np.flatnonzero(np.isfinite(cap_h))
        K = max(s.size for s in grids.values())
        # per capped host: its group's P-state scales, padded at the front with the lowest (ascending)
        self.scales = np.array([np.pad(grids[int(g)], (K - grids[int(g)].size, 0), mode="edge") for g in hosts.group[self.hc]],
                               dtype=np.float64).reshape(self.hc.size, K)
        self.cap_w = cap_h[self.hc]
        self.base_mhz = hosts.core_mhz[self.hc].astype(np.float64)
        h = self.hc
        self._pw = (hosts.power_kind[h], hosts.power_idle_w[h], hosts.power_peak_w[h], hosts.power_table_w[h], hosts.power_exponent[h])
        self.p0 = self.power_of_util(np.zeros((1, h.size)))[0]
        self.n_host_steps = self.n_capped = self.g_steps = 0
        # per capped host (index into hc), over the run: the GPUs' lowered limit summed over the host-steps it was
        # lowered (W), their busy share at full clock, of it not served, the GPU energy held back (J)
        self.g_lim_h, self.g_busy_h, self.g_lost_h, self.g_saved_h = (np.zeros(h.size) for _ in range(4))
        self.has_gpu = bool(self.full_gpu_limit) or any(
            ctx.plant.host_groups[int(gi)].gpu is not None for gi in np.unique(hosts.group[self.hc]))
        self.gpu = None
        # per capped host, over the run: clock (MHz) summed over its capped steps, demand within capacity, shortfall
        # and delivered (MHz x s), energy the cap saved (J)
        self.clock_h, self.dem_h, self.short_h, self.deliv_h, self.saved_h = (np.zeros(h.size) for _ in range(5))
        self._s = self._u0 = None

    def power_of_util(self, u: np.ndarray) -> np.ndarray:
        """The capped hosts' power models (W) at utilisation ``u`` (steps, capped hosts) of their nominal clock."""
        from densim.models.power import host_power_w

        return host_power_w(np.array(u, dtype=np.float64), *self._pw)

    def prepare(self, ctx) -> None:
        if self.has_gpu:
            self.gpu = ctx.stage("gpu")
            G = self.gpu.G
            self.gpu_hosts = np.flatnonzero(self.gpu.n_gpu[self.hc] > 0)  # capped hosts (index into hc) with GPUs
            self.gpu_low = self.gpu.limit_min[self.hc[self.gpu_hosts] * G]  # their cards' lowest limit
        ctx.declare("cap_clock_mhz", level="host", agg="mean", unit="MHz",
                    doc="clock the power cap leaves the host (its base clock when uncapped or within the cap)")

    def _host_demand(self, ctx, chunk) -> np.ndarray:
        """(steps, H) MHz the VMs on each host claim: each at most vCPUs x core clock."""
        vms, hosts = ctx.vms, ctx.hosts
        H = hosts.n
        placed = vms.host >= 0
        out = np.zeros((chunk.n_steps, H), dtype=np.float64)
        if not placed.any():
            return out
        idx = np.flatnonzero(placed)
        hv = vms.host[idx]
        order = np.argsort(hv, kind="stable")
        idx, hv = idx[order], hv[order]
        # as the CPU kernel claims (the source's window already holds a VM's demand only while it is alive)
        claim = np.minimum(chunk.demand()[:, idx], (vms.vcpus[idx] * hosts.core_mhz[hv])[None, :])
        starts = np.flatnonzero(np.r_[True, hv[1:] != hv[:-1]])
        out[:, hv[starts]] = np.add.reduceat(claim, starts, axis=1, dtype=np.float64)
        return out

    def before_cpu(self, ctx, chunk) -> None:
        from densim.models.cpu_power import capped_scale

        cap = chunk.host_capacity_mhz
        hc = self.hc
        d = self._host_demand(ctx, chunk)[:, hc]
        c0 = np.asarray(cap[:, hc], dtype=np.float64)
        u0 = np.clip(np.divide(d, c0, out=np.zeros_like(d), where=c0 > 0), 0.0, 1.0)
        cpu_cap = self.cap_w if self.gpu is None else self.cap_w[None, :] - self.gpu.host_power_w()[:, hc]
        s = capped_scale(u0, cpu_cap, self.scales, self.power_of_util, self.p0)
        if self.gpu is not None and self.gpu_hosts.size:
            self._limit_gpus(chunk, u0, s, cpu_cap)
        new = np.array(cap, copy=True)
        new[:, hc] = (c0 * s).astype(cap.dtype)
        chunk.host_capacity_mhz = new
        self._s, self._u0 = s, u0
        dt = chunk.step_s
        within = np.minimum(d, c0)
        capped = s < 1.0 - 1e-12
        self.n_host_steps += int(s.size)
        self.n_capped += int(capped.sum())
        self.clock_h += step_sums(np.where(capped, s * self.base_mhz[None, :], 0.0))
        self.dem_h += step_sums(within) * dt
        self.short_h += step_sums(np.maximum(within - s * c0, 0.0)) * dt

    def _limit_gpus(self, chunk, u0, s, cpu_cap) -> None:
        """Where the CPU's lowest P-state leaves the host above its cap, one lower power limit for its GPUs."""
        from densim.models.cpu_power import scaled_power_w
        from densim.models.gpu_power import shared_limit_w

        j = self.gpu_hosts
        p_cpu = scaled_power_w(s, u0, self.power_of_util, self.p0)[:, j]
        over = p_cpu > cpu_cap[:, j] * (1 + 1e-12)
        gh = self.hc[j]
        if over.any():
            budget = self.cap_w[j][None, :] - p_cpu
            L = np.full(over.shape, np.inf)
            L[over] = shared_limit_w(self.gpu.slot_power_w(gh)[over], budget[over])
            self.gpu.lower_limits(chunk, gh, L)
            self.g_steps += int(over.sum())
            self.g_lim_h[j] += step_sums(np.where(over, np.maximum(L, self.gpu_low[None, :]), 0.0))
        busy, lost, held = self.gpu.cap_cost(gh)  # per host of gh
        self.g_busy_h[j] += busy
        self.g_lost_h[j] += lost
        self.g_saved_h[j] += held * chunk.step_s

    def after_cpu(self, ctx, chunk) -> None:
        hc, s = self.hc, self._s
        H = ctx.hosts.n
        pu = self.power_of_util(chunk.host["utilisation"][:, hc])
        s3 = s**3
        dyn = pu - self.p0[None, :]
        corr = np.zeros((chunk.n_steps, H), dtype=np.float64)
        corr[:, hc] = -dyn * (1.0 - s3)  # the dynamic power at the lower clock: P(0) + (P(u) - P(0)) s^3
        chunk.add_host_power(corr)
        capped = s < 1.0 - 1e-12
        saved = self.power_of_util(self._u0) - (self.p0[None, :] + dyn * s3)
        self.saved_h += step_sums(np.where(capped, saved, 0.0)) * chunk.step_s
        self.deliv_h += step_sums(chunk.host["cpu_delivered_mhz"][:, hc]) * chunk.step_s
        clock = np.broadcast_to(ctx.hosts.core_mhz.astype(np.float32), (chunk.n_steps, H)).copy()
        clock[:, hc] = (s * self.base_mhz[None, :]).astype(np.float32)
        chunk.host_out["cap_clock_mhz"] = clock

    def finish(self, ctx, summary) -> None:
        ps = self.settings
        # the per-host sums added over the capped hosts, in hc's order (a split run's parts side by side)
        clock_sum, dem, short, deliv, saved_j = (float(a.sum()) for a in (self.clock_h, self.dem_h, self.short_h,
                                                                           self.deliv_h, self.saved_h))
        g_lim_sum, g_busy, g_lost, g_saved_j = (float(a.sum()) for a in (self.g_lim_h, self.g_busy_h, self.g_lost_h,
                                                                         self.g_saved_h))
        summary.add("power_cap", {
            "caps_w": self.caps,
            "min_clock_mhz": float(ps.min_mhz),
            "pstate_step_mhz": float(ps.pstate_step_mhz),
            "full_load_clock_mhz": self.full_clock,
            "full_load_power_w": self.full_power,
            "uncapped_peak_power_w": self.peak,
            "host_steps": int(self.n_host_steps),
            "host_steps_capped": int(self.n_capped),
            "share_capped": self.n_capped / self.n_host_steps if self.n_host_steps else 0.0,
            "mean_clock_mhz_when_capped": clock_sum / self.n_capped if self.n_capped else None,
            "demand_mhz_s": dem,
            "shortfall_mhz_s": short,
            "delivered_mhz_s": deliv,
            "slowdown_pct": 100.0 * short / dem if dem > 0 else 0.0,
            "energy_saved_kwh": saved_j / 3.6e6,
            **({"full_load_gpu_limit_w": self.full_gpu_limit,
                "gpu_host_steps_limited": int(self.g_steps),
                "mean_gpu_limit_w_when_limited": g_lim_sum / self.g_steps if self.g_steps else None,
                "gpu_slowdown_pct": 100.0 * g_lost / g_busy if g_busy > 0 else 0.0,
                "gpu_energy_saved_kwh": g_saved_j / 3.6e6} if self.has_gpu else {}),
        })


@STAGES.register("power_cap", description="a power limit per host met by the highest P-state within it",
                 source="densim.models.cpu_power (P_dyn ~ f V^2 ~ f^3); docs/background/power.md",
                 # caps the capacity every other stage left (turbo, storage and fabric CPU) at the demand they
                 # added (memory faults, virtualization overheads); carbon reads the capped power
                 # with GPUs: the gpu stage's draw comes first, the cap lowers the CPU clock, then the GPUs' limits
                 after=("fabric", "gpu", "memory", "storage", "virtualization"), before=("carbon",))
def power_cap_stage(ctx):
    # a power section without any cap is refused by densim.plant.checks.power_cap_issues
    return PowerCapStage(ctx) if any(g.power_cap_w is not None for g in ctx.scenario.cluster.hosts) else None
