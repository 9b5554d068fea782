"""Carbon per VM-year: operational (energy x grid intensity) and embodied (per server, amortised).

Operational, over steps of length dt with fleet IT power P_t (W) and grid intensity I_t (gCO2e/kWh)::

    E_t   = P_t x dt / 3.6e6                         kWh of IT energy in step t (the integral of P dt)
    C_op  = sum_t E_t x PUE x I_t / 1000             kgCO2e; I_t constant or a step-hold time series

Embodied, per server, from the vendor's product carbon footprint (manufacturing, transport, end of
life; catalog section ``server_embodied_carbon``) amortised linearly over the server's lifetime L::

    C_emb = n_servers x kgCO2e_server / L x years covered

Per VM-year both are divided by the VM-years served (VMs x years). As the GHG Protocol's Scope 2
Guidance (2015) asks, purchased electricity is reported twice: location-based (the grid's average
intensity, ``C_op`` above) and market-based (the contract's emission factor ``F_m``,
``market_gco2_per_kwh``, for all the facility energy: ``sum_t E_t x PUE x F_m / 1000``); embodied
carbon is Scope 3 (category 2, capital goods). A grid series is a CSV with a
time column (seconds on the run's clock) and an intensity column; a value holds from its time until
the next row's (step-hold), and the last one holds after it. The plan, which keeps one mean power per
host, uses the series' time-weighted mean (:func:`mean_intensity`): the covariance of power and
intensity over time is the run's to measure (its ``carbon`` section integrates step by step).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

_CFG = ConfigDict(defer_build=True, frozen=True, extra="forbid", populate_by_name=True, allow_inf_nan=False)

HOURS_PER_YEAR = 8760.0
SECONDS_PER_YEAR = HOURS_PER_YEAR * 3600.0


class EmbodiedCarbon(BaseModel):
    """A server's embodied carbon (no use phase) from a cited product carbon footprint."""

    model_config = _CFG

    name: str
    description: str = ""
    kgco2e: float = Field(gt=0, description="manufacturing + transport + end of life, kgCO2e per server")
    total_with_use_kgco2e: float | None = Field(default=None, gt=0, description="the sheet's total with its use phase, for reference")
    date: str
    source: str


class GridSeries(BaseModel):
    """A grid carbon-intensity time series in a CSV file."""

    model_config = _CFG

    file: str = Field(description="CSV file, relative to the file that names it")
    time_column: str = Field(default="time_s", description="seconds on the run's clock (the trace's time; 0 = start of a synthetic run)")
    value_column: str = Field(default="gco2_per_kwh", description="grid intensity, gCO2e per kWh")


class CarbonInputs(BaseModel):
    """Grid intensity (a constant or a series), facility overhead and embodied carbon per server."""

    model_config = _CFG

    grid_gco2_per_kwh: float | None = Field(default=None, ge=0, description="constant grid intensity, gCO2e per kWh")
    grid_series: GridSeries | None = Field(default=None, description="grid intensity over time instead of a constant")
    market_gco2_per_kwh: float | None = Field(
        default=None, ge=0, description="Scope 2 market-based: the emission factor of the electricity contract (supplier "
                                        "tariff, PPA, certificates), gCO2e per kWh, applied to all the energy; the grid "
                                        "intensity gives the location-based figure")
    pue: float | None = Field(default=None, ge=1.0, description="facility energy / IT energy (plan: default the cost "
                              "inputs' facility factor; run: default 1.0, IT energy only)")
    lifetime_years: float | None = Field(default=None, gt=0, description="years a server's embodied carbon is spread over "
                                         "(plan: default cost.years; run: required with embodied)")
    embodied: dict[str, float | str] = Field(default_factory=dict, description="per candidate (plan) or host group "
                                             "(run): kgCO2e per server, or a name in catalog section server_embodied_carbon")

    @model_validator(mode="after")
    def _one_intensity(self) -> "CarbonInputs":
        if (self.grid_gco2_per_kwh is None) == (self.grid_series is None):
            raise ValueError("give exactly one of grid_gco2_per_kwh (a constant) and grid_series (a CSV time series)")
        for k, v in self.embodied.items():
            if not isinstance(v, str) and not (v > 0 and np.isfinite(v)):
                raise ValueError(f"embodied.{k}: kgCO2e per server must be > 0")
        return self


def operational_kg(power_w, step_s: float, intensity_g_per_kwh, pue: float = 1.0) -> float:
    """kgCO2e of IT power ``power_w`` (W per step, any shape whose first axis is time, summed over the
    rest) over steps of ``step_s`` seconds at ``intensity_g_per_kwh`` (scalar or one value per step)."""
    p = np.asarray(power_w, dtype=np.float64)
    per_step_w = p.reshape(p.shape[0], -1).sum(axis=1) if p.ndim > 1 else p
    kwh = per_step_w * step_s / 3.6e6
    return float(np.sum(kwh * pue * np.asarray(intensity_g_per_kwh, dtype=np.float64)) / 1000.0)


def embodied_kg(n_servers: float, kg_per_server: float, lifetime_years: float, years: float) -> float:
    """kgCO2e of ``n_servers`` servers' embodied carbon attributed to ``years`` of a ``lifetime_years`` life."""
    return float(n_servers) * float(kg_per_server) / float(lifetime_years) * float(years)


def intensity_at(times_s: np.ndarray, values: np.ndarray, t_s) -> np.ndarray:
    """Step-hold lookup: the value of the last row at or before each ``t_s``. Times before the first
    row are an error (the series does not say)."""
    t = np.asarray(t_s, dtype=np.float64)
    idx = np.searchsorted(times_s, t, side="right") - 1
    if np.any(idx < 0):
        raise ValueError(f"the grid series starts at t = {times_s[0]:g} s, after the run's first step at t = {float(t.min()):g} s")
    return values[idx]


def mean_intensity(times_s: np.ndarray, values: np.ndarray) -> float:
    """Time-weighted mean of a step-hold series over its span (first to last row); one row: its value."""
    if times_s.size == 1:
        return float(values[0])
    dt = np.diff(times_s)
    return float(np.sum(values[:-1] * dt) / (times_s[-1] - times_s[0]))


def read_grid_series(series: GridSeries, where: str) -> tuple[np.ndarray, np.ndarray]:
    """(times_s, gCO2e/kWh) of a grid series CSV, times strictly increasing; bad input is an
    :class:`~densim.errors.InputError` naming the file and the row or column."""
    import polars as pl

    from densim.errors import InputError

    import io

    from densim.textio import read_text_file

    path = Path(series.file)
    if not path.exists():
        raise InputError(str(path), where + ".file", "no such file")
    text = read_text_file(path, "grid intensity series")  # a regular UTF-8 text file without NUL bytes
    try:
        df = pl.read_csv(io.StringIO(text), infer_schema_length=10000)
    except Exception as exc:  # noqa: BLE001 - any parse failure is a bad input file
        raise InputError(str(path), "", f"not a readable CSV ({str(exc).splitlines()[0]})") from None
    for col in (series.time_column, series.value_column):
        if col not in df.columns:
            raise InputError(str(path), f"column {col!r}", f"missing (columns: {', '.join(df.columns)})")
    if df.height == 0:
        raise InputError(str(path), "", "no rows")
    out = []
    for col in (series.time_column, series.value_column):
        try:
            a = df[col].cast(pl.Float64, strict=True).to_numpy()
        except Exception:  # noqa: BLE001
            bad = df.with_row_index("row").filter(pl.col(col).cast(pl.Float64, strict=False).is_null())
            row = int(bad["row"][0]) + 2 if bad.height else 2
            raise InputError(str(path), f"row {row}, column {col!r}", "not a number") from None
        nonfinite = np.flatnonzero(~np.isfinite(a))
        if nonfinite.size:
            raise InputError(str(path), f"row {int(nonfinite[0]) + 2}, column {col!r}", "not a finite number")
        out.append(a)
    t, v = out
    if np.any(t < 0):
        raise InputError(str(path), f"row {int(np.flatnonzero(t < 0)[0]) + 2}, column {series.time_column!r}",
                         "negative time (seconds on the run's clock, from 0)")
    if np.any(t > 1e12):
        raise InputError(str(path), f"row {int(np.flatnonzero(t > 1e12)[0]) + 2}, column {series.time_column!r}",
                         "more than 1e12 s (about 31,700 years)")
    if np.any(v > 1e5):
        raise InputError(str(path), f"row {int(np.flatnonzero(v > 1e5)[0]) + 2}, column {series.value_column!r}",
                         "more than 100,000 gCO2e per kWh (coal is about 1,000)")
    if np.any(v < 0):
        raise InputError(str(path), f"row {int(np.flatnonzero(v < 0)[0]) + 2}, column {series.value_column!r}", "negative intensity")
    back = np.flatnonzero(np.diff(t) <= 0)
    if back.size:
        raise InputError(str(path), f"row {int(back[0]) + 3}, column {series.time_column!r}", "times must increase strictly")
    return t, v


def embodied_kg_per_server(value: float | str, catalog, where: str) -> tuple[float, str]:
    """(kgCO2e, source) of an ``embodied`` entry: a number, or a catalog name (section server_embodied_carbon)."""
    from densim.errors import InputError

    if isinstance(value, str):
        try:
            e = catalog.get("server_embodied_carbon", value, EmbodiedCarbon)
        except KeyError as exc:  # the catalog's CatalogError
            raise InputError(None, where, str(exc).strip("'\"")) from None
        return e.kgco2e, f"{e.name}: {e.source}"
    return float(value), "given"
