"""The storage tools: ``densim io`` (solve a storage system under a workload, or profile a fio
result), ``densim calibrate`` (fit a catalog device to fio measurements) and ``densim size`` (the
cheapest drives x RAID x controllers x cores meeting a target). All return plain dicts."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any


def run_io(path: str | Path) -> dict[str, Any]:
    """Solve the storage-only scenario in ``path``; returns the result as a dict.

    A fio result (``fio --output-format=json``, with or without fio's text before the JSON) is
    recognised and read as a device profile instead (:func:`run_fio_profile`)."""
    from densim.models.storage.fio import looks_like_fio

    if looks_like_fio(path):
        return run_fio_profile(path)
    from densim.models.storage import IoPattern, arrays_power_w, build_stations, solve_closed, solve_open
    from densim.plant.storage import resolve_system
    from densim.spec.loader import load_spec
    from densim.spec.storage import IoScenario

    sc = load_spec(path, IoScenario, what="io file")
    arrays, cpu, server, encl, _ = resolve_system(sc, path)
    w = sc.workload
    pattern = IoPattern(w.read_fraction, w.block_size_bytes, w.access == "sequential", w.arrival_cv2, w.service_cv2)
    stations = build_stations(arrays, cpu, pattern)
    if w.mode == "open":
        res = solve_open(stations, float(w.iops), pattern)
    else:
        res = solve_closed(stations, w.outstanding, w.think_time_s, pattern)
    out = res.as_dict()
    out["scenario"] = sc.name
    if cpu is None:  # said, not silently assumed unlimited
        out["not_modelled"] = ["host CPU: no I/O stack cost (system.host.stack or cycles_per_io), so it bounds nothing"]
    out["stations"] = len(stations)
    out["drives"] = sum(a.drives for a in arrays)
    out["usable_bytes"] = sum(a.usable_bytes for a in arrays)
    out["storage_power_w"] = arrays_power_w(arrays, res) + sum(e.power_w * n for e, n in encl)
    out["enclosure_rack_units"] = sum(e.rack_units * n for e, n in encl)
    if w.mode == "closed":
        out["little_check"] = {"outstanding": res.outstanding, "x_times_r_plus_z": res.throughput_iops * (res.mean_latency_s + res.think_s)}
    return out


def run_fio_profile(path: str | Path) -> dict[str, Any]:
    """The device profile of the fio result ``path``: IOPS, bandwidth and latency per rw mode, block size and depth."""
    from densim.models.storage.fio import profile, read_fio

    return profile(read_fio(path))


def run_calibrate(path: str | Path, device: str) -> dict[str, Any]:
    """Fit the catalog device ``device`` to the fio result ``path``; returns the fitted figures and the error per point."""
    from densim.catalog.core import CatalogError, builtin_catalog
    from densim.errors import InputError
    from densim.models.devices import DeviceSpec
    from densim.models.storage.fio import fit_device, read_fio

    run = read_fio(path)
    try:
        dev = builtin_catalog().get("devices", device, DeviceSpec)
    except CatalogError as exc:
        raise InputError("--device", "", str(exc).strip("'\"")) from None
    out = fit_device(dev, run.points, source=str(path))
    out.update({"kind": "fio-calibration", "file": run.path, "fio_version": run.version, "notes": run.notes})
    return out


def run_size(path: str | Path, check: Callable[[Any], None] | None = None) -> dict[str, Any]:
    """Search the candidate set of the sizing file ``path``; returns winner and runners-up.

    ``check(scenario)`` runs after the file is loaded and resolved and before the search (the
    command line refuses a search space above ``--max-configurations`` there)."""
    from densim.models.storage import IoPattern
    from densim.models.storage.sizing import Costs, Target, distinct, search
    from densim.plant.storage import load_sizing

    sc, parts = load_sizing(path)
    if check is not None:
        check(sc)
    cand = sc.candidates
    devices, ctls, encl, cycles = parts.devices, parts.controllers, parts.enclosure, parts.cycles_per_io
    t = sc.target
    target = Target(
        iops=t.iops, max_latency_s=t.max_latency_s, latency_metric=t.latency_metric, capacity_bytes=t.capacity_bytes,
        users=t.users, iops_per_user=t.iops_per_user or 0.0, requests_per_user_s=t.requests_per_user_s or 0.0,
        ios_per_request=t.ios_per_request, cpu_per_request_s=t.cpu_per_request_s, max_response_s=t.max_response_s,
        max_cpu_utilisation=t.max_cpu_utilisation,
    )
    w = sc.workload
    pattern = IoPattern(w.read_fraction, w.block_size_bytes, w.access == "sequential", w.arrival_cv2, w.service_cv2)
    costs = Costs(**sc.costs.model_dump())
    found, tried = search(devices, list(cand.raid), ctls, list(cand.cores), cand.clock_mhz * 1e6, cycles, pattern,
                          target, costs, cand.drives_min, cand.drives_max, cand.extra_controllers, encl)
    best = distinct(found, sc.top)
    return {
        "scenario": sc.name,
        "target": sc.target.model_dump(exclude_none=True),
        "evaluated": tried,
        "feasible_combinations": len(found),
        "winner": best[0].as_dict() if best else None,
        "runners_up": [c.as_dict() for c in best[1:]],
    }
