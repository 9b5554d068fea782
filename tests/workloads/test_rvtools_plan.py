"""RVTools as a snapshot, vInfo-only exports, today's hosts from vHost, and a plan with no feasible candidate (issue 14)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from densim.cli.main import app
from densim.errors import InputError
from densim.tools.plan.capacity import SNAPSHOT_SKIP, SNAPSHOT_WARN, load_plan_spec, plan
from densim.workloads.formats import load_inventory
from tests.planning.fixtures import VINFO_HEADER, rvtools_tables, small_workload, write_rvtools_csv, write_rvtools_xlsx

ROOT = Path(__file__).resolve().parents[2]
CANDIDATES = ROOT / "examples" / "planning" / "candidates.yaml"  # rightsizing enabled
W = small_workload()
GIB = 2**30


def _vinfo_only(folder: Path, rows: list[list]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "RVTools_tabvInfo.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow([h for h in VINFO_HEADER if h != "Active Memory"])
        for r in rows:
            w.writerow(r)
    return folder


def _vm(name: str, vcpus: int, mem_mib: int) -> list:
    return [name, "poweredOn", False, False, "green", "", vcpus, 0.1, mem_mib, 1, 1, 40960, 45000, 30000, 30000, "DC1", "C1",
            "esx01", "Linux", f"id-{name}", "vc"]


def _plan(args: list[str]):
    return CliRunner().invoke(app, ["plan", *map(str, args)])


# ------------------------------------------------------------------------------------ vInfo only


def test_vinfo_only_has_no_made_up_demand(tmp_path):
    # Why every candidate was infeasible before: without vCPU/vHost tabs the old rule made each VM busy on
    # all its vCPUs at the default 2,400 MHz. A 32-vCPU VM then demanded 32 x 2,400 = 76,800 MHz, more than
    # a whole 2 x E5-2698 v3 host delivers (32 cores x 2,300 MHz = 73,600 MHz), so it "fit no empty host:
    # demand" on every candidate (and 20 16-vCPU VMs needed 21 hosts, one each plus the spare).
    folder = _vinfo_only(tmp_path / "rv", [_vm("db", 32, 65536), _vm("web", 2, 4096), _vm("app", 4, 8192)])
    inv = load_inventory(folder)
    assert inv.cpu_mhz is None and inv.mem_used_bytes is None
    assert "no CPU usage exported" in inv.demand_rule
    res = plan(inv, load_plan_spec(CANDIDATES))
    ok = [r for r in res.results if r.feasible]
    assert ok, [r.reason for r in res.results]
    big = next(r for r in res.results if r.name.startswith("2x E5-2698v3 768G"))
    # 38 vCPUs and 76 GiB on one host (32 physical cores x 16 vCPUs per core = 512 vCPUs, 760 GiB usable) plus one HA spare
    assert big.feasible and big.n_hosts == 2
    assert np.isnan(big.ready_pct_worst) and big.row()["ready_pct_worst"] is None
    assert any("CPU Ready not checked" in n for n in res.notes)


def test_vinfo_only_plan_exits_0_and_names_a_best(tmp_path):
    folder = _vinfo_only(tmp_path / "rv", [_vm("db", 32, 65536), _vm("web", 2, 4096)])
    out = tmp_path / "out"
    r = _plan([folder, "-c", CANDIDATES, "-o", out])
    assert r.exit_code == 0, r.output
    s = json.loads((out / "summary.json").read_text())
    assert s["best"] is not None
    assert any("right-sizing skipped: the inventory has no demand series" in n for n in s["notes"])
    assert "CPU Ready not checked" in (out / "report.html").read_text()


# ------------------------------------------------------------------------------------ snapshot right-sizing


def test_snapshot_is_not_right_sized_unless_asked(tmp_path):
    inv = load_inventory(write_rvtools_xlsx(tmp_path / "e.xlsx", W))
    assert inv.is_snapshot
    spec = load_plan_spec(CANDIDATES)
    assert spec.rightsizing.enabled
    res = plan(inv, spec)
    assert res.rightsizing is None and SNAPSHOT_SKIP in res.notes
    asked = spec.model_copy(update={"rightsizing": spec.rightsizing.model_copy(update={"from_snapshot": True})})
    res2 = plan(inv, asked)
    assert res2.rightsizing is not None and SNAPSHOT_WARN in res2.notes
    assert "one sample says nothing about peaks" in SNAPSHOT_WARN


def test_rightsize_snapshot_cli_flag(tmp_path):
    path = write_rvtools_xlsx(tmp_path / "e.xlsx", W)
    out = tmp_path / "out"
    r = _plan([path, "-c", CANDIDATES, "-o", out, "--rightsize-snapshot"])
    assert r.exit_code == 0, r.output
    s = json.loads((out / "summary.json").read_text())
    assert "rightsizing" in s and any("right-sized from a single sample" in n for n in s["notes"])
    assert "one sample says nothing about peaks" in " ".join(r.output.split())


def test_a_time_series_is_right_sized_without_a_note(tmp_path):
    from tests.planning.fixtures import write_generic_csv

    inv = load_inventory(write_generic_csv(tmp_path / "w.csv", small_workload(4, 20)))
    assert not inv.is_snapshot
    res = plan(inv, load_plan_spec(CANDIDATES))
    assert res.rightsizing is not None and not res.notes


# ------------------------------------------------------------------------------------ no feasible candidate


def test_no_feasible_candidate_exits_1_naming_the_closest_and_every_reason(tmp_path):
    spec = yaml.safe_load(CANDIDATES.read_text())
    base = spec["candidates"][0]
    small = dict(base, name="small-64G", memory="64 GiB", hypervisor_memory="8 GiB")
    broken = dict(base, name="broken", memory="8 GiB", hypervisor_memory="8 GiB")
    spec["candidates"] = [broken, small]
    cands = tmp_path / "c.yaml"
    cands.write_text(yaml.safe_dump(spec))
    # a 128 GiB VM fits no 64 GiB host; 'broken' keeps all its memory for the hypervisor
    folder = _vinfo_only(tmp_path / "rv", [_vm("huge", 4, 131072), _vm("web", 2, 4096)])
    out = tmp_path / "out"
    r = _plan([folder, "-c", cands, "-o", out])
    assert r.exit_code == 1, r.output
    lines = r.stderr.strip().splitlines()
    first = lines[0]
    assert first.startswith("densim: error: no candidate is feasible (2 tried); the closest, small-64G, fails: "
                            "1 VM(s) fit no empty host, e.g. huge")
    assert "capacity (" in first and "configured memory" in first
    # then one line per candidate with its reason
    assert sorted(ln.split(":")[2].strip() for ln in lines[1:]) == ["broken", "small-64G"]
    assert "best: None" not in r.stdout
    s = json.loads((out / "summary.json").read_text())  # outputs are still written
    assert s["best"] is None and s["closest"]["candidate"] == "small-64G" and s["closest"]["failed"] == "fit"


# ------------------------------------------------------------------------------------ vHost: today's hosts


def test_vhost_is_read_as_todays_hosts(tmp_path):
    inv = load_inventory(write_rvtools_xlsx(tmp_path / "e.xlsx", W))
    h = inv.hosts
    assert h is not None and h.n_hosts == 1
    # fixture: esx01, Dell Inc. PowerEdge M630, 2 sockets x 16 cores, 2,400 MHz, # Memory 262,144 MiB
    assert h.by_model() == [{"model": "Dell Inc. PowerEdge M630", "cpu_model": "Intel(R) Xeon(R) CPU E5-2698 v3 @ 2.30GHz",
                             "sockets": 2, "cores": 32, "core_mhz": 2400.0, "memory_gib": 256.0, "count": 1}]
    assert inv.subset(np.arange(2)).hosts is h


def test_vhost_from_the_csv_export(tmp_path):
    inv = load_inventory(write_rvtools_csv(tmp_path / "csv", W))
    assert inv.hosts.by_model()[0]["cores"] == 32 and inv.hosts.by_model()[0]["memory_gib"] == 256.0


def test_vhost_memory_in_bytes_is_recognised(tmp_path):
    folder = tmp_path / "csv"
    write_rvtools_csv(folder, W)
    f = folder / "RVTools_tabvHost.csv"
    rows = list(csv.reader(f.read_text().splitlines()))
    col = rows[0].index("vHost#Memory")
    rows[1][col] = str(256 * GIB)
    rows.append(list(rows[1]))
    rows[2][0] = "esx02"
    with open(f, "w", newline="") as fh:
        csv.writer(fh).writerows(rows)
    inv = load_inventory(folder)
    assert inv.hosts.by_model()[0]["memory_gib"] == 256.0 and inv.hosts.by_model()[0]["count"] == 2
    assert any("read as bytes" in n for n in inv.notes)


def test_hosts_today_in_the_plan_summary(tmp_path):
    out = tmp_path / "out"
    r = _plan([write_rvtools_xlsx(tmp_path / "e.xlsx", W), "-c", CANDIDATES, "-o", out])
    assert r.exit_code == 0, r.output
    s = json.loads((out / "summary.json").read_text())
    assert s["hosts_today"][0]["model"] == "Dell Inc. PowerEdge M630"
    assert "Hosts today" in (out / "report.html").read_text()


def test_vinfo_memory_in_bytes_is_refused(tmp_path):
    # 8 GiB written in bytes into the MiB 'Memory' column: 8 EiB
    folder = _vinfo_only(tmp_path / "rv", [_vm("a", 2, 8 * GIB)])
    with pytest.raises(InputError) as exc:
        load_inventory(folder)
    msg = exc.value.one_line()
    assert "sheet vInfo, row 2, column 'Memory'" in msg and "a value in bytes in a MiB column?" in msg


def test_rvtools_tables_fixture_has_the_vhost_columns():
    header, _ = rvtools_tables(W)["vHost"]
    assert {"Vendor", "Model", "# CPU", "# Cores", "# Memory"} <= set(header)
