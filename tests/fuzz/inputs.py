"""Valid inputs of every format, the files in them that the fuzzer damages, and how each is run.

A :class:`Format` writes a small valid input tree into a folder (``build``), names the files that
may be damaged (``targets``: path inside the folder -> :class:`~tests.fuzz.damage.Target`), and
gives the command line that reads it (``argv``: the entry point, its options, and an
:class:`~tests.fuzz.harness.Expect` naming the files a success writes).
"""

from __future__ import annotations

import functools
import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml

from tests.fuzz.damage import TableSpec, Target
from tests.fuzz.harness import Expect
from tests.planning.fixtures import rvtools_tables, small_workload, write_generic_csv, write_opendc, write_rvtools_xlsx

W = small_workload(4, 6)

CANDIDATES = {
    "qos": {"cpu_ready_pct": 5},
    "windows": 6,
    "candidates": [{"name": "small", "cpu": {"sockets": 2, "cores_per_socket": 8, "base_clock": "2.4 GHz"},
                    "memory": "128 GiB", "power": {"model": "linear", "idle": "70 W", "peak": "230 W"}, "price_usd": 5000}],
}

SCENARIO = {
    "name": "tiny",
    "cluster": {"hosts": [{"count": 2, "cpu": {"cores_per_socket": 8, "base_clock": "2 GHz"}, "memory": "64 GiB",
                           "power": {"model": "linear", "idle": "100 W", "peak": "250 W"}}]},
    "vms": [{"name": "web", "count": 6, "vcpus": 2, "vcpu_speed": "2 GHz", "memory": "4 GiB",
             "profile": {"kind": "diurnal", "mean": 0.3, "amplitude": 0.2, "noise": 0.05}}],
    "placement": {"policy": "first-fit", "cpu_overcommit": 2},
    "simulation": {"step": "5 min", "horizon": "2 h", "seed": 3},
}

IO = {
    "name": "hdd-raid10-open",
    "system": {"host": {"cores": 12, "clock": "3.33 GHz", "stack": "windows-storport-2010"},
               "controllers": [{"name": "p410", "model": "hp-smart-array-p410i", "count": 2}],
               "arrays": [{"name": "db", "device": "sas-10k-900gb", "drives": 16, "raid": "raid10", "controllers": "p410"}]},
    "workload": {"mode": "open", "iops": 1500, "read_fraction": 0.6, "block_size": "8 KiB"},
}

SIZE = {
    "name": "small-sizing",
    "target": {"iops": 20000, "max_latency": "2 ms", "latency_metric": "mean", "capacity": "1 TB"},
    "workload": {"read_fraction": 0.7, "block_size": "4 KiB"},
    "candidates": {"devices": ["intel-dc-s3700-400gb"], "raid": ["raid10"], "drives_max": 12,
                   "controllers": ["lsi-9211-8i"], "extra_controllers": 0, "cores": [8, 16], "clock": "2.6 GHz",
                   "stack": "linux-kernel-irq"},
    "top": 2,
}

HOST = {
    "name": "modern-2s-8180",
    "server": "2s-xeon-platinum-8180",
    "virtualization": {"model": "kvm", "hypervisor": {"paging": "ept", "host_hugepages": True, "network": "vhost", "storage": "virtio"},
                       "numa": {"policy": "auto"}, "power": {"turbo": True, "power_gating": True, "smt": True}},
    "run": {"seed": 1},
}

STUDY = {"name": "toy", "scenario": "base.yaml", "seed": 7, "replications": 2,
         "axes": {"placement.cpu_overcommit": [1, 2]}}


@dataclass
class Format:
    name: str
    build: Callable[[Path], None]
    targets: dict[str, Target]
    argv: Callable[[Path], tuple[list, Expect]]
    free: tuple[str, ...] = ()  # mapping keys holding free-form values

    def __repr__(self) -> str:
        return f"Format({self.name})"


def _yaml(path: Path, data) -> None:
    path.write_text(yaml.safe_dump(data, sort_keys=False))


# ------------------------------------------------------------------------------------ inventories


def _plan(fmt: str, inv: str) -> Callable[[Path], tuple[list, Expect]]:
    def argv(d: Path):
        out = d / "out"
        return (["plan", d / inv, "--candidates", d / "cand.yaml", "--out", out, "--format", fmt],
                Expect(names=[d], complete=[out / "summary.json"]))
    return argv


def _cand(d: Path) -> None:
    _yaml(d / "cand.yaml", CANDIDATES)


def build_generic(d: Path) -> None:
    _cand(d)
    write_generic_csv(d / "w.csv", W)


def build_azure(d: Path) -> None:
    _cand(d)
    az = d / "az"
    az.mkdir()
    with open(az / "vmtable.csv", "w") as fh:
        for i, name in enumerate(W.names):
            fh.write(f"vm-{name},sub{i},dep{i},0,{int(W.n_steps * W.step_s)},{W.cpu_pct[:, i].max()},"
                     f"{W.cpu_pct[:, i].mean()},{W.cpu_pct[:, i].max()},Interactive,{int(W.vcpus[i])},{int(W.mem_gib[i])}\n")
    with open(az / "vm_cpu_readings-file-1-of-1.csv", "w") as fh:
        for t in range(W.n_steps):
            for i, name in enumerate(W.names):
                p = W.cpu_pct[t, i]
                fh.write(f"{int(t * W.step_s)},vm-{name},{p},{p},{p}\n")


def build_rvtools_csv(d: Path) -> None:
    import csv

    _cand(d)
    folder = d / "rv"
    folder.mkdir()
    for sheet, (header, rows) in rvtools_tables(W, migration=True).items():
        with open(folder / f"RVTools_tab{sheet}.csv", "w", newline="") as fh:
            wr = csv.writer(fh, lineterminator="\n")
            wr.writerow(header)
            wr.writerows(rows)


def build_rvtools_xlsx(d: Path) -> None:
    _cand(d)
    write_rvtools_xlsx(d / "rv.xlsx", W, migration=True)  # with the readiness tabs (vSnapshot, vCD, vDisk, vTools)


BITBRAINS_HEADER = ["Timestamp [ms]", "CPU cores", "CPU capacity provisioned [MHZ]", "CPU usage [MHZ]", "CPU usage [%]",
                    "Memory capacity provisioned [KB]", "Memory usage [KB]", "Disk read throughput [KB/s]",
                    "Disk write throughput [KB/s]", "Network received throughput [KB/s]", "Network transmitted throughput [KB/s]"]


def build_bitbrains(d: Path) -> None:
    _cand(d)
    folder = d / "bb"
    folder.mkdir()
    for i, name in enumerate(W.names):
        cap = W.vcpus[i] * W.vcpu_mhz
        lines = [";\t".join(BITBRAINS_HEADER)]
        for t in range(W.n_steps):
            lines.append(";\t".join(str(x) for x in [
                int(W.start_s + t * W.step_s), int(W.vcpus[i]), cap, W.cpu_mhz[t, i], W.cpu_pct[t, i],
                W.mem_gib[i] * 1024 * 1024, W.mem_used_mib[t, i] * 1024, W.disk_read_kBps[t, i], W.disk_write_kBps[t, i], 0.0, 0.0]))
        (folder / f"{name}.csv").write_text("\n".join(lines) + "\n")


def build_planetlab(d: Path) -> None:
    _cand(d)
    folder = d / "pl"
    folder.mkdir()
    for i, name in enumerate(W.names):
        (folder / f"vm{name}").write_text("\n".join(str(int(p)) for p in W.cpu_pct[:, i]) + "\n")


def build_opendc(d: Path) -> None:
    _cand(d)
    write_opendc(d / "odc", W)


ACTIVE_RV = tuple(range(len(W.names)))  # data rows of powered-on, non-template VMs (a template and a powered-off VM follow)
_VINFO_H, _ = rvtools_tables(W)["vInfo"]
_VHOST_H, _ = rvtools_tables(W)["vHost"]
_VCPU_H, _ = rvtools_tables(W)["vCPU"]
_VMEM_H, _ = rvtools_tables(W)["vMemory"]

INVENTORIES = {
    "generic-csv": Format("generic-csv", build_generic, {
        "w.csv": Target("table", TableSpec(",", True, required=tuple(range(1, 9)), id_col=0, drop_required=(1, 2, 4, 5, 7, 8))),
    }, _plan("generic", "w.csv")),
    "azure": Format("azure", build_azure, {
        "az/vmtable.csv": Target("table", TableSpec(",", False, required=(9, 10), id_col=0, unique_rows=True)),
        "az/vm_cpu_readings-file-1-of-1.csv": Target("table", TableSpec(",", False, required=(0, 4), id_col=1)),
    }, _plan("azure", "az")),
    "rvtools-csv": Format("rvtools-csv", build_rvtools_csv, {
        "rv/RVTools_tabvInfo.csv": Target("table", TableSpec(",", True, required=(_VINFO_H.index("CPUs"), _VINFO_H.index("Memory")),
                                                              optional=(_VINFO_H.index("Active Memory"),),
                                                              id_col=0, active_rows=ACTIVE_RV, unique_rows=True, sep_ok=(";",))),
        "rv/RVTools_tabvHost.csv": Target("table", TableSpec(",", True, optional=(_VHOST_H.index("Speed"), _VHOST_H.index("CPU usage %")),
                                                              sep_ok=(";",), nonempty=False, header_required=False)),
        "rv/RVTools_tabvCPU.csv": Target("table", TableSpec(",", True, optional=(_VCPU_H.index("Overall"),), sep_ok=(";",), nonempty=False,
                                                             header_required=False)),
        "rv/RVTools_tabvMemory.csv": Target("table", TableSpec(",", True, optional=(_VMEM_H.index("Active"),), sep_ok=(";",), nonempty=False,
                                                                header_required=False)),
        # the readiness tabs: damage makes a check unknown or flags VMs, never a crash
        "rv/RVTools_tabvDisk.csv": Target("table", TableSpec(",", True, sep_ok=(";",), nonempty=False, header_required=False)),
        "rv/RVTools_tabvCD.csv": Target("table", TableSpec(",", True, sep_ok=(";",), nonempty=False, header_required=False)),
    }, _plan("rvtools", "rv")),
    "rvtools-xlsx": Format("rvtools-xlsx", build_rvtools_xlsx, {
        "rv.xlsx": Target("xlsx", text=False, xlsx_sheets={
            "vInfo": {"required": ["CPUs", "Memory", "VM"], "active": [r + 2 for r in ACTIVE_RV], "required_sheet": True, "unique": True},
            "vHost": {}, "vCPU": {}, "vMemory": {}, "vSnapshot": {}, "vCD": {}, "vDisk": {}, "vTools": {}}),
    }, _plan("rvtools", "rv.xlsx")),
    "bitbrains": Format("bitbrains", build_bitbrains, {
        "bb/1.csv": Target("table", TableSpec(";\t", True, required=(0, 1, 2, 3, 5, 6, 7, 8, 9, 10), sep_ok=(";",))),
        "bb/3.csv": Target("table", TableSpec(";\t", True, required=(0, 1, 2, 3, 5, 6, 7, 8, 9, 10), sep_ok=(";",))),
    }, _plan("bitbrains", "bb")),
    "planetlab": Format("planetlab", build_planetlab, {
        "pl/vm1": Target("lines", dir_skipped=True),
        "pl/vm4": Target("lines", dir_skipped=True),
    }, _plan("planetlab", "pl")),
    "opendc": Format("opendc", build_opendc, {
        "odc/tasks.parquet": Target("parquet", text=False, parquet_required=("id", "submission_time", "duration", "cpu_count",
                                                                              "cpu_capacity", "mem_capacity"), parquet_unique="id"),
        "odc/fragments.parquet": Target("parquet", text=False, parquet_required=("id", "duration", "cpu_usage"), parquet_ref="id",
                                        parquet_nonempty=False),
    }, _plan("opendc", "odc")),
}


# ------------------------------------------------------------------------------------ specs


def _spec(name: str, data: dict, file: str, argv, *, as_json: bool = False, free=(), extra: Callable[[Path], None] | None = None) -> Format:
    def build(d: Path) -> None:
        if as_json:
            (d / file).write_text(json.dumps(data, indent=1))
        else:
            _yaml(d / file, data)
        if extra is not None:
            extra(d)
    return Format(name, build, {file: Target("mapping", json=as_json)}, argv, free=free)


def _run(file: str):
    def argv(d: Path):
        out = d / "out"
        return (["run", d / file, "--out", out, "--no-progress", "--no-report"],
                Expect(names=[d / file], complete=[out / "summary.json"], multi_line=True))
    return argv


def _validate(file: str):
    def argv(d: Path):
        return ["validate", d / file], Expect(names=[d / file], multi_line=True)
    return argv


def _simple(cmd: list, file: str, out_name: str | None = None, extra_args: tuple = (), multi_line: bool = False):
    def argv(d: Path):
        args = [*cmd, d / file, *extra_args]
        complete = []
        if out_name:
            args += ["--out", d / out_name]  # a folder: the result is OUT/summary.json
            complete = [d / out_name / "summary.json"]
        return args, Expect(names=[d / file], complete=complete, multi_line=multi_line)
    return argv


def _plan_spec(d: Path):
    out = d / "out"
    return (["plan", d / "w.csv", "--candidates", d / "cand.yaml", "--out", out],
            Expect(names=[d / "cand.yaml"], complete=[out / "summary.json"]))


def _study(d: Path):
    return (["sweep", d / "study.yaml", "--out", d / "results", "--backend", "inprocess", "--no-progress"],
            Expect(names=[d / "study.yaml", d / "base.yaml"], complete_json=[(d / "results", "*/manifest.json", "complete")],
                   multi_line=True))


def _base_yaml(d: Path) -> None:
    _yaml(d / "base.yaml", SCENARIO)


def _study_files(d: Path) -> None:
    _yaml(d / "study.yaml", STUDY)


@functools.cache
def tiles_result_text() -> str:
    from densim.tools.tiles.core import BenchHost, run_bench

    return json.dumps(run_bench(BenchHost.model_validate(HOST)), indent=2)


def _tiles_pair(d: Path) -> None:
    (d / "b.json").write_text(tiles_result_text())


def _compare(d: Path):
    return ["bench", "compare", d / "a.json", d / "b.json"], Expect(names=[d / "a.json"])


SPECS = {
    "scenario-yaml-validate": _spec("scenario-yaml-validate", SCENARIO, "s.yaml", _validate("s.yaml"), free=("params", "workload")),
    "scenario-yaml-run": _spec("scenario-yaml-run", SCENARIO, "s.yaml", _run("s.yaml"), free=("params", "workload")),
    "scenario-json-run": _spec("scenario-json-run", SCENARIO, "s.json", _run("s.json"), as_json=True, free=("params", "workload")),
    "io-yaml": _spec("io-yaml", IO, "io.yaml", _simple(["io"], "io.yaml", "io-out", multi_line=True), free=("parts",)),
    "size-yaml": _spec("size-yaml", SIZE, "size.yaml", _simple(["size"], "size.yaml", "size-out", multi_line=True), free=("parts",)),
    "plan-spec": _spec("plan-spec", CANDIDATES, "cand.yaml", _plan_spec, extra=lambda d: write_generic_csv(d / "w.csv", W)),
    "tiles-host": _spec("tiles-host", HOST, "host.yaml", _simple(["bench", "tiles"], "host.yaml", "tiles")),
    "sweep-study": _spec("sweep-study", STUDY, "study.yaml", _study, extra=_base_yaml),
    # the study's axis overrides placement.cpu_overcommit in every point: any base value is harmless
    "sweep-base": _spec("sweep-base", SCENARIO, "base.yaml", _study, extra=_study_files,
                        free=("params", "workload", "cpu_overcommit")),
}
# tasks that arrive and leave (issue 14): an OpenDC trace replayed by `densim run` with a scheduling section
TASKS_SCENARIO = {
    "name": "tasks",
    "cluster": {"hosts": [{"count": 2, "cpu": {"cores_per_socket": 8, "base_clock": "2 GHz"}, "memory": "64 GiB",
                           "power": {"model": "sqrt", "idle": "40 W", "peak": "180 W"}}]},
    "vms": [{"name": "t", "trace": {"format": "opendc", "path": "odc"}}],
    "placement": {"policy": "first-fit"},
    "scheduling": {"lifetimes": "on", "queue": "fifo", "idle_hosts": "off", "off_after": "10 min", "boot_energy": "30 kJ"},
    "simulation": {"step": "5 min", "seed": 3},
}
SPECS["scenario-tasks-run"] = _spec("scenario-tasks-run", TASKS_SCENARIO, "s.yaml", _run("s.yaml"), free=("params", "workload"),
                                    extra=lambda d: write_opendc(d / "odc", W))


def build_opendc_run(d: Path) -> None:
    _yaml(d / "s.yaml", TASKS_SCENARIO)
    write_opendc(d / "odc", W)


INVENTORIES["opendc-run"] = Format("opendc-run", build_opendc_run, {
    "odc/tasks.parquet": INVENTORIES["opendc"].targets["odc/tasks.parquet"],
    "odc/fragments.parquet": INVENTORIES["opendc"].targets["odc/fragments.parquet"],
}, lambda d: (["run", d / "s.yaml", "--out", d / "out", "--no-progress", "--no-report"],
              Expect(names=[d / "odc"], complete=[d / "out" / "summary.json"], multi_line=True)))
SPECS["tiles-result"] = Format("tiles-result", lambda d: ((d / "a.json").write_text(tiles_result_text()), _tiles_pair(d)),
                               {"a.json": Target("mapping", json=True, strict_keys=False)}, _compare)


ALL = {**INVENTORIES, **SPECS}


def build(fmt: Format, d: Path) -> None:
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    fmt.build(d)


# ------------------------------------------------------------------------------------ results store


@functools.cache
def _store_template() -> Path:
    """A finished two-point, one-replication engine sweep (built once per process)."""
    import tempfile

    from densim.tools.sweep import load_sweep, run_sweep

    d = Path(tempfile.mkdtemp(prefix="densim-fuzz-store-"))
    _yaml(d / "base.yaml", SCENARIO)
    _yaml(d / "study.yaml", {**STUDY, "replications": 1})
    res = run_sweep(load_sweep(d / "study.yaml"), out=d / "results", backend="inprocess")
    assert res.ok
    return d


def _store_targets() -> dict[str, Target]:
    root = _store_template() / "results" / "toy"
    first = sorted(root.glob("scenario=*/seed=*"))[0].relative_to(_store_template())
    files = ["summary.parquet", "hosts.parquet", "task.json", "summary.json", "vms.parquet"]
    out = {str(first / f): Target("bytes", text=f.endswith(".json"), required_file=f != "summary.json") for f in files}
    out["results/toy/manifest.json"] = Target("bytes", text=True)
    out["results/toy/scenarios.parquet"] = Target("bytes", text=False)
    return out


def build_store(d: Path) -> None:
    shutil.copytree(_store_template(), d, dirs_exist_ok=True)


def _query(d: Path):
    return (["query", d / "study.yaml", "--out", d / "results", "--format", "csv", "SELECT count(*) AS n FROM results"],
            Expect(names=[d / "results", "query"]))


def _report(d: Path):
    return (["report", d / "study.yaml", "--out", d / "results", "--html", d / "report.html"],
            Expect(names=[d / "results", "query"], complete=[d / "report.html"]))


class _LazyTargets(dict):
    """Target paths depend on the store's hashed folder names: computed on first use."""

    def _fill(self) -> None:
        if not super().__len__():
            self.update(_store_targets())

    def __iter__(self):
        self._fill()
        return super().__iter__()

    def __getitem__(self, k):
        self._fill()
        return super().__getitem__(k)

    def __len__(self):
        self._fill()
        return super().__len__()

    def keys(self):
        self._fill()
        return super().keys()


STORES = {
    "store-query": Format("store-query", build_store, _LazyTargets(), _query),
    "store-report": Format("store-report", build_store, _LazyTargets(), _report),
}
ALL.update(STORES)


# ------------------------------------------------------------------------------------ issue 16/17 inputs
# failures from a trace (time, target, duration) replayed by `densim run`
FAIL_SCENARIO = {**SCENARIO, "name": "fail",
                 "cluster": {"hosts": [{**SCENARIO["cluster"]["hosts"][0], "name": "h"}]},
                 "failures": {"trace": "f.csv", "ha": {"admission": "n_plus_k"}}}


def build_failure_trace(d: Path) -> None:
    _yaml(d / "s.yaml", FAIL_SCENARIO)
    (d / "f.csv").write_text("time,target,duration\n30 min,h-0,20 min\n1 h,h-1,10 min\n")


INVENTORIES["failure-trace-run"] = Format("failure-trace-run", build_failure_trace, {
    "f.csv": Target("table", TableSpec(",", True, required=(0, 1, 2), id_col=1, unique_rows=True)),
}, lambda d: (["run", d / "s.yaml", "--out", d / "out", "--no-progress", "--no-report"],
              Expect(names=[d / "f.csv"], complete=[d / "out" / "summary.json"], multi_line=True)))

# a carbon grid-intensity series (time_s, gco2_per_kwh) read by the run's carbon stage
CARBON_SCENARIO = {**SCENARIO, "name": "carbon", "carbon": {"grid_series": {"file": "g.csv"}, "pue": 1.2}}


def build_grid_series(d: Path) -> None:
    _yaml(d / "s.yaml", CARBON_SCENARIO)
    (d / "g.csv").write_text("time_s,gco2_per_kwh\n0,300\n1800,250\n3600,420\n")


INVENTORIES["grid-series-run"] = Format("grid-series-run", build_grid_series, {
    "g.csv": Target("table", TableSpec(",", True, required=(0, 1))),
}, lambda d: (["run", d / "s.yaml", "--out", d / "out", "--no-progress", "--no-report"],
              Expect(names=[d / "g.csv"], complete=[d / "out" / "summary.json"], multi_line=True)))

# a cluster history for `densim forecast`
FORECAST = {"forecast": {"horizon_days": 60, "replications": 20, "seed": 5,
                         "current": {"name": "c", "hosts": 4, "cpu": {"sockets": 2, "cores_per_socket": 8, "base_clock": "2.4 GHz"},
                                     "memory": "256 GiB"}}}


def build_history(d: Path) -> None:
    _yaml(d / "f.yaml", FORECAST)
    rows = ["date,vms,vcpus,cpu_used_mhz,mem_used_gib"]
    for i in range(21):
        rows.append(f"2026-01-{i + 1:02d},{40 + i},{160 + 4 * i},{20000 + 300 * i},{300 + 3 * i}")
    (d / "h.csv").write_text("\n".join(rows) + "\n")


INVENTORIES["forecast-history"] = Format("forecast-history", build_history, {
    # several rows of one date are samples of that day (reduced by forecast.statistic): a repeated row is no error
    # vms is optional, and so is either of cpu_used_mhz and mem_used_gib; vcpus is needed with cpu_used_mhz
    "h.csv": Target("table", TableSpec(",", True, required=(0, 1, 2, 3, 4), id_col=0, drop_required=(0, 2))),
}, lambda d: (["forecast", d / "h.csv", "--spec", d / "f.yaml", "--out", d / "out", "--no-progress"],
              Expect(names=[d / "h.csv"], complete=[d / "out" / "summary.json"])))
ALL.update({k: INVENTORIES[k] for k in ("failure-trace-run", "grid-series-run", "forecast-history")})
