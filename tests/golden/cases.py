"""Golden-output cases: every built-in study and every example, run as a user would run it.

Each case runs one command (in-process, through the CLI where there is one) into a scratch folder
and returns its outputs as one flat mapping ``figure path -> value``:

* every number, boolean and short string of the command's JSON output (``summary.json`` for runs,
  studies and plans; the ``--json`` output of ``io`` and ``size``; the tiles result file), with
  list items addressed by index (``ranking[0].hosts``); lists longer than :data:`LONG_LIST` are
  reduced to ``count``/``sum``/``min``/``max`` per leaf (``curves.R[*].sum``);
* for engine runs, per numeric column of ``vms.parquet``, ``hosts.parquet`` and
  ``host_steps.parquet``: its sum, minimum and maximum (the series totals);
* for sweeps, every cell of the ``results`` view ordered by scenario and seed.

Wall-clock times, versions, sources and free text are left out: they are not model outputs.
The snapshots live in ``tests/golden/snapshots/<case>.json``; ``make golden`` rewrites them
(``python -m tests.golden.update``) and prints what moved.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.golden.tolerances import ABS_TOL, Rule, compare

REPO = Path(__file__).resolve().parents[2]
TRACES = REPO.parent / "shared" / "traces"
SNAPSHOTS = Path(__file__).resolve().parent / "snapshots"

LONG_LIST = 64
# keys that are not model outputs (timings, provenance, prose)
SKIP_KEYS = {
    "wall_s", "elapsed_s", "timings", "densim_version", "source", "sources", "description", "notes", "note",
    "demand_rule", "report", "out", "path", "store", "created", "started", "finished", "tolerance",
}
MAX_STRING = 80


# --------------------------------------------------------------------------- flattening
def flatten(obj: Any, prefix: str = "") -> dict[str, Any]:
    """A nested JSON value as ``{path: number | bool | str | None}`` (see the module docstring)."""
    out: dict[str, Any] = {}
    _walk(obj, prefix, out)
    return out


def _leaf(value: Any) -> Any:
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        v = float(value)
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return value
    if isinstance(value, str):
        return value if len(value) <= MAX_STRING else value[:MAX_STRING] + "..."
    return str(value)[:MAX_STRING]


def _walk(obj: Any, prefix: str, out: dict[str, Any]) -> None:
    if isinstance(obj, dict):
        for k, v in obj.items():
            if str(k) in SKIP_KEYS:
                continue
            _walk(v, f"{prefix}.{k}" if prefix else str(k), out)
    elif isinstance(obj, (list, tuple)):
        if len(obj) <= LONG_LIST:
            for i, v in enumerate(obj):
                _walk(v, f"{prefix}[{i}]", out)
        else:
            _summarise_list(obj, prefix, out)
    else:
        out[prefix] = _leaf(obj)


def _summarise_list(items: list, prefix: str, out: dict[str, Any]) -> None:
    """A long list: its length, and count/sum/min/max of each numeric leaf across the items."""
    out[f"{prefix}[*].count"] = len(items)
    leaves: dict[str, list[float]] = {}
    for item in items:
        sub: dict[str, Any] = {}
        _walk(item, "", sub)
        for k, v in sub.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                leaves.setdefault(k, []).append(float(v))
    for k, vals in sorted(leaves.items()):
        key = f"{prefix}[*]{'.' + k if k and not k.startswith('[') else k}"
        finite = [v for v in vals if math.isfinite(v)]
        out[f"{key}.sum"] = math.fsum(finite)
        out[f"{key}.min"] = min(finite) if finite else None
        out[f"{key}.max"] = max(finite) if finite else None


def parquet_totals(path: Path, prefix: str) -> dict[str, Any]:
    """Sum, min and max of every numeric column of one Parquet file."""
    import polars as pl

    df = pl.read_parquet(path)
    out: dict[str, Any] = {f"{prefix}.rows": df.height}
    for name, dtype in zip(df.columns, df.dtypes):
        if dtype.is_numeric():
            col = df[name].cast(pl.Float64)
            out[f"{prefix}.{name}.sum"] = float(col.sum())
            out[f"{prefix}.{name}.min"] = float(col.min()) if df.height else None
            out[f"{prefix}.{name}.max"] = float(col.max()) if df.height else None
    return out


# --------------------------------------------------------------------------- running
def _cli(args: list[str]) -> str:
    from typer.testing import CliRunner

    from densim.cli.main import app

    r = CliRunner().invoke(app, args)
    if r.exit_code != 0:
        raise AssertionError(f"densim {' '.join(args)} exited {r.exit_code}:\n{r.output}")
    return r.stdout


def _study(name: str) -> Callable[[Path], dict[str, Any]]:
    def run(tmp: Path) -> dict[str, Any]:
        _cli(["study", name, "--out", str(tmp)])
        return flatten(json.loads((tmp / "summary.json").read_text()))

    return run


def _run(example: str) -> Callable[[Path], dict[str, Any]]:
    def run(tmp: Path) -> dict[str, Any]:
        _cli(["run", str(REPO / "examples" / example), "--out", str(tmp), "--no-report", "--no-progress"])
        figs = flatten(json.loads((tmp / "summary.json").read_text()))
        for table in ("vms", "hosts", "host_steps"):
            p = tmp / f"{table}.parquet"
            if p.exists():
                figs.update(parquet_totals(p, table))
        return figs

    return run


def _io(example: str) -> Callable[[Path], dict[str, Any]]:
    def run(tmp: Path) -> dict[str, Any]:
        return flatten(json.loads(_cli(["io", str(REPO / "examples" / example), "--json"])))

    return run


def _size(example: str) -> Callable[[Path], dict[str, Any]]:
    def run(tmp: Path) -> dict[str, Any]:
        return flatten(json.loads(_cli(["size", str(REPO / "examples" / example), "--json"])))

    return run


def _tiles(example: str) -> Callable[[Path], dict[str, Any]]:
    def run(tmp: Path) -> dict[str, Any]:
        out = tmp / "tiles"
        _cli(["bench", "tiles", str(REPO / "examples" / example), "--out", str(out)])
        doc = json.loads((out / "summary.json").read_text())
        # the echo of the inputs is not an output; the result is
        return flatten({"result": doc["result"], "seed": doc.get("seed")})

    return run


def _plan(candidates: str, inventory_file: str | None = None) -> Callable[[Path], dict[str, Any]]:
    def run(tmp: Path) -> dict[str, Any]:
        inventory = TRACES / "gwa-t-12-rnd-2013-8-first250" if inventory_file is None else REPO / "examples" / inventory_file
        _cli(["plan", str(inventory), "--candidates", str(REPO / "examples" / candidates), "--out", str(tmp)])
        doc = json.loads((tmp / "summary.json").read_text())
        doc.get("inventory", {}).pop("source", None)
        return flatten(doc)

    return run


def _forecast(history: str, spec: str) -> Callable[[Path], dict[str, Any]]:
    def run(tmp: Path) -> dict[str, Any]:
        _cli(["forecast", str(REPO / "examples" / history), "--spec", str(REPO / "examples" / spec), "--out", str(tmp)])
        return flatten(json.loads((tmp / "summary.json").read_text()))

    return run


def _sweep(example: str) -> Callable[[Path], dict[str, Any]]:
    def run(tmp: Path) -> dict[str, Any]:
        study = REPO / "examples" / example
        _cli(["sweep", str(study), "--out", str(tmp), "--backend", "inprocess", "--no-progress"])
        from densim.tools.sweep.query import connect, resolve_store

        con = connect(resolve_store(study, tmp))
        rel = con.execute("SELECT * FROM results ORDER BY scenario, seed")
        cols = [d[0] for d in rel.description]
        rows = [dict(zip(cols, r)) for r in rel.fetchall()]
        return flatten({"results": rows, "rows": len(rows)})

    return run


def _gpu_size(args: list[str]) -> Callable[[Path], dict[str, Any]]:
    def run(tmp: Path) -> dict[str, Any]:
        return flatten(json.loads(_cli(["gpu", "size", *args, "--json"])))

    return run


def _cases() -> dict[str, Callable[[Path], dict[str, Any]]]:
    from densim.tools.studies.base import all_studies

    cases: dict[str, Callable[[Path], dict[str, Any]]] = {}
    for name in all_studies():
        cases[f"study-{name}"] = _study(name)
    for ex in ("bitbrains-small.yaml", "planetlab.yaml", "fabric/pooled-nvme.yaml", "virt/engine-kvm.yaml",
               "storage/bitbrains-datastores.yaml", "storage/drive-failure.yaml", "sweeps/base-web.yaml", "sweeps/planetlab-base.yaml",
               "memory/swap-on-datastore.yaml", "opendc/surf-week.yaml", "opendc/1k-tasks.yaml",
               "opendc/bitbrains-small.yaml", "opendc/bitbrains-small-multi.yaml", "combined/everything-on.yaml",
               "gpu/inference-cluster.yaml", "gpu/host-failure.yaml", "memory/nvme-tiering.yaml",
               "storage/hci-vsan-raid5.yaml", "memory/page-sharing-images.yaml"):
        cases["run-" + ex.removesuffix(".yaml").replace("/", "-")] = _run(ex)
    for ex in ("storage/fio-30-ssd-5-hba.yaml", "storage/hdd-raid10-open.yaml"):
        cases["io-" + Path(ex).stem] = _io(ex)
    cases["size-500k-iops"] = _size("storage/size-500k-iops.yaml")
    for ex in ("virt/host-8180.yaml", "virt/host-x5680-default.yaml", "virt/host-x5680-tuned.yaml"):
        cases["tiles-" + Path(ex).stem] = _tiles(ex)
    cases["plan-candidates"] = _plan("planning/candidates.yaml")
    cases["plan-candidates-qos"] = _plan("planning/candidates-qos.yaml")
    cases["plan-candidates-licensing"] = _plan("planning/candidates-licensing.yaml")
    cases["plan-candidates-hci"] = _plan("planning/candidates-hci.yaml")
    cases["plan-candidates-tiering"] = _plan("planning/candidates-tiering.yaml")
    cases["plan-gpu"] = _plan("gpu/plan-gpu.yaml", "gpu/inventory.csv")
    cases["gpu-size-llama-3.1-70b-h100"] = _gpu_size(["--model", "llama-3.1-70b", "--gpu", "nvidia-h100-sxm", "--precision",
                                                      "fp8", "--tokens-in", "1024", "--tokens-out", "256", "--tokens-per-s",
                                                      "20000", "--ttft", "2 s", "--tpot", "100 ms"])
    cases["forecast-cluster-history"] = _forecast("forecast/cluster-history.csv", "forecast/forecast.yaml")
    for ex in ("sweeps/overcommit.yaml", "sweeps/planetlab-hosts.yaml"):
        cases["sweep-" + Path(ex).stem] = _sweep(ex)
    return cases


CASES = _cases()

# --------------------------------------------------------------------------- comparing
def snapshot_path(case: str) -> Path:
    return SNAPSHOTS / f"{case}.json"


def load_snapshot(case: str) -> dict[str, Any] | None:
    p = snapshot_path(case)
    return json.loads(p.read_text()) if p.exists() else None


def write_snapshot(case: str, figures: dict[str, Any]) -> None:
    SNAPSHOTS.mkdir(parents=True, exist_ok=True)
    snapshot_path(case).write_text(json.dumps(figures, indent=1, sort_keys=True) + "\n")


def diff(golden: dict[str, Any], now: dict[str, Any], case: str | None = None, *,
         rel: float | None = None) -> list[tuple[str, Any, Any, str, Rule | None]]:
    """Rows ``(figure, golden, now, change, rule)`` for every figure outside its tolerance, or that appeared or went.

    The tolerance of a figure is its rule in :mod:`tests.golden.tolerances` for ``case``; ``rel``
    instead compares every number at that one relative tolerance (``rel=0``: the same floats only)."""
    if rel is not None:
        uniform = Rule("uniform", ".*", ".*", "one tolerance for every figure", rel=rel, abs=ABS_TOL if rel else 0.0)
        rows = [(k, g, n, uniform if r is not None else None) for k, g, n, r in compare("", golden, now, lambda c, k: uniform)]
    else:
        if case is None:
            raise ValueError("diff needs the case (for its tolerance rules) or rel")
        rows = compare(case, golden, now)
    out = []
    for key, g, n, r in rows:
        change = ""
        if (isinstance(g, (int, float)) and isinstance(n, (int, float)) and not isinstance(g, bool)
                and not isinstance(n, bool) and g != 0):
            change = f"{(n - g) / abs(g) * 100:+.4g} %"
        out.append((key, g, n, change, r))
    return out


def format_diff(case: str, rows: list[tuple[str, Any, Any, str, Rule | None]], limit: int = 60) -> str:
    """A readable table of what moved: each figure with the tolerance it was held to, the rules' reasons below."""
    if not rows:
        return f"{case}: no change"

    def cell(v: Any) -> str:
        return f"{v:.10g}" if isinstance(v, float) else str(v)

    w = min(70, max(len(r[0]) for r in rows))
    lines = [f"{case}: {len(rows)} figure(s) outside their tolerance",
             f"  {'figure':<{w}}  {'golden':>18}  {'now':>18}  {'change':>11}  tolerance (rule)"]
    used: dict[str, Rule] = {}
    for key, g, n, ch, r in rows[:limit]:
        tol = f"{r.describe()} ({r.name})" if r is not None else "(appeared or went)"
        if r is not None:
            used[r.name] = r
        lines.append(f"  {key[:w]:<{w}}  {cell(g):>18}  {cell(n):>18}  {ch:>11}  {tol}")
    if len(rows) > limit:
        lines.append(f"  ... and {len(rows) - limit} more")
    for name, r in used.items():
        lines.append(f"  rule {name}: {r.describe()}: {r.reason}")
    return "\n".join(lines)
