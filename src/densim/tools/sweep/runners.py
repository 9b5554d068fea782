"""What a sweep task runs.

A *runner* is ``fn(mapping: dict, seed: int) -> dict[str, bytes]``: it gets the complete scenario
mapping of one sweep point and one replication seed, and returns the result files (name ->
content). Runners must be deterministic: same mapping and seed, same bytes. The results store
writes the files; a runner never touches the store, so it can run on any worker of a cluster.
A runner may carry ``validate(mapping, source=..., base_dir=...)``, called for every point
before the sweep starts so that a bad axis value fails at once, naming the point.
"""

from __future__ import annotations

import io
import json
import math
import tempfile
from pathlib import Path
from typing import Any

from densim.registry import Registry


def flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested summary dict -> one flat row: ``a.b`` keys, lists as JSON text."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flatten(v, key + "."))
        elif isinstance(v, (list, tuple)):
            out[key] = json.dumps(v, sort_keys=True, default=str)
        elif isinstance(v, (bool, int, float, str)) or v is None:
            out[key] = v
        else:
            try:
                out[key] = float(v)  # numpy scalars
            except (TypeError, ValueError):
                out[key] = str(v)
    return out


def summary_parquet_bytes(summary: dict[str, Any], *, seed: int) -> bytes:
    """The summary as a one-row Parquet file (so DuckDB can query it next to the tables)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    row = flatten({k: v for k, v in summary.items() if k not in ("figures",)})
    row["seed"] = int(seed)
    cols = {}
    for k, v in row.items():
        if isinstance(v, bool):
            cols[k] = pa.array([v], pa.bool_())
        elif isinstance(v, int):
            cols[k] = pa.array([v], pa.int64())
        elif isinstance(v, float):
            cols[k] = pa.array([v if math.isfinite(v) else None], pa.float64())
        elif v is None:
            cols[k] = pa.array([None], pa.float64())
        else:
            cols[k] = pa.array([str(v)], pa.string())
    buf = io.BytesIO()
    pq.write_table(pa.table(cols), buf, compression="zstd")
    return buf.getvalue()


def _validate_engine(mapping: dict[str, Any], *, source: Any, base_dir: Any = ".") -> None:
    from densim.plant import plant_from_dict

    plant_from_dict(mapping, source=source, base_dir=base_dir)  # the checks the run will make


def engine_runner(mapping: dict[str, Any], seed: int) -> dict[str, bytes]:
    """Run the densim engine on one scenario and return its result files plus ``summary.parquet``."""
    from densim.engine import simulate
    from densim.plant import plant_from_dict

    base_dir = mapping.get("base_dir", ".")
    clean = {k: v for k, v in mapping.items() if k != "base_dir"}
    result = simulate(plant_from_dict(clean, source="<sweep>", base_dir=base_dir), seed=seed)
    files: dict[str, bytes] = {}
    with tempfile.TemporaryDirectory(prefix="densim-task-") as tmp:
        result.write(Path(tmp))
        for p in sorted(Path(tmp).rglob("*")):
            if p.is_file():
                files[p.relative_to(tmp).as_posix()] = p.read_bytes()
    summary = getattr(result, "summary", None)
    if summary is None and "summary.json" in files:
        summary = json.loads(files["summary.json"])
    if summary is not None:
        files["summary.parquet"] = summary_parquet_bytes(summary, seed=seed)
    return files


engine_runner.validate = _validate_engine  # type: ignore[attr-defined]

RUNNERS: Registry = Registry("sweep-runner", default="engine")
RUNNERS.add("engine", engine_runner, description="the densim engine on the point's scenario", source="densim")
ENTRY_POINT_GROUP = "densim.runners"


def load_runner_plugins() -> None:
    """Register the runners that installed packages declare in the ``densim.runners`` entry-point group."""
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in RUNNERS:
            continue
        fn = ep.load()
        RUNNERS.add(ep.name, fn, description=(fn.__doc__ or "").strip().splitlines()[0] if fn.__doc__ else "",
                    source=f"entry point {ep.value}")


def resolve_runner(name: str, *, source: Any = None):
    """The runner registered as ``name`` (see :data:`densim.tools.sweep.runners.RUNNERS`).

    A study file names a runner; it never names a module to import, so a study received from
    someone else cannot run code that the user did not install. Plug-ins register through the
    ``densim.runners`` entry-point group of a package the user installed.
    """
    from densim.errors import InputError

    if not isinstance(name, str) or name not in RUNNERS:
        load_runner_plugins()
    try:
        return RUNNERS.get(name)
    except KeyError:
        hint = " (a study names a registered runner, not a module: install the plug-in that provides it)" if ":" in str(name) else ""
        raise InputError(source, "runner", f"unknown runner {name!r}; registered: {', '.join(RUNNERS.names())}{hint}") from None


def execute(runner_name: str, mapping: dict[str, Any], seed: int) -> dict[str, bytes]:
    """Worker entry point: resolve the runner by name (nothing but strings cross the wire) and run it."""
    fn = resolve_runner(runner_name)
    try:
        files = fn(mapping, seed)
    except Exception as exc:
        raise _portable(exc) from None
    if not isinstance(files, dict) or not all(isinstance(k, str) and isinstance(v, bytes) for k, v in files.items()):
        raise TypeError(f"runner {runner_name!r} must return dict[str, bytes]")
    return files


class TaskError(RuntimeError):
    """A runner's error that could not cross to the driver as itself (it does not pickle): its type and text."""


def _portable(exc: Exception) -> Exception:
    """``exc`` if it survives pickling, else a :class:`TaskError` with the same one-line text. An error
    that fails to unpickle in the driver breaks the whole process pool: every task in flight would fail
    with ``BrokenProcessPool`` and the real error would never be shown."""
    import pickle

    try:
        back = pickle.loads(pickle.dumps(exc))
        if type(back) is type(exc) and str(back) == str(exc):
            return exc
    except Exception:  # noqa: BLE001 - anything that stops the round trip
        pass
    return TaskError(f"{type(exc).__name__}: {' '.join(str(exc).split())}")
