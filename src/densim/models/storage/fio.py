"""fio results as a device profile, and a block device's parameters fitted to them.

**Reading** (:func:`read_fio`): the JSON fio 3.x writes with ``--output-format=json``, with or
without the text fio prints before it (``fio-3.28``, ``note: both iodepth >= 1 and synchronous I/O
engine are selected, queue depth will be capped at 1``, ...). The parts read::

    {"fio version": "fio-3.28", "global options": {"bs": "4k", "ioengine": "libaio", ...},
     "jobs": [{"jobname": "qd4", "groupid": 2, "error": 0,
               "job options": {"rw": "randread", "iodepth": "4", "numjobs": "1", ...},
               "read":  {"iops": 40000.0, "bw_bytes": 163840000, "total_ios": 1200000,
                         "lat_ns": {"mean": 99500.0, "percentile": {"99.000000": 201728, ...}},
                         "clat_ns": {...}, "slat_ns": {...}},
               "write": {...}, "trim": {...}}, ...]}

A job's options are the global options overridden by its own; options fio's JSON leaves out take
fio's documented defaults (``rw=read``, ``bs=4k``, ``iodepth=1``, ``numjobs=1``, ``ioengine=psync``),
and the profile lists every default it used. ``bs`` sizes use fio's default base (``4k`` = 4096 B).

**Measurement points.** Jobs of one reporting group (``groupid``) ran at the same time (fio starts a
new group at each ``stonewall``), so a group is one point: its I/Os add up and its outstanding I/Os
are the sum of its jobs' ``iodepth x numjobs`` (``numjobs`` clones are one entry under
``group_reporting``, one entry each without it); a synchronous engine (``sync``, ``psync``, ...) keeps
one I/O in flight per job whatever ``iodepth`` says, as fio's note warns. The jobs of a group must
share ``rw`` and ``bs`` (a group mixing them is refused: it is no single point of a profile). The
latency is fio's total latency ``lat_ns`` (submission + completion), else ``slat_ns + clat_ns``
when ``lat_ns`` is absent; the p99 is the ``lat_ns`` percentile, else the ``clat_ns`` one (fio's
default; for a group of several jobs the largest of theirs, an upper bound). A point has no latency when fio measured none (``gtod_reduce``, ``disable_lat``).

**Fitting** (:func:`fit_device`): the device model of :mod:`densim.models.devices` as the storage
model solves it for a closed workload (one drive, no controller: :func:`~densim.models.storage.build_stations`
and :func:`~densim.models.storage.solve_closed`, exact MVA with a Seidmann multi-server station) is
run at each point's depth, read share, block size and access, and
``scipy.optimize.least_squares`` fits the datasheet figures the points constrain (QD1 latency and
saturated IOPS per direction for random I/O; sequential bandwidth per direction for sequential or
larger-than-4 KiB I/O) on log scale, minimising the log ratios of modelled to measured IOPS and mean
latency. A figure the points do not constrain (e.g. saturated IOPS from QD1 points alone) is not
fitted and is reported as such.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from densim.errors import InputError
from densim.models.devices import REF_BLOCK_BYTES, DeviceSpec

#: fio's I/O engines that complete each I/O before issuing the next (one in flight per job)
SYNC_ENGINES = frozenset({"sync", "psync", "vsync", "pvsync", "pvsync2", "mmap"})
#: rw mode -> (sequential, reads, writes)
RW_MODES: dict[str, tuple[bool, bool, bool]] = {
    "read": (True, True, False), "write": (True, False, True), "rw": (True, True, True), "readwrite": (True, True, True),
    "randread": (False, True, False), "randwrite": (False, False, True), "randrw": (False, True, True),
}
#: fio's defaults for the options its JSON leaves out when they were not given
FIO_DEFAULTS = {"rw": "read", "bs": "4k", "iodepth": "1", "numjobs": "1", "ioengine": "psync"}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)\s*$", re.I)
_PREAMBLE = re.compile(r"^(fio-\d|note:|warning:|fio:)", re.I)


def looks_like_fio(path: str | Path) -> bool:
    """Whether ``path`` holds fio JSON output (fio's preamble lines, or a JSON object with ``"fio version"``).

    Only a regular file is opened to look: a FIFO would block the read for ever and a device could
    be endless, so those are left to the loader, which refuses them in one line."""
    import os

    try:
        if not os.path.isfile(path):
            return False
        with open(path, encoding="utf-8", errors="replace") as fh:
            head = fh.read(65536)
    except OSError:
        return False
    first = next((ln.strip() for ln in head.splitlines() if ln.strip()), "")
    return bool(re.match(r"^fio-\d", first)) or ('"fio version"' in head and (first.startswith("{") or bool(_PREAMBLE.match(first))))


def parse_size(text: Any) -> float:
    """A fio size (``4k``, ``4096``, ``64KiB``, ``1m``) in bytes, base 1024 as fio's default ``kb_base``."""
    m = _SIZE.match(str(text))
    if not m:
        raise ValueError(f"not a fio size: {text!r}")
    return float(m.group(1)) * 1024.0 ** " kmgt".index((m.group(2) or " ").lower())


@dataclass(frozen=True)
class FioPoint:
    """One measurement: a reporting group of a fio run (jobs that ran at the same time)."""

    where: str  # JSON path of its entries, e.g. "jobs[2]" or "jobs[2,3]"
    job: str
    rw: str
    sequential: bool
    block_bytes: float
    depth: int  # outstanding I/Os: sum over the group's jobs of iodepth x numjobs
    read_iops: float
    write_iops: float
    bandwidth_bps: float
    read_latency_s: float | None
    write_latency_s: float | None
    p99_latency_s: float | None

    @property
    def iops(self) -> float:
        return self.read_iops + self.write_iops

    @property
    def read_fraction(self) -> float:
        return self.read_iops / self.iops

    @property
    def mean_latency_s(self) -> float | None:
        """I/O-weighted mean of the read and write latencies (None when fio measured none)."""
        parts = [(i, lat) for i, lat in ((self.read_iops, self.read_latency_s), (self.write_iops, self.write_latency_s)) if i > 0]
        if any(lat is None for _, lat in parts):
            return None
        return sum(i * lat for i, lat in parts) / sum(i for i, _ in parts)

    def as_dict(self) -> dict[str, Any]:
        return {"where": self.where, "job": self.job, "rw": self.rw, "sequential": self.sequential, "block_bytes": self.block_bytes,
                "depth": self.depth, "iops": self.iops, "read_iops": self.read_iops, "write_iops": self.write_iops,
                "read_fraction": self.read_fraction, "bandwidth_bps": self.bandwidth_bps, "mean_latency_s": self.mean_latency_s,
                "read_latency_s": self.read_latency_s, "write_latency_s": self.write_latency_s, "p99_latency_s": self.p99_latency_s}


@dataclass
class FioRun:
    path: str
    version: str
    points: list[FioPoint]
    notes: list[str] = field(default_factory=list)


def _load_json(path: Path) -> Any:
    """The JSON object in ``path``, after any text lines fio printed before it."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(path, "", "no such file") from None
    except OSError as exc:
        raise InputError(path, "", f"cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise InputError(path, "", f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    lines = text.splitlines(keepends=True)
    start = next((i for i, ln in enumerate(lines) if ln.lstrip().startswith("{")), None)
    if start is None:
        raise InputError(path, "", "no JSON object found (expected the output of fio --output-format=json)")
    offset = sum(len(ln) for ln in lines[:start])
    try:
        obj, _end = json.JSONDecoder().raw_decode(text, offset + len(lines[start]) - len(lines[start].lstrip()))
    except json.JSONDecodeError as exc:
        raise InputError(path, f"line {exc.lineno} column {exc.colno}", f"invalid JSON: {exc.msg}") from None
    if not isinstance(obj, dict):
        raise InputError(path, "", "the JSON is not an object (expected fio's {\"fio version\": ..., \"jobs\": [...]})")
    return obj


class _Doc:
    """Field access with the JSON path in every error."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def err(self, where: str, problem: str) -> InputError:
        return InputError(self.path, where, problem)

    def get(self, obj: dict, key: str, where: str, kind: type | tuple = (int, float)) -> Any:
        here = _join(where, key)
        if not isinstance(obj, dict) or key not in obj:
            raise self.err(here, "missing")
        v = obj[key]
        if kind in ((int, float), float, int) and (isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v)):
            raise self.err(here, f"expected a number, got {v!r}")
        if kind is dict and not isinstance(v, dict):
            raise self.err(here, f"expected an object, got {type(v).__name__}")
        if kind is list and not isinstance(v, list):
            raise self.err(here, f"expected a list, got {type(v).__name__}")
        if kind in ((int, float), float, int) and v < 0:
            raise self.err(here, f"must be >= 0, got {v}")
        return v


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key) else f'{where}["{key}"]'


def _direction(doc: _Doc, job: dict, d: str, where: str) -> tuple[float, float, float | None, float | None]:
    """``(iops, bytes/s, mean latency s, p99 s)`` of one data direction of a job."""
    sec = doc.get(job, d, where, dict)
    w = _join(where, d)
    iops = float(doc.get(sec, "iops", w))
    bw = float(doc.get(sec, "bw_bytes", w))
    if "lat_ns" not in sec and "clat_ns" not in sec and "lat" in sec:
        raise doc.err(_join(w, "lat"), "fio 2.x output (latencies in microseconds under 'lat'); densim reads fio 3.x JSON")
    lat = p99 = None
    if iops > 0:
        total = doc.get(sec, "lat_ns", w, dict) if "lat_ns" in sec else None
        if total is not None and float(doc.get(total, "mean", _join(w, "lat_ns"))) > 0:
            lat = float(total["mean"]) * 1e-9
        elif "clat_ns" in sec:
            clat = doc.get(sec, "clat_ns", w, dict)
            c = float(doc.get(clat, "mean", _join(w, "clat_ns")))
            s = float(doc.get(doc.get(sec, "slat_ns", w, dict), "mean", _join(w, "slat_ns"))) if "slat_ns" in sec else 0.0
            lat = (c + s) * 1e-9 if c > 0 else None
        for key in ("lat_ns", "clat_ns"):
            pct = sec.get(key, {}).get("percentile") if isinstance(sec.get(key), dict) else None
            if isinstance(pct, dict) and pct:
                v = pct.get("99.000000")
                if v is None:
                    raise doc.err(_join(_join(w, key), "percentile"), "has no \"99.000000\" entry (give fio --percentile_list with 99)")
                if not isinstance(v, (int, float)) or isinstance(v, bool) or v < 0:
                    raise doc.err(_join(_join(_join(w, key), "percentile"), "99.000000"), f"expected a number of ns, got {v!r}")
                p99 = float(v) * 1e-9 if v > 0 else None
                break
    return iops, bw, lat, p99


def read_fio(path: str | Path) -> FioRun:
    """Read fio's JSON output (fio 3.x, with or without the text before it) into measurement points."""
    path = Path(path)
    doc = _Doc(path)
    data = _load_json(path)
    version = data.get("fio version")
    if not isinstance(version, str):
        raise doc.err('["fio version"]', "missing (not fio --output-format=json output?)")
    glob = doc.get(data, "global options", "", dict) if "global options" in data else {}
    jobs = doc.get(data, "jobs", "", list)
    if not jobs:
        raise doc.err("jobs", "empty: the run has no jobs")
    defaults_used: set[str] = set()
    capped: set[str] = set()
    groups: dict[Any, list[tuple[int, dict]]] = {}
    for i, job in enumerate(jobs):
        where = f"jobs[{i}]"
        if not isinstance(job, dict):
            raise doc.err(where, f"expected an object, got {type(job).__name__}")
        err = job.get("error", 0)
        if err:
            raise doc.err(_join(where, "error"), f"fio reported error {err} for job {job.get('jobname', '?')!r}")
        opts = {**{k: str(v) for k, v in glob.items()}, **{k: str(v) for k, v in doc.get(job, "job options", where, dict).items()}}
        for k in ("bsrange", "bssplit", "blocksize_range"):
            if k in opts:
                raise doc.err(_join(_join(where, "job options"), k), "mixed block sizes are not one point of a profile; give one bs per job")
        for k, v in FIO_DEFAULTS.items():
            if k not in opts:
                opts[k] = v
                defaults_used.add(f"{k}={v}")
        ow = _join(where, "job options")
        rw = opts["rw"].split(":")[0].strip().lower()  # "randread:8" (sequence modifier) is still randread
        if rw not in RW_MODES:
            raise doc.err(_join(ow, "rw"), f"unsupported rw {opts['rw']!r}; one of {', '.join(RW_MODES)}")
        sizes = {s.strip() for s in opts["bs"].split(",") if s.strip()}
        try:
            bs = {parse_size(s) for s in sizes}
        except ValueError as exc:
            raise doc.err(_join(ow, "bs"), str(exc)) from None
        if len(bs) != 1:
            raise doc.err(_join(ow, "bs"), f"separate read/write block sizes ({opts['bs']}) are not one point of a profile")
        try:
            iodepth, numjobs = int(opts["iodepth"]), int(opts["numjobs"])
        except ValueError:
            raise doc.err(ow, f"iodepth and numjobs must be integers, got {opts['iodepth']!r}, {opts['numjobs']!r}") from None
        if iodepth < 1 or numjobs < 1:
            raise doc.err(ow, f"iodepth and numjobs must be >= 1, got {iodepth}, {numjobs}")
        sync = opts["ioengine"].lower() in SYNC_ENGINES
        if sync and iodepth > 1:
            capped.add(f"{opts['ioengine']} (iodepth {iodepth})")
        depth = (1 if sync else iodepth) * (numjobs if opts.get("group_reporting", "0") not in ("0", "false") else 1)
        seq, reads, writes = RW_MODES[rw]
        r = _direction(doc, job, "read", where)
        w = _direction(doc, job, "write", where)
        if (reads and r[0] <= 0) or (writes and w[0] <= 0):
            raise doc.err(where, f"job {job.get('jobname', '?')!r} (rw={rw}) completed no "
                          f"{'reads' if reads and r[0] <= 0 else 'writes'}")
        entry = {"job": str(job.get("jobname", f"job{i}")), "rw": rw, "seq": seq, "bs": bs.pop(), "depth": depth, "r": r, "w": w}
        groups.setdefault(job.get("groupid", i), []).append((i, entry))
    points = []
    for _gid, members in groups.items():
        first_i, first = members[0]
        for i, e in members[1:]:
            if (e["rw"], e["bs"]) != (first["rw"], first["bs"]):
                raise doc.err(f"jobs[{i}]", f"ran at the same time as jobs[{first_i}] (same groupid) with rw={e['rw']} bs={e['bs']:.0f} "
                              f"against rw={first['rw']} bs={first['bs']:.0f}: not one point of a profile (separate them with stonewall)")
        points.append(_group_point(members))
    points.sort(key=lambda p: (p.rw, p.block_bytes, p.depth))
    notes = []
    if capped:
        notes.append(f"synchronous engine {', '.join(sorted(capped))}: one I/O in flight per job, as fio's own note says")
    if defaults_used:
        notes.append(f"options not in the file, fio's defaults used: {', '.join(sorted(defaults_used))}")
    return FioRun(str(path), version, points, notes)


def _group_point(members: list[tuple[int, dict]]) -> FioPoint:
    def lat(d: str) -> tuple[float, float | None]:
        ios = [e[d][0] for _, e in members]
        lats = [e[d][2] for _, e in members]
        total = sum(ios)
        if total <= 0:
            return 0.0, None
        if any(x is None for x, n in zip(lats, ios) if n > 0):
            return total, None
        return total, sum(n * x for n, x in zip(ios, lats) if n > 0) / total

    r_iops, r_lat = lat("r")
    w_iops, w_lat = lat("w")
    p99s = [p for _, e in members for p in (e["r"][3], e["w"][3]) if p is not None]
    e0 = members[0][1]
    where = "jobs[" + ",".join(str(i) for i, _ in members) + "]"
    return FioPoint(where, "+".join(dict.fromkeys(e["job"] for _, e in members)), e0["rw"], e0["seq"], e0["bs"],
                    sum(e["depth"] for _, e in members), r_iops, w_iops, sum(e["r"][1] + e["w"][1] for _, e in members),
                    r_lat, w_lat, max(p99s) if p99s else None)


def profile(run: FioRun) -> dict[str, Any]:
    """The device profile of a run: every point (rw mode, block size, depth) with IOPS, bandwidth and latency."""
    return {"kind": "fio-profile", "file": run.path, "fio_version": run.version, "points": [p.as_dict() for p in run.points],
            "notes": run.notes}


# --------------------------------------------------------------------------------------------
# fitting a device to the points

#: fitted DeviceSpec field -> (unit for display, scale to that unit)
FIT_UNITS = {"read_latency_s": ("us", 1e6), "write_latency_s": ("us", 1e6), "read_iops": ("IOPS", 1.0),
             "write_iops": ("IOPS", 1.0), "seq_read_bps": ("MB/s", 1e-6), "seq_write_bps": ("MB/s", 1e-6)}


def model_point(dev: DeviceSpec, p: FioPoint) -> tuple[float, float]:
    """``(IOPS, mean latency s)`` the storage model gives for one drive of ``dev`` at point ``p``'s depth,
    read share, block size and access (closed workload, no think time, no controller)."""
    from densim.models.storage import ArrayUnit, IoPattern, build_stations, solve_closed

    pattern = IoPattern(p.read_fraction, p.block_bytes, p.sequential)
    res = solve_closed(build_stations([ArrayUnit("fio", dev, 1)], None, pattern), p.depth, 0.0, pattern)
    return res.throughput_iops, res.mean_latency_s


def fit_fields(points: list[FioPoint]) -> list[str]:
    """The DeviceSpec fields the points bear on: per direction, QD1 latency and saturated IOPS (4 KiB
    random and any other random block size: the latency and IOPS terms) and the sequential bandwidth
    (sequential access, or blocks larger than 4 KiB)."""
    out = []
    for d, has in (("read", lambda p: p.read_iops > 0), ("write", lambda p: p.write_iops > 0)):
        pts = [p for p in points if has(p)]
        if any(not p.sequential for p in pts):
            out += [f"{d}_latency_s", f"{d}_iops"]
        if any(p.sequential or p.block_bytes > REF_BLOCK_BYTES for p in pts):
            out.append(f"seq_{d}_bps")
    return out


def _start_value(dev: DeviceSpec, f: str, points: list[FioPoint]) -> float:
    v = getattr(dev, f)
    if v is not None and v > 0:
        return float(v)
    # a sequential rate the catalog part does not give: start from the best bandwidth measured in that direction
    d = "read" if "read" in f else "write"
    bw = [p.bandwidth_bps * (p.read_fraction if d == "read" else 1 - p.read_fraction) for p in points]
    return max(max(bw), 1.0)


def fit_device(dev: DeviceSpec, points: list[FioPoint], source: str = "fio") -> dict[str, Any]:
    """Fit ``dev``'s figures to the fio ``points`` (module docstring); returns the fit as plain data.

    Raises :class:`InputError` when no point has a latency or IOPS to fit to."""
    from scipy.optimize import least_squares

    if not points:
        raise InputError(source, "jobs", "no measurement points to fit")
    fields = fit_fields(points)
    x0 = np.log([_start_value(dev, f, points) for f in fields])
    meas_x = np.array([p.iops for p in points])
    meas_r = np.array([np.nan if p.mean_latency_s is None else p.mean_latency_s for p in points])
    has_r = np.isfinite(meas_r)

    def device(x: np.ndarray, only=None) -> DeviceSpec:
        idx = range(len(fields)) if only is None else only
        return dev.model_copy(update={fields[i]: float(np.exp(x[i])) for i in idx})

    def predict(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        d = device(x)
        out = np.array([model_point(d, p) for p in points])
        return out[:, 0], out[:, 1]

    def residuals(x: np.ndarray) -> np.ndarray:
        mx, mr = predict(x)
        return np.concatenate([np.log(mx / meas_x), np.log(mr[has_r] / meas_r[has_r])])

    # a field the points do not determine is not fitted (said, not guessed): saturated IOPS from QD1
    # points alone, or latency and IOPS from a single depth (IOPS x latency = depth ties the two)
    fit_idx = _determined(_jacobian(residuals, x0))
    fixed_fields = [f for i, f in enumerate(fields) if i not in set(fit_idx.tolist())]
    x = x0.copy()
    status = "no free parameter"
    if fit_idx.size:
        def sub(z: np.ndarray) -> np.ndarray:
            xx = x0.copy()
            xx[fit_idx] = z
            return residuals(xx)

        sol = least_squares(sub, x0[fit_idx], method="trf", x_scale=1.0, xtol=1e-12, ftol=1e-12, gtol=1e-12, max_nfev=500)
        x[fit_idx] = sol.x
        status = sol.message
    fitted = device(x, fit_idx.tolist())  # the figures not fitted stay the catalog's, exactly
    out = np.array([model_point(fitted, p) for p in points])
    mx, mr = out[:, 0], out[:, 1]
    rows = []
    for p, xm, rm in zip(points, mx, mr):
        lat = p.mean_latency_s
        rows.append({**p.as_dict(), "model_iops": float(xm), "model_latency_s": float(rm),
                     "iops_error_pct": 100.0 * (xm - p.iops) / p.iops,
                     "latency_error_pct": None if lat is None else 100.0 * (rm - lat) / lat})
    iops_err = [abs(r["iops_error_pct"]) for r in rows]
    lat_err = [abs(r["latency_error_pct"]) for r in rows if r["latency_error_pct"] is not None]
    params = []
    for f in fields:
        unit, k = FIT_UNITS[f]
        before = getattr(dev, f)
        params.append({"field": f, "unit": unit, "catalog": None if before is None else float(before) * k,
                       "fitted": float(getattr(fitted, f)) * k, "fitted_si": float(getattr(fitted, f)), "fitted_to_data": f not in fixed_fields})
    parallelism = {}
    for d in ("read", "write"):
        if f"{d}_iops" in fields:
            parallelism[d] = float(getattr(fitted, f"{d}_iops") * getattr(fitted, f"{d}_latency_s"))
    return {
        "device": dev.name, "kind": dev.kind, "points": rows, "parameters": params, "not_constrained": fixed_fields,
        "parallelism": parallelism, "mape_iops_pct": float(np.mean(iops_err)),
        "mape_latency_pct": float(np.mean(lat_err)) if lat_err else None, "solver": status,
        "fitted_part": _part_entry(fitted),
    }


def _determined(jac: np.ndarray, rtol: float = 1e-6) -> np.ndarray:
    """Indices of the parameters the residuals determine, taken in order (QD1 latency before IOPS before
    bandwidth): a column is kept when it raises the rank of the columns kept so far."""
    keep: list[int] = []
    rank = 0
    top = float(np.linalg.norm(jac, axis=0).max()) if jac.size else 0.0
    for j in range(jac.shape[1]):
        if top <= 0:
            break
        sv = np.linalg.svd(jac[:, keep + [j]] / top, compute_uv=False)
        r = int(np.sum(sv > rtol))
        if r > rank:
            keep.append(j)
            rank = r
    return np.array(keep, dtype=int)


def _jacobian(fun, x: np.ndarray, h: float = 1e-6) -> np.ndarray:
    f0 = fun(x)
    cols = []
    for i in range(x.size):
        xx = x.copy()
        xx[i] += h
        cols.append((fun(xx) - f0) / h)
    return np.stack(cols, axis=1) if cols else np.zeros((f0.size, 0))


def _part_entry(dev: DeviceSpec) -> dict[str, Any]:
    """The fitted device as a catalog entry (``parts: devices:`` of a scenario), units spelled out."""
    e: dict[str, Any] = {"name": f"{dev.name}-fio", "kind": dev.kind}
    for f, alias, unit, k in (("read_latency_s", "read_latency", "us", 1e6), ("write_latency_s", "write_latency", "us", 1e6),
                              ("seq_read_bps", "seq_read", "MB/s", 1e-6), ("seq_write_bps", "seq_write", "MB/s", 1e-6)):
        v = getattr(dev, f)
        if v is not None:
            e[alias] = f"{v * k:.4g} {unit}"
    e["read_iops"] = round(float(dev.read_iops))
    e["write_iops"] = round(float(dev.write_iops))
    if dev.parallelism is not None:
        e["parallelism"] = dev.parallelism
    if dev.capacity_bytes is not None:
        e["capacity"] = f"{dev.capacity_bytes / 1e9:g} GB"
    e["source"] = f"fitted to fio measurements by densim calibrate, from {dev.name}"
    return e
