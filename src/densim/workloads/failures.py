"""Failure events: read from a trace (one row per failure: time, target, duration) or drawn from rates.

A *target* is a host or a failure domain (a named set of hosts: a rack, a PDU, a blade chassis).
:func:`failure_events` gathers the scenario's inline ``events``, its ``trace`` file and, with
``random``, failures drawn per target: times to failure exponential with mean MTBF (an annual
failure rate ``afr`` gives ``MTBF = -1 y / ln(1 - AFR)``, the rate whose one-year survival is
``1 - AFR``) alternating with repair times exponential with mean MTTR, from the run's seeded
generator, so a seed gives the same failures. A target's failures may not overlap (one target is
down or up); a host inside a failed domain that also fails on its own is down while either is.

:func:`host_down_intervals` expands the events to one ``(host, start, end, event)`` row per host
down, sorted by start: the arrays the failover event loop reads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from densim.errors import InputError

YEAR_S = 365.25 * 86400.0


@dataclass(frozen=True)
class StorageParts:
    """The drives and controllers of the datastores' arrays that can fail (storage model on).

    One row per part, named ``datastore:<name>/drive:<i>`` or ``datastore:<name>/controller:<i>``
    (``<name>@<host>`` for a ``per-host`` datastore, one array per host); ``mtbf_s`` is the catalog
    device's MTBF (from ``mtbf``, or ``afr``) or NaN when the catalog has neither. The capacity disks of
    an HCI datastore (``storage.hci``) follow, ``datastore:<hci name>@<host>/drive:<i>``, kind 2, ``ds``
    -1 (no array of the storage stage's: :mod:`densim.engine.hci` rebuilds their data across hosts).
    """

    names: list[str]
    ds: np.ndarray  # datastore index (storage.datastores)
    host: np.ndarray  # host index for a per-host datastore, -1 for a shared one
    kind: np.ndarray  # 0 drive, 1 controller, 2 HCI capacity disk
    index: np.ndarray  # drive or controller number within its array
    mtbf_s: np.ndarray  # catalog figure of a drive (NaN: none); NaN for controllers
    device: list[str]  # per datastore: the catalog device name

    @classmethod
    def of(cls, datastores, host_names, hci=None) -> "StorageParts":
        """Every part of ``datastores`` (plant ``DatastorePlant`` rows), then every disk of ``hci`` (the
        ``storage.hci`` spec, its ``disks_per_host`` in every host)."""
        names, ds, host, kind, index, mtbf = [], [], [], [], [], []
        for di, d in enumerate(datastores):
            sp, dev = d.spec, d.device
            m = float(dev.mtbf_s) if dev.mtbf_s is not None else (-YEAR_S / math.log1p(-dev.afr) if dev.afr is not None else math.nan)
            scopes = [(f"datastore:{sp.name}", -1)] if sp.scope == "shared" else \
                [(f"datastore:{sp.name}@{h}", hi) for hi, h in enumerate(host_names)]
            n_ctl = sp.controllers if d.controller is not None else 0
            for prefix, hi in scopes:
                for k, (what, n) in enumerate((("drive", sp.drives), ("controller", n_ctl))):
                    for i in range(n):
                        names.append(f"{prefix}/{what}:{i}")
                        ds.append(di)
                        host.append(hi)
                        kind.append(k)
                        index.append(i)
                        mtbf.append(m if k == 0 else math.nan)
        if hci is not None:
            for hi, h in enumerate(host_names):
                for i in range(int(hci.disks_per_host)):
                    names.append(f"datastore:{hci.name}@{h}/drive:{i}")
                    ds.append(-1)
                    host.append(hi)
                    kind.append(2)
                    index.append(i)
                    mtbf.append(math.nan)
        i64 = np.int64
        return cls(names, np.array(ds, i64), np.array(host, i64), np.array(kind, i64), np.array(index, i64), np.array(mtbf),
                   [d.spec.device for d in datastores])

    @property
    def n(self) -> int:
        return len(self.names)


@dataclass(frozen=True)
class FailureEvents:
    """Failures of targets (index into ``targets``: hosts first, then domains), sorted by time."""

    targets: list[str]  # host names, then domain names
    members: list[np.ndarray]  # per target: the host indices it takes down
    time_s: np.ndarray  # from the start of the run
    target: np.ndarray  # int64
    duration_s: np.ndarray
    origin: np.ndarray  # object: "trace row N", "events[N]", "random"
    storage: StorageParts | None = None  # targets from len(targets) - storage.n on are these parts
    first_storage: int = 0  # index of the first storage part in targets

    @property
    def n(self) -> int:
        return int(self.time_s.size)


MAX_TRACE_S = 1e12  # a failure time or duration beyond this (about 31,700 years) is a mistake, not a failure

def mtbf_s(rate) -> float:
    """Mean time between failures of a :class:`~densim.spec.failures.FailureRate` (s)."""
    if rate.mtbf_s is not None:
        return float(rate.mtbf_s)
    return -YEAR_S / math.log1p(-float(rate.afr))


def availability(mtbf: float, mttr: float) -> float:
    """Steady-state availability of a part that fails after MTBF on average and is repaired in MTTR: MTBF / (MTBF + MTTR)."""
    return mtbf / (mtbf + mttr)


def targets_of(spec, host_names: np.ndarray, host_groups: list[str], host_group: np.ndarray, where: str,
               storage: StorageParts | None = None):
    """(target names, member host indices per target, domain kinds): every host, then every domain of ``spec.domains``,
    then (``storage``) every drive and controller of the datastores, which take no host down (kind ``drive``/``controller``)."""
    index = {str(n): i for i, n in enumerate(host_names)}
    groups = {g: np.flatnonzero(host_group == gi) for gi, g in enumerate(host_groups)}
    names = [str(n) for n in host_names]
    members = [np.array([i], dtype=np.int64) for i in range(len(names))]
    kinds = ["host"] * len(names)
    for di, d in enumerate(spec.domains):
        if d.name in index:
            raise InputError(where, f"failures.domains[{di}].name", f"{d.name!r} is also a host name")
        got = []
        for k, h in enumerate(d.hosts):
            if h in index:
                got.append(np.array([index[h]], dtype=np.int64))
            elif h in groups:
                got.append(groups[h])
            else:
                raise InputError(where, f"failures.domains[{di}].hosts[{k}]", f"unknown host or host group {h!r}")
        names.append(d.name)
        members.append(np.unique(np.concatenate(got)))
        kinds.append(d.kind)
    if storage is not None:
        none = np.zeros(0, dtype=np.int64)
        names += storage.names
        members += [none] * storage.n
        kinds += ["controller" if k == 1 else "drive" for k in storage.kind]
    return names, members, kinds


def read_trace(path: Path) -> tuple[np.ndarray, list[str], np.ndarray]:
    """(time_s, target, duration_s) of a failure trace CSV with columns time, target, duration.

    Times and durations are seconds or unit strings ("1 d", "4 h").
    """
    import polars as pl

    from densim.units import UnitError, parse

    import io

    from densim.textio import read_text_file

    if not path.exists():
        raise InputError(path, "failures.trace", "file not found")
    text = read_text_file(path, "failure trace")  # a regular UTF-8 text file without NUL bytes, or one line
    try:
        df = pl.read_csv(io.StringIO(text), infer_schema=False)
    except Exception as e:  # noqa: BLE001 - polars raises several kinds for a malformed file
        raise InputError(path, "", f"not a CSV file: {str(e).splitlines()[0]}") from None
    missing = [c for c in ("time", "target", "duration") if c not in df.columns]
    if missing:
        raise InputError(path, "header", f"missing column(s) {', '.join(missing)} (need time, target, duration)")
    times, durs = [], []
    for col, out in (("time", times), ("duration", durs)):
        for i, v in enumerate(df[col].to_list()):
            try:
                x = parse(v.strip() if v is not None else v, "s")
            except (UnitError, ValueError, TypeError, AttributeError) as e:
                raise InputError(path, f"row {i + 2}: {col}", f"{v!r} is not a time ({e})") from None
            if x < 0 or (col == "duration" and x <= 0):
                raise InputError(path, f"row {i + 2}: {col}", f"{v!r} must be {'positive' if col == 'duration' else '>= 0'}")
            if x > MAX_TRACE_S:
                raise InputError(path, f"row {i + 2}: {col}", f"{v!r} is more than {MAX_TRACE_S:.0e} s (about 31,700 years)")
            out.append(x)
    targets = [str(t).strip() if t is not None else "" for t in df["target"].to_list()]
    return np.array(times, dtype=np.float64), targets, np.array(durs, dtype=np.float64)


def draw(rng: np.random.Generator, n_targets: int, mtbf: float, mttr: float, horizon_s: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Alternating renewal process per target, vectorised over targets: (target, start, duration) of
    every failure that starts before ``horizon_s`` (up time ~ Exp(MTBF) from 0, then down ~ Exp(MTTR))."""
    if n_targets == 0:
        return np.zeros(0, np.int64), np.zeros(0), np.zeros(0)
    # cycles per round: enough that most targets pass the horizon in one round
    k = int(min(10_000, max(4, math.ceil(2.0 * horizon_s / (mtbf + mttr)) + 4)))
    t_end = np.zeros(n_targets)
    tg, st, du = [], [], []
    alive = np.arange(n_targets)
    while alive.size:
        up = rng.exponential(mtbf, (alive.size, k))
        down = rng.exponential(mttr, (alive.size, k))
        cyc = np.cumsum(up + down, axis=1)
        start = t_end[alive, None] + cyc - down  # failure starts
        keep = start < horizon_s
        rows, cols = np.nonzero(keep)
        tg.append(alive[rows])
        st.append(start[rows, cols])
        du.append(down[rows, cols])
        t_end[alive] += cyc[:, -1]
        alive = alive[t_end[alive] < horizon_s]
    return np.concatenate(tg), np.concatenate(st), np.concatenate(du)


def failure_events(spec, where: str, base_dir: str, host_names: np.ndarray, host_groups: list[str], host_group: np.ndarray,
                   horizon_s: float, rng: np.random.Generator, storage: StorageParts | None = None) -> FailureEvents:
    """Every failure of the scenario's ``failures:`` section (see the module docstring)."""
    names, members, kinds = targets_of(spec, host_names, host_groups, host_group, where, storage)
    first_storage = len(names) - (storage.n if storage is not None else 0)
    what = "unknown host or failure domain" if storage is None else "unknown host, failure domain, drive or controller"
    index = {n: i for i, n in enumerate(names)}
    t, tg, d, origin = [], [], [], []
    for i, e in enumerate(spec.events):
        if e.target not in index:
            raise InputError(where, f"failures.events[{i}].target", f"{what} {e.target!r}{_storage_hint(e.target, storage)}")
        t.append(e.time_s)
        tg.append(index[e.target])
        d.append(e.duration_s)
        origin.append(f"events[{i}]")
    src_of = {o: where for o in origin}
    if spec.trace is not None:
        path = Path(spec.trace)
        if not path.is_absolute():
            path = Path(base_dir) / path
        tt, targets, dd = read_trace(path)
        for i, name in enumerate(targets):
            if name not in index:
                raise InputError(path, f"row {i + 2}: target", f"{what} {name!r}{_storage_hint(name, storage)}")
            origin.append(f"row {i + 2}")
            src_of[f"row {i + 2}"] = str(path)
        t += tt.tolist()
        tg += [index[n] for n in targets]
        d += dd.tolist()
    time_s = np.array(t, dtype=np.float64)
    target = np.array(tg, dtype=np.int64)
    dur = np.array(d, dtype=np.float64)
    orig = np.array(origin, dtype=object)
    _check_overlaps(time_s, target, dur, orig, names, src_of)
    if spec.random is not None:
        r = spec.random
        parts = []
        if r.host is not None:
            ht, hs, hd = draw(rng, len(host_names), mtbf_s(r.host), float(r.host.mttr_s), horizon_s)
            parts.append((ht, hs, hd))
        for kind, rate in r.domains.items():
            ids = np.array([i for i, k in enumerate(kinds) if k == kind and i >= len(host_names)], dtype=np.int64)
            if ids.size == 0:
                raise InputError(where, f"failures.random.domains.{kind}", f"no failure domain of kind {kind!r}")
            dt, ds, dd2 = draw(rng, ids.size, mtbf_s(rate), float(rate.mttr_s), horizon_s)
            parts.append((ids[dt], ds, dd2))
        for kind, rate in ((0, r.drive), (1, r.controller)):
            if rate is None:
                continue
            field = f"failures.random.{('drive', 'controller')[kind]}"
            if storage is None:
                raise InputError(where, field, "drive and controller failures need the storage model (storage: {model: queueing})")
            ids = np.flatnonzero(storage.kind == kind)
            if ids.size == 0:
                raise InputError(where, field, "no datastore has a " + ("drive" if kind == 0 else "controller"))
            given = rate.mtbf_s is not None or rate.afr is not None
            if given:
                m = np.full(ids.size, mtbf_s(rate))
            else:
                m = storage.mtbf_s[ids]
                if np.isnan(m).any():
                    dev = storage.device[int(storage.ds[ids[np.isnan(m)][0]])]
                    raise InputError(where, field + ".mtbf", f"catalog device {dev!r} has no mtbf or afr: give mtbf or afr here")
            for mv in np.unique(m):  # one draw per distinct MTBF (datastores of different devices)
                sel = ids[m == mv]
                dt, ds, dd2 = draw(rng, sel.size, float(mv), float(rate.mttr_s), horizon_s)
                parts.append((first_storage + sel[dt], ds, dd2))
        for pt, ps, pd in parts:
            target = np.r_[target, pt]
            time_s = np.r_[time_s, ps]
            dur = np.r_[dur, pd]
            orig = np.r_[orig, np.full(pt.size, "random", dtype=object)]
    order = np.lexsort((target, time_s))
    return FailureEvents(names, members, time_s[order], target[order], dur[order], orig[order], storage, first_storage)


def _storage_hint(name: str, storage: StorageParts | None) -> str:
    """What a misspelt storage target could have been."""
    if not name.startswith("datastore:"):
        return ""
    if storage is None:
        return " (drive and controller targets need the storage model)"
    stem = name.split("/")[0]
    have = sorted({n.split("/")[0] for n in storage.names})
    if stem not in have:
        return f" (datastores: {', '.join(have[:6])}{', ...' if len(have) > 6 else ''})"
    parts = [n.split("/")[1] for n in storage.names if n.startswith(stem + "/")]
    drives = sum(p.startswith("drive:") for p in parts)
    ctls = len(parts) - drives
    return f" ({stem} has drive:0..{drives - 1}" + (f" and controller:0..{ctls - 1})" if ctls else " and no controller)")


def _check_overlaps(time_s, target, dur, origin, names, src_of) -> None:
    """One target cannot fail again while it is down: a one-line error naming both rows."""
    if time_s.size < 2:
        return
    order = np.lexsort((time_s, target))
    ts, tg, te = time_s[order], target[order], (time_s + dur)[order]
    bad = np.flatnonzero((tg[1:] == tg[:-1]) & (ts[1:] < te[:-1]))
    if bad.size:
        a, b = order[bad[0]], order[bad[0] + 1]
        raise InputError(src_of[origin[b]], str(origin[b]),
                         f"target {names[target[b]]!r} fails at {time_s[b]:g} s while still down from {origin[a]} "
                         f"({time_s[a]:g} s to {time_s[a] + dur[a]:g} s): failures of one target may not overlap")


def host_down_intervals(ev: FailureEvents) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(host, start, end, event index) per host taken down by each event, sorted by start then host."""
    if ev.n == 0:
        z = np.zeros(0, dtype=np.int64)
        return z, np.zeros(0), np.zeros(0), z
    sizes = np.array([ev.members[t].size for t in ev.target], dtype=np.int64)
    host = np.concatenate([ev.members[t] for t in ev.target])
    event = np.repeat(np.arange(ev.n, dtype=np.int64), sizes)
    start = ev.time_s[event]
    end = start + ev.duration_s[event]
    order = np.lexsort((host, start))
    return host[order], start[order], end[order], event[order]
