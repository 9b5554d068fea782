"""Engine stage ``carbon``: operational and embodied carbon of the run, per VM-year.

Active when the scenario has a ``carbon`` section (:class:`densim.models.carbon.CarbonInputs`).
``after_cpu`` adds each step's fleet IT power (the CPU model's host power, the same figure as
``totals.energy_j``) x step x grid intensity of that step (a constant, or the step-hold value of the
grid series at the step's start); ``finish`` writes ``summary["carbon"]``::

    operational_kg = sum_t (sum_hosts P_h,t) x dt / 3.6e6 x PUE x I_t / 1000
    embodied_kg    = sum_groups hosts_g x kgCO2e_g / lifetime_years x horizon / 1 year
    per VM-year    = kg / VM-years,  VM-years = sum over placed VMs of the time each ran within the grid
    market_kg      = IT kWh x PUE x carbon.market_gco2_per_kwh / 1000   (Scope 2 market-based)

``operational_kg`` is Scope 2 location-based (the grid's average intensity), ``market_kg`` Scope 2
market-based (the electricity contract's factor), ``embodied_kg`` Scope 3; the summary gives each
per VM-year under its scope's name.

Every host of the plant carries embodied carbon (it was built whether or not it ran VMs). Without
``embodied`` only operational carbon is written (embodied figures null). PUE defaults to 1.0 (IT
energy only). The stage reads only the per-host power of each step (``reads_host_results``) and
never the VMs' demand, so the engine keeps no per-VM arrays for it.
"""

from __future__ import annotations

from typing import Any, TypedDict

import numpy as np

from densim.engine.stages import STAGES, BaseStage, step_sums


class CarbonSummary(TypedDict):
    """``summary["carbon"]``."""

    grid: str  # "constant" or the series file
    grid_gco2_per_kwh_mean: float  # energy-weighted mean intensity over the run
    pue: float
    it_energy_kwh: float
    facility_energy_kwh: float
    operational_kg: float
    embodied_kg: float | None
    embodied_per_server: list[dict[str, Any]] | None  # per host group: hosts, kgCO2e per server, source
    lifetime_years: float | None
    vm_years: float
    operational_kg_per_vm_year: float | None
    embodied_kg_per_vm_year: float | None
    total_kg_per_vm_year: float | None
    # the GHG Protocol's split: Scope 2 location-based (= operational_kg, the grid average) and market-based
    # (the contract factor carbon.market_gco2_per_kwh x facility energy; null without it), Scope 3 embodied
    scope2_location_kg: float
    scope2_market_kg: float | None
    market_gco2_per_kwh: float | None
    scope2_location_kg_per_vm_year: float | None
    scope2_market_kg_per_vm_year: float | None
    scope3_embodied_kg_per_vm_year: float | None
    total_market_kg_per_vm_year: float | None  # market-based Scope 2 + Scope 3 embodied


class CarbonStage(BaseStage):
    name = "carbon"
    reads_host_results = True  # each step's host power
    uses_vm_demand = False  # the run keeps its demand factored where the source allows
    accepts_active_rows = True  # per-host power only: a chunk of the alive VM rows changes nothing for it
    summary_sections = {"carbon": CarbonSummary}
    # its figures are sums over steps per host, added over the hosts at the end: a run split by host partitions
    # puts its parts' per-host arrays side by side (densim.engine.partition), so its totals are the one process's
    partition_host_sums = ("it_j_h", "gj_h")

    def __init__(self, ctx) -> None:
        from densim.errors import InputError
        from densim.models.carbon import embodied_kg_per_server, read_grid_series

        sc = ctx.scenario
        cb = sc.carbon
        self.cb = cb
        self.pue = cb.pue if cb.pue is not None else 1.0
        self.series = read_grid_series(cb.grid_series, "carbon.grid_series") if cb.grid_series is not None else None
        self.embodied: list[dict[str, Any]] | None = None
        if cb.embodied:
            if cb.lifetime_years is None:
                raise InputError(sc.name, "carbon.lifetime_years", "required with carbon.embodied (years a server's "
                                 "embodied carbon is spread over)")
            labels = list(ctx.hosts.server_names)
            unknown = sorted(set(cb.embodied) - set(labels))
            if unknown:
                raise InputError(sc.name, f"carbon.embodied.{unknown[0]}", "no host group of that name; host groups: "
                                 + ", ".join(labels))
            missing = [lb for lb in labels if lb not in cb.embodied]
            if missing:
                raise InputError(sc.name, "carbon.embodied", f"no embodied carbon for host group {missing[0]!r}: give "
                                 "kgCO2e per server or a catalog name (server_embodied_carbon) for every host group")
            counts = np.bincount(ctx.hosts.group, minlength=len(labels))
            self.embodied = []
            for gi, lb in enumerate(labels):
                kg, src = embodied_kg_per_server(cb.embodied[lb], ctx.plant.catalog, f"carbon.embodied.{lb}")
                self.embodied.append({"host_group": lb, "hosts": int(counts[gi]), "kgco2e_per_server": kg, "source": src})
        H = ctx.hosts.n
        self.it_j_h = np.zeros(H)  # per host: IT joules over the run
        self.gj_h = np.zeros(H)  # per host: sum of J x g/kWh (for the energy-weighted mean and the operational figure)

    def after_cpu(self, ctx, chunk) -> None:
        from densim.models.carbon import intensity_at

        joules = np.asarray(chunk.host["power_w"], dtype=np.float64) * chunk.step_s  # (steps, hosts)
        if self.series is None:
            g = float(self.cb.grid_gco2_per_kwh)
        else:
            try:
                g = intensity_at(*self.series, ctx.grid.edges_s(chunk.t0, chunk.t1)[:-1])[:, None]
            except ValueError as exc:
                from densim.errors import InputError

                raise InputError(self.cb.grid_series.file, "", str(exc)) from None
        # each host over the steps in time order, whatever the other hosts (a part of a split run may hold one host:
        # joules.sum(axis=0) adds a single column pairwise, several columns step by step)
        self.it_j_h += step_sums(joules)
        self.gj_h += step_sums(joules * g)

    @property
    def it_j(self) -> float:
        """IT joules of the whole fleet over the run."""
        return float(self.it_j_h.sum())

    @property
    def gj(self) -> float:
        """Sum of J x g/kWh over hosts and steps."""
        return float(self.gj_h.sum())

    def _vm_years(self, ctx) -> float:
        from densim.models.carbon import SECONDS_PER_YEAR

        g = ctx.grid
        end = g.start_s + g.horizon_s
        sch = ctx.schedule
        if sch is None:
            return float(np.count_nonzero(ctx.vms.host >= 0)) * g.horizon_s / SECONDS_PER_YEAR
        s = np.asarray(sch.start_s, dtype=np.float64)
        e = np.where(np.isfinite(sch.end_s), sch.end_s, end)
        ran = np.isfinite(s)
        dur = np.clip(np.minimum(e[ran], end) - np.maximum(s[ran], g.start_s), 0.0, None)
        return float(dur.sum()) / SECONDS_PER_YEAR

    def finish(self, ctx, summary) -> None:
        from densim.models.carbon import SECONDS_PER_YEAR

        it_j, gj = self.it_j, self.gj
        it_kwh = it_j / 3.6e6
        op = gj / 3.6e6 * self.pue / 1000.0
        emb = None
        if self.embodied is not None:
            years = ctx.grid.horizon_s / SECONDS_PER_YEAR
            emb = sum(e["hosts"] * e["kgco2e_per_server"] for e in self.embodied) / self.cb.lifetime_years * years
        vmy = self._vm_years(ctx)
        f_m = self.cb.market_gco2_per_kwh
        market = it_kwh * self.pue * f_m / 1000.0 if f_m is not None else None  # Scope 2 market-based

        def per(x):
            return x / vmy if (x is not None and vmy > 0) else None

        summary.add("carbon", {
            "grid": "constant" if self.series is None else str(self.cb.grid_series.file),
            "grid_gco2_per_kwh_mean": gj / it_j if it_j > 0 else float(
                self.cb.grid_gco2_per_kwh if self.series is None else self.series[1].mean()),
            "pue": self.pue,
            "it_energy_kwh": it_kwh,
            "facility_energy_kwh": it_kwh * self.pue,
            "operational_kg": op,
            "embodied_kg": emb,
            "embodied_per_server": self.embodied,
            "lifetime_years": self.cb.lifetime_years,
            "vm_years": vmy,
            "operational_kg_per_vm_year": per(op),
            "embodied_kg_per_vm_year": per(emb),
            "total_kg_per_vm_year": per(op + (emb or 0.0)),
            "scope2_location_kg": op,
            "scope2_market_kg": market,
            "market_gco2_per_kwh": self.cb.market_gco2_per_kwh,
            "scope2_location_kg_per_vm_year": per(op),
            "scope2_market_kg_per_vm_year": per(market),
            "scope3_embodied_kg_per_vm_year": per(emb),
            "total_market_kg_per_vm_year": per(market + (emb or 0.0)) if market is not None else None,
        })


@STAGES.register("carbon", description="operational (energy x grid intensity) and embodied carbon per VM-year",
                 source="densim.models.carbon; docs/background/licensing-carbon.md",
                 # reads the host power the CPU model computed after every stage that changes demand or capacity
                 after=("fabric", "memory", "storage", "virtualization"))
def carbon_stage(ctx):
    return CarbonStage(ctx) if getattr(ctx.scenario, "carbon", None) is not None else None
