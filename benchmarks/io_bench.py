"""Benchmark: a closed workload of 1,000 outstanding I/Os over 30 devices and 5 controllers.

Run: ``PYTHONPATH=src python benchmarks/io_bench.py`` (prints JSON). Target: the MVA solve takes
milliseconds. Also times an open solve of the same system and the 500k-IOPS sizing search.
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

from densim.models.devices import DeviceSpec
from densim.models.storage import ArrayUnit, ControllerSpec, HostCpuIo, IoPattern, build_stations, solve_closed, solve_open
from densim.catalog.core import builtin_catalog


def _time(fn, repeat: int) -> tuple[float, object]:
    times = []
    out = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def main() -> dict:
    cat = builtin_catalog()
    dev = cat.get("devices", "intel-dc-s3700-400gb", DeviceSpec)
    hba = cat.get("controllers", "lsi-9210-8i", ControllerSpec)
    arrays = [ArrayUnit(f"set{i}", dev, 6, "raid0", hba, 1) for i in range(5)]  # 30 devices, 5 controllers
    pattern = IoPattern(0.7, 4096)
    stations = build_stations(arrays, HostCpuIo(16, 2.6e9, 15000), pattern)
    build_s, _ = _time(lambda: build_stations(arrays, HostCpuIo(16, 2.6e9, 15000), pattern), 20)
    closed_s, res = _time(lambda: solve_closed(stations, 1000, 0.0, pattern), 20)
    open_s, ores = _time(lambda: solve_open(stations, 0.8 * res.max_iops, pattern), 20)
    out = {
        "benchmark": "io_bench",
        "devices": 30,
        "controllers": 5,
        "stations": len(stations),
        "outstanding": 1000,
        "closed_solve_ms": closed_s * 1e3,
        "build_stations_ms": build_s * 1e3,
        "open_solve_ms": open_s * 1e3,
        "closed_throughput_iops": res.throughput_iops,
        "closed_mean_latency_s": res.mean_latency_s,
        "closed_bottleneck": res.bottleneck,
        "little_residual": res.little_residual(),
        "open_mean_latency_s": ores.mean_latency_s,
    }
    example = Path(__file__).resolve().parents[1] / "examples/storage/size-500k-iops.yaml"
    if example.exists():
        from densim.cli.commands.storage import run_size

        size_s, sized = _time(lambda: run_size(example), 1)
        out["sizing_500k_s"] = size_s
        out["sizing_evaluated"] = sized["evaluated"]
    return out


if __name__ == "__main__":
    print(json.dumps(main(), indent=2))
