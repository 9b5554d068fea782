"""Issue 35 items 1 and 4: migration readiness from RVTools tabs, and the data-quality rating with a host-count
interval, in every plan summary and report."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from densim.cli.main import app
from densim.tools.plan.capacity import load_plan_spec, plan, plan_candidate
from densim.tools.plan.confidence import data_facts, host_interval, rate, resample_days
from densim.workloads.formats import load_inventory
from densim.workloads.inventory import build_inventory

from .fixtures import rvtools_tables, save_tables_xlsx, small_workload, write_rvtools_csv, write_rvtools_xlsx

ROOT = Path(__file__).resolve().parents[2]
CANDIDATES = ROOT / "examples" / "planning" / "candidates.yaml"
W = small_workload()  # vm-1..vm-4; fixtures.add_migration_tabs says what each one carries


def _plan_cli(inv_path: Path, out: Path, candidates: Path = CANDIDATES) -> dict:
    r = CliRunner().invoke(app, ["plan", str(inv_path), "--candidates", str(candidates), "--out", str(out)])
    assert r.exit_code == 0, r.output
    return json.loads((out / "summary.json").read_text())


def _rows(path: Path) -> dict[str, dict]:
    return {r["vm"]: r for r in csv.DictReader(io.StringIO(path.read_text()))}


# ------------------------------------------------------------------------------------ readiness, per check


def test_readiness_counts_per_check_worked_by_hand(tmp_path):
    inv = load_inventory(write_rvtools_xlsx(tmp_path / "e.xlsx", W, migration=True))
    by = {c.key: c for c in inv.readiness.checks}
    # vSnapshot: vm-3 two rows; old-vm's snapshot is not counted (powered off, not in the plan)
    assert by["snapshots"].flagged.tolist() == [False, False, True, False] and by["snapshots"].items == 2
    # vCD: only vm-2's drive is Connected (the ISO); vm-4's host device is not connected
    assert by["cd_connected"].flagged.tolist() == [False, True, False, False]
    assert by["cd_connected"].detail[1] == "[ds1] iso/rhel-9.4-x86_64-dvd.iso"
    # vDisk: vm-3's second disk is Raw (physicalMode) on a physicalSharing bus; vm-4's disk is sharingMultiWriter
    assert by["rdm"].flagged.tolist() == [False, False, True, False] and by["rdm"].items == 1
    assert by["shared_disk"].flagged.tolist() == [False, False, True, True] and by["shared_disk"].items == 2
    # vInfo HW version: vmx-19, vmx-8, vmx-13, vmx-13 -> only vm-2 is below 9
    assert by["hw_version"].flagged.tolist() == [False, True, False, False]
    # vTools: toolsOk, toolsOld, toolsOk, toolsNotRunning
    assert by["tools"].flagged.tolist() == [False, True, False, True]
    # vHost Current EVC: esx01 intel-haswell, esx02 blank; vm-3 and vm-4 run on esx02
    assert by["cpu_baseline"].flagged.tolist() == [False, False, True, True]
    assert {c.key: c.effect for c in inv.readiness.checks} == {
        "snapshots": "slows", "cd_connected": "blocks", "rdm": "blocks", "shared_disk": "blocks", "hw_version": "blocks",
        "tools": "slows", "cpu_baseline": "slows"}
    # vm-1: nothing -> ready; vm-2: CD + HW (blocks); vm-3: RDM + shared (blocks); vm-4: shared (blocks)
    assert inv.readiness.status().tolist() == ["ready", "blocked", "blocked", "blocked"]
    assert inv.readiness.cpu_vendor.tolist() == ["intel"] * 4


def test_csv_export_with_prefixed_headers_reads_the_same(tmp_path):
    xlsx = load_inventory(write_rvtools_xlsx(tmp_path / "e.xlsx", W, migration=True)).readiness
    folder = load_inventory(write_rvtools_csv(tmp_path / "csv", W, migration=True)).readiness  # vSnapshotVMName, vDiskRaw, ...
    for a, b in zip(xlsx.checks, folder.checks):
        assert a.key == b.key and a.missing == b.missing == "", (a.key, b.missing)
        assert a.flagged.tolist() == b.flagged.tolist(), a.key


def test_a_tab_not_in_the_export_is_unknown_never_ready(tmp_path):
    tables = rvtools_tables(W, migration=True)
    del tables["vSnapshot"]
    inv = load_inventory(save_tables_xlsx(tmp_path / "e.xlsx", tables))
    snap = next(c for c in inv.readiness.checks if c.key == "snapshots")
    assert not snap.known and snap.missing == "not in the export: tab vSnapshot"
    assert snap.unknown.all() and not snap.flagged.any()
    # vm-1 had no flag in any check; without vSnapshot nobody knows whether it has snapshots
    assert inv.readiness.status().tolist() == ["unknown", "blocked", "blocked", "blocked"]


def test_an_export_without_the_migration_tabs_reports_every_check_unknown(tmp_path):
    out = tmp_path / "out"
    s = _plan_cli(write_rvtools_xlsx(tmp_path / "e.xlsx", W), out)
    r = s["readiness"]
    assert r["read"] and r["ready"] == 0 and r["unknown"] == 4 and r["blocked"] == 0
    assert sorted(r["unknown_checks"]) == sorted(["snapshots", "cd_connected", "rdm", "shared_disk", "hw_version", "tools",
                                                  "cpu_baseline"])
    assert all(c["vms"] is None and c["missing"].startswith("not in the export") for c in r["checks"])
    assert {row["status"] for row in _rows(out / "readiness.csv").values()} == {"unknown"}
    assert "not in the export: tab vSnapshot" in (out / "report.html").read_text()


# ------------------------------------------------------------------------------------ the plan outputs


def test_plan_on_the_real_shaped_export_writes_readiness_and_rating(tmp_path):
    out = tmp_path / "out"
    s = _plan_cli(write_rvtools_xlsx(tmp_path / "e.xlsx", W, migration=True), out)
    r = s["readiness"]
    assert (r["blocked"], r["slowed"], r["unknown"], r["ready"]) == (3, 0, 0, 1)
    assert {c["key"]: c["vms"] for c in r["checks"]} == {"snapshots": 1, "cd_connected": 1, "rdm": 1, "shared_disk": 2,
                                                          "hw_version": 1, "tools": 2, "cpu_baseline": 2}
    assert {c["key"]: c["tab"] for c in r["checks"]}["shared_disk"] == "vDisk"
    rows = _rows(out / "readiness.csv")
    assert rows["vm-2"]["status"] == "blocked" and rows["vm-2"]["cd_connected (blocks)"] == "yes"
    assert rows["vm-3"]["snapshots_detail"] == "2 snapshots"
    # a single RVTools snapshot: history grade C; every VM measured, every host listed: the rating is C, no interval
    c = s["confidence"]
    assert c["rating"] == "C" and c["grades"] == {"history": "C", "defaulted": "A", "missing_hosts": "A", "unknown_cpus": "A"}
    assert c["interval"]["estimated"] is False and "single snapshot" in c["interval"]["why"]
    html = (out / "report.html").read_text()
    # shown first: the rating and the readiness come right after the answer, before the ranking
    assert html.index('id="answer"') < html.index('id="confidence"') < html.index('id="readiness"') < html.index('id="ranking"')
    assert "Data quality: <span class=\"rating rating-C\">C</span>" in html
    assert "3 blocked</b>" in html


def test_vinfo_only_export_is_rated_d(tmp_path):
    tables = rvtools_tables(W)
    folder = tmp_path / "rv"
    folder.mkdir()
    header, rows = tables["vInfo"]
    header = [h for h in header if h != "Active Memory"]
    with open(folder / "RVTools_tabvInfo.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        for row in rows:
            w.writerow([v for h, v in zip(tables["vInfo"][0], row) if h != "Active Memory"])
    s = _plan_cli(folder, tmp_path / "out")
    c = s["confidence"]
    # no usage at all: history D, and every VM sized by a default rule (4 of 4 = 100 % > 50 %): D
    assert c["rating"] == "D" and c["grades"]["history"] == "D" and c["grades"]["defaulted"] == "D"
    assert c["facts"]["cpu_default_vms"] == 4 and c["facts"]["hosts_listed"] is None
    assert "no usage series" in c["interval"]["why"]


# ------------------------------------------------------------------------------------ rating thresholds


def _facts(**kw) -> dict:
    base = {"kind": "series", "days": 30.0, "step_s": 300.0, "defaulted_share": 0.0, "cpu_default_vms": 0, "mem_default_vms": 0,
            "missing_host_vms": 0, "missing_host_share": 0.0, "hosts_listed": None, "unknown_cpu_hosts": None}
    return base | kw


@pytest.mark.parametrize("days, step_s, grade", [
    (28.0, 900.0, "A"),    # exactly the A thresholds
    (27.9, 900.0, "B"),    # a day short of four weeks
    (30.0, 1800.0, "B"),   # long enough but 30-min samples
    (7.0, 3600.0, "B"),
    (6.9, 3600.0, "C"),
    (30.0, 7200.0, "C"),   # 2-h samples hide peaks
])
def test_history_grade_thresholds(days, step_s, grade):
    assert rate(_facts(days=days, step_s=step_s))["grades"]["history"] == grade


@pytest.mark.parametrize("share, grade", [(0.05, "A"), (0.051, "B"), (0.20, "B"), (0.21, "C"), (0.50, "C"), (0.51, "D")])
def test_default_rule_share_thresholds(share, grade):
    assert rate(_facts(defaulted_share=share))["grades"]["defaulted"] == grade


def test_rating_is_the_worst_grade_with_a_reason_for_each_below_a():
    # 10 days at 5 min: B; 1 of 100 VMs on a missing host (1 % <= 5 %): B; 3 of 4 hosts without a CPU model (75 %): D
    r = rate(_facts(days=10.0, missing_host_vms=1, missing_host_share=0.01, hosts_listed=4, unknown_cpu_hosts=3))
    assert r["grades"] == {"history": "B", "defaulted": "A", "missing_hosts": "B", "unknown_cpus": "D"}
    assert r["rating"] == "D" and len(r["reasons"]) == 3
    assert rate(_facts())["rating"] == "A" and rate(_facts(kind="snapshot"))["rating"] == "C"


# ------------------------------------------------------------------------------------ host-count interval


def _four_days(peak_day: int = 2) -> object:
    """4 VMs of 2 vCPUs at 1,000 MHz, hourly samples for 4 days: 500 MHz each (2,000 MHz in all: one 4,000-MHz host
    at 50 %), except on ``peak_day``, 1,500 MHz each (6,000 MHz: two hosts)."""
    t = 96
    cpu = np.full((t, 4), 500.0)
    cpu[24 * peak_day:24 * (peak_day + 1)] = 1500.0
    return build_inventory([f"vm-{i}" for i in range(4)], [2] * 4, [1000.0] * 4, [2**30] * 4, cpu_mhz=cpu,
                           mem_used_bytes=np.full((t, 4), 2.0**29), step_s=3600.0)


def _one_candidate(tmp_path) -> Path:
    spec = {"qos": {"cpu_ready_pct": 5.0, "vcpus_per_core": 16}, "windows": 96, "cost": {"years": 4},
            "candidates": [{"name": "4c", "cpu": {"sockets": 1, "cores_per_socket": 4, "threads_per_core": 1, "base_clock": "1 GHz"},
                            "memory": "64 GiB", "hypervisor_memory": "0 GiB", "price_usd": 1000,
                            "power": {"model": "linear", "idle": "50 W", "peak": "150 W"}}]}
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def test_resample_days_puts_the_drawn_days_back_to_back():
    inv = _four_days()
    r = resample_days(inv, np.array([2, 0, 2, 3]))
    # day 2 (the peak), then day 0, day 2 again, day 3: 1,500 / 500 / 1,500 / 500 MHz
    assert r.cpu_mhz.shape == (96, 4)
    assert [float(r.cpu_mhz[24 * k, 0]) for k in range(4)] == [1500.0, 500.0, 1500.0, 500.0]


def test_day_bootstrap_interval_worked_by_hand(tmp_path):
    spec = load_plan_spec(_one_candidate(tmp_path))
    inv = _four_days()
    res = plan(inv, spec, seed=7)
    assert res.results[0].feasible and res.results[0].n_hosts == 2  # the peak day needs two hosts
    iv = res.confidence["interval"]
    # each resample draws 4 of the 4 days with replacement: without the peak day ((3/4)^4 = 32 % of resamples) one
    # host is enough, with it two; the 90 % interval of 20 resamples spans both
    assert iv["estimated"] and iv["days"] == 4 and (iv["low"], iv["high"]) == (1, 2)
    assert sum(iv["counts"].values()) == 20 and set(iv["counts"]) == {"1", "2"}
    # the same seed draws the same days
    again = host_interval(inv, spec, spec.candidates[0], inv.vcpus, inv.mem_bytes, 2, resamples=20, level=0.9, seed=7,
                          plan_one=plan_candidate)
    assert again["counts"] == iv["counts"]
    facts = data_facts(inv)
    assert facts["kind"] == "series" and facts["days"] == 4.0 and res.confidence["grades"]["history"] == "C"


def test_under_three_days_the_interval_says_why(tmp_path):
    spec = load_plan_spec(_one_candidate(tmp_path))
    inv = _four_days().with_series_steps(48)  # two days
    iv = plan(inv, spec).confidence["interval"]
    assert not iv["estimated"] and "2.00 days of history" in iv["why"] and "at least 3 whole days" in iv["why"]


def test_cross_vendor_count_per_candidate(tmp_path):
    # the fixture's VMs all carry intel-haswell (vInfo 'min Required EVC Mode Key'): none can move live to an AMD host
    def cand(name, cpu):
        return {"name": name, "cpu": cpu, "memory": "256 GiB", "hypervisor_memory": "8 GiB", "price_usd": 9000,
                "power": {"model": "linear", "idle": "100 W", "peak": "400 W"}}

    spec = {"candidates": [cand("epyc", {"model": "epyc-7502", "sockets": 2}),
                           cand("xeon", {"model": "xeon-e5-2698-v3", "sockets": 2}),
                           cand("inline", {"sockets": 2, "cores_per_socket": 16, "threads_per_core": 2, "base_clock": "2.3 GHz"})]}
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(spec))
    out = tmp_path / "out"
    s = _plan_cli(write_rvtools_xlsx(tmp_path / "e.xlsx", W, migration=True), out, candidates=path)
    xv = {x["candidate"]: x for x in s["readiness"]["cross_vendor"]}
    assert (xv["epyc"]["vendor"], xv["epyc"]["vms"]) == ("amd", 4)
    assert (xv["xeon"]["vendor"], xv["xeon"]["vms"]) == ("intel", 0)
    assert xv["inline"]["vms"] is None and "not a catalog model" in xv["inline"]["why"]
    assert "4 VM(s) run on the other vendor" in (out / "report.html").read_text()


def test_a_tab_with_only_its_header_is_known_and_empty(tmp_path):
    # RVTools writes the header row of a tab that has no rows: no snapshot anywhere is a known answer, not "unknown"
    tables = rvtools_tables(W, migration=True)
    tables["vSnapshot"] = (tables["vSnapshot"][0], [])
    folder = tmp_path / "rv"
    folder.mkdir()
    for name, (header, rows) in tables.items():
        with open(folder / f"RVTools_tab{name}.csv", "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(header)
            w.writerows(rows)
    snap = next(c for c in load_inventory(folder).readiness.checks if c.key == "snapshots")
    assert snap.known and snap.items == 0 and not snap.flagged.any() and not snap.unknown.any()


def test_several_vcenters_need_the_server_column_to_match_tabs(tmp_path):
    # two vCenters: vm-1 and vm-2 on vc-a, vm-3 and vm-4 on vc-b; vTools has no 'VI SDK Server' column, so a VM name
    # cannot be matched to one vInfo row: the Tools check is unknown; vCD (with the column) still matches vm-2's ISO
    tables = rvtools_tables(W, migration=True)
    h, rows = tables["vInfo"]
    s = h.index("VI SDK Server")
    for r in rows:
        r[s] = "vc-b" if r[0] in ("vm-3", "vm-4") else "vc-a"
    h_cd, cd = tables["vCD"]
    for r in cd:
        r[h_cd.index("VI SDK Server")] = "vc-b" if r[0] in ("vm-3", "vm-4") else "vc-a"
    h_t, tools = tables["vTools"]
    tables["vTools"] = ([c for c in h_t if c != "VI SDK Server"], [r[:h_t.index("VI SDK Server")] for r in tools])
    inv = load_inventory(save_tables_xlsx(tmp_path / "e.xlsx", tables))
    by = {c.key: c for c in inv.readiness.checks}
    assert "'VI SDK Server' of tab vTools" in by["tools"].missing and by["tools"].unknown.all()
    assert by["cd_connected"].flagged.tolist() == [False, True, False, False]


def test_the_terminal_prints_rating_and_readiness_after_the_headline(tmp_path):
    x = write_rvtools_xlsx(tmp_path / "e.xlsx", W, migration=True)
    r = CliRunner().invoke(app, ["plan", str(x), "--candidates", str(CANDIDATES), "--out", str(tmp_path / "out")])
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    buy = next(i for i, s in enumerate(lines) if s.startswith("Buy "))
    dq = next(i for i, s in enumerate(lines) if s.startswith("Data quality C: a single snapshot"))
    mr = next(i for i, s in enumerate(lines) if s.startswith("Move readiness of 4 VMs: 3 blocked, 0 slowed, 0 unknown, 1 ready."))
    assert buy < dq < mr < next(i for i, s in enumerate(lines) if "densim plan:" in s)
    assert "readiness.csv" in lines[-1]
