"""Migration waves (issue 35 items 2 and 3): move groups from the inventory, waves over maintenance windows limited by
the link and the landing cluster's room, pre-copy move times and downtimes, the landing cluster's engine run."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from densim.cli.main import app
from densim.errors import InputError
from densim.spec.plan import PlanSpec, WavesSpec
from densim.tools.plan.capacity import plan
from densim.tools.plan.groups import infer_groups, read_groups_file
from densim.tools.plan.waves import MoveInputs, move_times, schedule_waves
from densim.workloads.formats import load_inventory
from densim.workloads.inventory import build_inventory
from tests.planning.fixtures import small_workload, write_rvtools_csv, write_rvtools_xlsx

ROOT = Path(__file__).resolve().parents[2]
CANDIDATES = ROOT / "examples" / "planning" / "candidates.yaml"
GIB = 2**30


# ------------------------------------------------------------------------------------ waves by hand


def _three_groups(link_bps: float):
    """Groups B (2 VMs of 900 GB, 16 vCPUs each), A (3 VMs of 450 GB, 8 vCPUs) and C (4 VMs of 300 GB, 2 vCPUs); no
    page dirtying and no resume time, so a move takes M / (link / max_concurrent) and has no downtime."""
    spec = WavesSpec(link=link_bps, max_concurrent=2, window=2600, every=86400, dirty_rate=0, resume=0)
    group_of = np.array([0, 0, 1, 1, 1, 2, 2, 2, 2])
    mem = np.array([900e9] * 2 + [450e9] * 3 + [300e9] * 4)
    vcpus = np.array([16] * 2 + [8] * 3 + [2] * 4, dtype=float)
    mi = MoveInputs([f"vm{i}" for i in range(9)], group_of, ["B", "A", "C"], mem, vcpus, np.zeros(9), ["", "", ""])
    pc = move_times(mem, np.zeros(9), spec)
    # landing room: one host of 40 vCPUs from the start, a second from day 1 (memory not limiting)
    capacity = [(0.0, 40.0, 1e15, 1), (86400.0, 80.0, 2e15, 2)]
    return schedule_waves(mi, pc.total_s, spec, capacity), pc


def test_three_groups_with_a_bandwidth_cap_and_a_landing_limit_give_the_waves_worked_out_by_hand():
    out, pc = _three_groups(1e9)
    # link 1 GB/s shared by 2 moves: 0.5 GB/s each. Move times: B 900e9/0.5e9 = 1,800 s; A 900 s; C 600 s; no downtime
    assert pc.total_s.tolist() == [1800.0] * 2 + [900.0] * 3 + [600.0] * 4
    assert pc.downtime_s.max() == 0.0 and pc.converged.all()
    # order: largest configured memory first: B 1,800 GB, A 1,350 GB, C 1,200 GB
    # (slots: when each of the 2 move slots is next free, s from the window's start; a move goes on the earliest free)
    # wave 1 (day 0, room 40 vCPUs): B 32 vCPUs fit, slots [1800, 1800] <= 2,600-s window: taken;
    #   A: 32 + 24 = 56 > 40 vCPUs: waits (landing room);
    #   C: 32 + 8 = 40 <= 40, but its 600-s moves after B's: [2400, 1800] [2400, 2400] [3000, 2400] [3000, 3000]:
    #   3,000 > 2,600 s: waits (bandwidth: the window is too short at 0.5 GB/s per move)
    # wave 2 (day 1, room 80): A: 56 <= 80; slots [900, 0] [900, 900] [1800, 900]: taken. C: 64 <= 80, but after
    #   A [1800, 1500] [1800, 2100] [2400, 2100] [2400, 2700]: 2,700 > 2,600 s: waits again
    # wave 3 (day 2): C alone [600, 0] [600, 600] [1200, 600] [1200, 1200]: taken
    assert [w["groups"] for w in out["waves"]] == [["B"], ["A"], ["C"]]
    assert [w["window_start_s"] for w in out["waves"]] == [0.0, 86400.0, 172800.0]
    assert [w["moves_end_s"] for w in out["waves"]] == [1800.0, 1800.0, 1200.0]
    assert [w["landed_vcpus"] for w in out["waves"]] == [32.0, 56.0, 64.0]
    # landing times: B at 1,800 s; A's first two at day 1 + 900 s, its third (second on slot 0) at day 1 + 1,800 s
    assert out["land_off_s"][:5].tolist() == [1800.0, 1800.0, 87300.0, 87300.0, 88200.0]
    assert out["land_off_s"][5:].tolist() == [172800.0 + 600, 172800.0 + 600, 172800.0 + 1200, 172800.0 + 1200]
    assert out["held"] == ["", "", ""]


def test_a_faster_link_moves_c_with_b():
    # link 2 GB/s: 1 GB/s per move: B 900 s, C 300 s; C after B: [1200, 900] [1200, 1200] [1500, 1200] [1500, 1500]
    # <= 2,600 s and 32 + 8 = 40 <= 40 vCPUs: wave 1 = B and C; A (56 > 40) waits for the second host: wave 2
    out, _ = _three_groups(2e9)
    assert [w["groups"] for w in out["waves"]] == [["B", "C"], ["A"]]
    assert out["waves"][0]["moves_end_s"] == 1500.0


def test_a_group_larger_than_the_landing_cluster_or_longer_than_a_window_is_held_with_the_reason():
    spec = WavesSpec(link=1e9, max_concurrent=1, window=1000, every=86400, dirty_rate=0, resume=0)
    # group 0: one VM of 2,000 GB (2,000 s > 1,000-s window); group 1: 100 vCPUs > 40 of room; group 2 fits
    mi = MoveInputs(["big", "wide", "ok"], np.array([0, 1, 2]), ["g-big", "g-wide", "g-ok"], np.array([2000e9, 1e9, 1e9]),
                    np.array([2.0, 100.0, 2.0]), np.zeros(3), ["", "", ""])
    out = schedule_waves(mi, move_times(mi.mem_bytes, mi.dirty_bps, spec).total_s, spec, [(0.0, 40.0, 1e15, 1)])
    assert "longer than one window" in out["held"][0]
    assert "larger than the landing cluster" in out["held"][1]
    assert out["held"][2] == "" and [w["groups"] for w in out["waves"]] == [["g-ok"]]


# ------------------------------------------------------------------------------------ through the plan


def _spec(waves: dict, **over) -> PlanSpec:
    d = {"qos": {"cpu_ready_pct": 50.0, "vcpus_per_core": 4}, "windows": 1, "cost": {"years": 4},
         "candidates": [{"name": "4c", "cpu": {"sockets": 1, "cores_per_socket": 4, "threads_per_core": 1, "base_clock": "1 GHz"},
                         "memory": "64 GiB", "hypervisor_memory": "0 GiB", "price_usd": 1000,
                         "power": {"model": "linear", "idle": "50 W", "peak": "150 W"}}],
         "waves": waves} | over
    return PlanSpec.model_validate(d)


def _two_vms():
    # 2 VMs of 2 vCPUs at 1,000 MHz and 4 GiB: 'quiet' at 10 % CPU (200 MHz), 'busy' at 100 % (2,000 MHz)
    return build_inventory(["quiet", "busy"], [2, 2], [1000.0, 1000.0], [4 * GIB] * 2,
                           cpu_mhz=np.array([[200.0, 2000.0]]), step_s=3600.0, start_s=1_800_000_000.0)


def test_a_vm_dirtying_faster_than_its_link_share_never_converges_and_is_reported_not_placed():
    res = plan(_two_vms(), _spec({"link": 1e8, "max_concurrent": 1, "dirty_rate": 2e8, "resume": 0}))
    w = res.waves
    # busy dirties 2e8 x 1.0 = 200 MB/s against 100 MB/s: round 0 copies 4 GiB in 42.95 s and dirties its whole
    # working set (0.1 x 4 GiB = 429.5 MB); round 1 sends it in 4.295 s while dirtying 859 MB, capped at 429.5 MB: no
    # progress, stop; downtime 429,496,729.6 / 1e8 = 4.295 s > 0.3 s
    assert [x["vm"] for x in w["not_converging"]] == ["busy"]
    assert w["not_converging"][0]["downtime_s"] == pytest.approx(4.294967296)
    assert w["held_groups"] == [{"group": "busy", "vms": 1, "why": w["held_groups"][0]["why"]}]
    assert "never converges" in w["held_groups"][0]["why"]
    # quiet dirties 20 MB/s: 42.95 s, then 429.5 MB in 4.295 s, 85.9 MB in 0.859 s, and 17.18 MB fits the 0.3-s target:
    # downtime 0.1718 s, move 48.2754 s
    assert w["vms_moved"] == 1 and w["waves"] == 1
    rows = w["_vm_rows"]
    assert rows["wave"] == [1, None]
    assert rows["downtime_s"][0] == pytest.approx(0.17179869184)
    assert rows["move_s"][0] == pytest.approx(42.94967296 + 4.294967296 + 0.8589934592 + 0.17179869184)
    assert w["landing"]["engine"]["vms_placed"] == 1  # only the moved VM lands


def test_waves_compose_with_failures_and_memory_overcommit_on_the_landing_cluster():
    # 6 VMs of 2 vCPUs and 24 GiB (20 GiB active) on 4-core, 64 GiB hosts with memory over-commit 1.5 (96 GiB of room
    # per host) and the memory model on: the plan needs 2 hosts (6 x 24 = 144 GiB); one wave per night of 2 VMs (a
    # window of 1 h on a link of 24 GiB/h per move: max_concurrent 1); the first landing host fails for 3 h on day 1
    # and its VMs restart
    n = 6
    inv = build_inventory([f"vm-{i}" for i in range(n)], [2] * n, [1000.0] * n, [24 * GIB] * n,
                          cpu_mhz=np.full((24, n), 500.0), mem_used_bytes=np.full((24, n), 20.0 * GIB), step_s=3600.0,
                          start_s=1_800_000_000.0)
    share = 24 * GIB / 1800.0  # 24 GiB in 30 min: two moves per 1-h window
    spec = _spec({"link": share, "max_concurrent": 1, "dirty_rate": 0, "resume": 0, "window": 3600,
                  "failures": {"events": [{"time": "25 h", "target": "4c-0", "duration": "3 h"}]}},
                 qos={"cpu_ready_pct": 50.0, "vcpus_per_core": 4, "memory_overcommit": 1.5},
                 memory={"model": "vsphere-like"})
    res = plan(inv, spec)
    w = res.waves
    assert w["waves"] == 3 and [c["vms"] for c in w["calendar"]] == [2, 2, 2]
    eng = w["landing"]["engine"]
    assert eng["vms_placed"] == n and eng["vms_unplaced"] == 0
    assert "memory" in eng and eng["memory"]["hosts_swapping"] == ["4c-1"]  # see the swapping per wave below
    # the failure at 25 h (day 1, 1 h after the second window opened) finds vm-0, vm-1 (landed on day 0) and vm-2
    # (landed at 24.5 h) on 4c-0 (first-fit): 3 interrupted and restarted on 4c-1
    assert (eng["failures"]["vms_interrupted"], eng["failures"]["restarts"]) == (3, 3)
    # each VM's first run on the landing cluster starts at its landing (there is room: no wait)
    sch, names = w["_landing_result"].ctx.schedule, w["_landing_result"].ctx.vms.names
    first = {}
    for nm, st in zip(names, sch.start_s):
        first.setdefault(str(nm).split("~")[0], st)
    assert [first[v] for v in w["_vm_rows"]["vm"]] == pytest.approx(list(w["_vm_rows"]["landing_s"]))
    # memory over-commit: 1.5 x 64 GiB = 96 GiB of configured memory per host; 6 x 24 = 144 GiB placed after wave 3,
    # the fullest host (4c-1, 4 VMs after the restarts) at 96 / 96
    last = w["calendar"][-1]
    assert last["landing_memory_placed_bytes"] == 144 * GIB
    assert max(c["landing_memory_worst_host_share"] for c in w["calendar"]) == pytest.approx(1.0)
    # the memory model per wave: before the failure no host holds more than 2 VMs (40 GiB active of 64): no swapping in
    # wave 1 (day 0 to 24 h); from the restarts at 25 h 4c-1 holds 4 (80 GiB active > 64 GiB): it swaps in every hourly
    # step of wave 2 from 25 h to 48 h (23 host-steps) and of wave 3 from 48 h to the run's end at 73 h (the last
    # landing at 49 h + one period: 25); 4c-0 takes wave 3's 2 VMs and does not swap
    assert [c["landing_host_steps_swapping"] for c in w["calendar"]] == [0, 23, 25]
    assert w["calendar"][0]["landing_memory_swapped_gib_worst"] == 0 and w["calendar"][1]["landing_memory_swapped_gib_worst"] > 0


# ------------------------------------------------------------------------------------ groups


def test_groups_from_port_groups_custom_attributes_and_the_vnetwork_tab(tmp_path):
    inv = load_inventory(write_rvtools_xlsx(tmp_path / "g.xlsx", small_workload(), migration=True, groups=True))
    # pg-mgmt is on all 4 VMs: above max_shared 3 it ties nothing (listed); pg-shop ties vm-1 and vm-2; pg-erp ties
    # vm-3 (vInfo Network #1) and vm-4 (its second NIC, only in the vNetwork tab)
    g = infer_groups(inv, ["vapp", "network"], max_shared=3)
    assert g.names == ["network=pg-shop", "network=pg-erp"] and g.group_of.tolist() == [0, 0, 1, 1]
    assert g.ignored == [{"key": "network", "value": "pg-mgmt", "vms": 4}]
    assert g.missing == [] and g.used == ["network"]  # vApp is all blank: read, ties nothing
    # the custom attribute 'Application' gives the same two groups; a name pattern (vm-1 and vm-3 odd) other ones
    assert infer_groups(inv, ["attr:Application"]).group_of.tolist() == [0, 0, 1, 1]
    assert infer_groups(inv, [r"name:^vm-(\d)$"]).n == 4  # every capture differs: each VM alone
    # the CSV export (prefixed headers) carries the same tags
    inv2 = load_inventory(write_rvtools_csv(tmp_path / "c", small_workload(), migration=True, groups=True))
    assert infer_groups(inv2, ["network"], max_shared=3).group_of.tolist() == [0, 0, 1, 1]
    assert "Application" in inv.facts["custom_attributes"] and "SRM Placeholder" in inv.facts["vinfo_columns_unread"]


def test_a_groups_file_overrides_the_inference(tmp_path):
    inv = load_inventory(write_rvtools_xlsx(tmp_path / "g.xlsx", small_workload(), migration=True, groups=True))
    f = tmp_path / "groups.csv"
    f.write_text("vm,group\nvm-2,billing\nvm-3,billing\n")
    g = infer_groups(inv, ["network"], max_shared=3, file=f)
    # vm-2 and vm-3 from the file; vm-1 and vm-4 inferred: pg-shop and pg-erp now tie one VM each: alone
    assert [g.names[i] for i in g.group_of] == ["vm-1", "billing", "billing", "vm-4"]
    assert g.from_file == 2


@pytest.mark.parametrize("text, where, problem", [
    ("vm,grp\nvm-1,a\n", "row 1", "header must be 'vm,group'"),
    ("vm,group\nvm-1,a\nvm-9,b\n", "row 3, column 'vm'", "VM 'vm-9' is not a planned VM"),
    ("vm,group\nvm-1,a\nvm-1,b\n", "row 3, column 'group'", "in group 'b' here but in 'a' in row 2"),
    ("vm,group\nvm-1,\n", "row 2, column 'group'", "blank"),
    ("vm,group\nvm-1,a,x\n", "row 2", "3 fields"),
])
def test_a_bad_groups_file_row_is_one_line_naming_file_and_row(tmp_path, text, where, problem):
    f = tmp_path / "groups.csv"
    f.write_text(text)
    with pytest.raises(InputError) as exc:
        read_groups_file(f, ["vm-1", "vm-2"])
    msg = exc.value.one_line()
    assert "\n" not in msg and str(f) in msg and where in msg and problem in msg


# ------------------------------------------------------------------------------------ the real exports, the CLI


def _candidates(tmp_path, waves: dict | None) -> Path:
    d = yaml.safe_load(CANDIDATES.read_text())
    if waves is not None:
        d["waves"] = waves
    p = tmp_path / "cand.yaml"
    p.write_text(yaml.safe_dump(d))
    return p


@pytest.mark.parametrize("kind", ["xlsx", "csv"])
def test_plan_report_on_the_rvtools_exports_shows_readiness_waves_and_the_rating(tmp_path, kind):
    w = small_workload()
    inv = (write_rvtools_xlsx(tmp_path / "e.xlsx", w, migration=True, groups=True) if kind == "xlsx"
           else write_rvtools_csv(tmp_path / "e", w, migration=True, groups=True))
    cand = _candidates(tmp_path, {"start": "2026-12-01T22:00", "groups": {"by": ["vapp", "network"], "max_shared": 3}})
    out = tmp_path / "out"
    r = CliRunner().invoke(app, ["plan", str(inv), "--candidates", str(cand), "--out", str(out), "--no-progress"])
    assert r.exit_code == 0, r.output
    s = json.loads((out / "summary.json").read_text())
    # readiness (fixtures' add_migration_tabs): vm-2 (ISO, vmx-8), vm-3 (RDM), vm-4 (multi-writer) blocked; vm-1 ready
    assert (s["readiness"]["blocked"], s["readiness"]["ready"]) == (3, 1)
    assert s["confidence"]["rating"] == "C"  # a single snapshot
    # the vInfo columns read by nothing are named, never dropped in silence; the grouping columns found are listed
    assert "srmplaceholder" in "".join(s["confidence"]["facts"]["vinfo_columns_unread"]).lower().replace(" ", "")
    assert "Application" in " ".join(s["confidence"]["facts"]["custom_attributes"])
    wv = s["waves"]
    # blocked VMs hold their groups (waves.blocked: hold): pg-shop (vm-1, vm-2: vm-2 blocked) and pg-erp: nothing moves
    assert wv["waves"] == 0 and wv["vms_held"] == 4 and len(wv["held_groups"]) == 2
    assert all("blocked by the readiness checks" in h["why"] for h in wv["held_groups"])
    assert sorted(wv["source_hosts_never_freed"]) == ["esx01", "esx02"]  # a held VM keeps its host busy
    html = (out / "report.html").read_text()
    assert 'id="waves"' in html and 'id="readiness"' in html and 'id="confidence"' in html
    assert "Migration onto" in r.output


def test_plan_moves_blocked_vms_when_told_and_frees_the_source_hosts(tmp_path):
    inv = write_rvtools_xlsx(tmp_path / "e.xlsx", small_workload(), migration=True, groups=True)
    cand = _candidates(tmp_path, {"start": "2026-12-01T22:00", "blocked": "move", "groups": {"by": ["network"], "max_shared": 3}})
    out = tmp_path / "out"
    r = CliRunner().invoke(app, ["plan", str(inv), "--candidates", str(cand), "--out", str(out), "--no-progress"])
    assert r.exit_code == 0, r.output
    wv = json.loads((out / "summary.json").read_text())["waves"]
    # 4 VMs of 2-8 GiB at 156 MB/s each (10 GbE / 8) end in minutes: one wave; esx01 (vm-1, vm-2) and esx02 (vm-3,
    # vm-4) both emptied by it: 2 hosts of 32 cores freed
    assert wv["waves"] == 1 and wv["vms_moved"] == 4
    c = wv["calendar"][0]
    assert sorted(c["source_hosts_freed"]) == ["esx01", "esx02"] and c["source_cores_freed"] == 64
    assert c["cpu_ready_pct_worst"] is not None and wv["landing"]["engine"]["vms_placed"] == 4
    rows = (out / "waves.csv").read_text().splitlines()
    assert rows[0].startswith("vm,group,wave") and len(rows) == 5


def test_cli_groups_file_errors_are_one_line(tmp_path):
    inv = write_rvtools_xlsx(tmp_path / "e.xlsx", small_workload(), migration=True, groups=True)
    bad = tmp_path / "groups.csv"
    bad.write_text("vm,group\nvm-1,a\nvm-7,b\n")
    r = CliRunner().invoke(app, ["plan", str(inv), "--candidates", str(_candidates(tmp_path, {})), "--out",
                                 str(tmp_path / "o"), "--groups", str(bad), "--no-progress"])
    assert r.exit_code == 1
    line = [x for x in r.output.splitlines() if x.startswith("densim: error")]
    assert len(line) == 1 and str(bad) in line[0] and "row 3" in line[0] and "vm-7" in line[0]
    # a groups file without a waves: section is refused, not ignored
    good = tmp_path / "g2.csv"
    good.write_text("vm,group\nvm-1,a\n")
    r = CliRunner().invoke(app, ["plan", str(inv), "--candidates", str(_candidates(tmp_path, None)), "--out",
                                 str(tmp_path / "o2"), "--groups", str(good), "--no-progress"])
    assert r.exit_code == 1 and "--groups" in r.output and "waves:" in r.output


def test_contradictory_window_is_refused():
    with pytest.raises(ValueError, match="longer than every"):
        WavesSpec(window=7200, every=3600)


def test_zero_pages_shorten_the_moves_and_a_share_overlapping_the_working_set_is_refused():
    # a 900 GB VM at 1e9 B/s / 2 = 5e8 B/s, no dirtying: 1800 s sending every page. With 80 % never touched and a
    # 2e10 B/s scan: 180 GB / 5e8 = 360 s + the flags 720e9 x 9/4096 = 1.582e9 B / 5e8 = 3.164 s + reading 720e9 B
    # at 2e10 B/s = 36 s: 399.164 s
    spec = WavesSpec(link=1e9, max_concurrent=2, dirty_rate=0, resume=0, zero_fraction=0.8, zero_scan_rate=2e10)
    pc = move_times(np.array([900e9]), np.zeros(1), spec)
    assert float(pc.total_s[0]) == pytest.approx(360 + 720e9 * 9 / 4096 / 5e8 + 36, rel=1e-12)
    assert float(move_times(np.array([900e9]), np.zeros(1), spec.model_copy(update={"zero_fraction": 0.0})).total_s[0]) == 1800
    with pytest.raises(ValueError, match=r"zero_fraction \(0.95\) \+ wws_fraction \(0.1\) > 1"):
        WavesSpec(zero_fraction=0.95)


def test_a_failure_target_not_on_the_landing_cluster_is_one_line_naming_the_field(tmp_path):
    inv = write_rvtools_xlsx(tmp_path / "e.xlsx", small_workload(), migration=True, groups=True)
    cand = _candidates(tmp_path, {"blocked": "move", "failures": {"events": [{"time": "1 h", "target": "nohost", "duration": "1 h"}]}})
    r = CliRunner().invoke(app, ["plan", str(inv), "--candidates", str(cand), "--out", str(tmp_path / "o"), "--no-progress"])
    assert r.exit_code == 1 and not (tmp_path / "o" / "summary.json").exists()
    line = [x for x in r.output.splitlines() if x.startswith("densim: error")]
    assert len(line) == 1 and "waves.failures.events[0].target" in line[0] and "'nohost'" in line[0]


def test_a_groups_file_in_the_candidates_file_is_read_beside_it(tmp_path):
    from densim.tools.plan.capacity import load_plan_spec

    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "groups.csv").write_text("vm,group\nvm-1,a\n")
    d = yaml.safe_load(CANDIDATES.read_text()) | {"waves": {"groups": {"file": "groups.csv"}}}
    p = tmp_path / "sub" / "cand.yaml"
    p.write_text(yaml.safe_dump(d))
    assert load_plan_spec(p).waves.groups.file == str((tmp_path / "sub" / "groups.csv").resolve())


def test_the_landing_source_repeats_the_inventory_series_over_the_programme():
    from densim.tools.plan.waves import LandingSource
    from densim.workloads.timegrid import TimeGrid

    # a 3-sample series (100, 200, 300 MHz at 1-h samples from t = 0); the programme's steps at 2.5 h, 3.5 h, 7.5 h
    # read samples floor(2.5) mod 3 = 2, floor(3.5) mod 3 = 0, floor(7.5) mod 3 = 1
    src = LandingSource(["a"], [1], [1000.0], [GIB], np.array([[100.0], [200.0], [300.0]]), None, 3600.0, 0.0, [0.0])
    out = src.window(TimeGrid(start_s=2 * 3600.0, step_s=3600.0, n_steps=6), 0, 6, ("cpu_mhz", "mem_used_bytes"))
    assert out["cpu_mhz"][:, 0].tolist() == [300.0, 100.0, 200.0, 300.0, 100.0, 200.0]
    assert out["mem_used_bytes"][:, 0].tolist() == [GIB] * 6  # no memory series: the configured size in use


def test_a_utf16_tab_separated_export_gives_the_same_groups_readiness_and_waves(tmp_path):
    # Excel's "Unicode text" save of every tab (UTF-16, tab-separated, CRLF), as in tests/workloads/test_rvtools_real_exports.py
    import csv
    import io

    from tests.planning.fixtures import rvtools_tables

    folder = tmp_path / "export"
    folder.mkdir()
    for tab, (header, rows) in rvtools_tables(small_workload(), migration=True, groups=True).items():
        buf = io.StringIO()
        wr = csv.writer(buf, delimiter="\t", lineterminator="\r\n")
        wr.writerow(header)
        wr.writerows([[str(c) for c in r] for r in rows])
        (folder / f"RVTools_tab{tab}.csv").write_bytes(buf.getvalue().encode("utf-16"))
    cand = _candidates(tmp_path, {"start": "2026-12-01T22:00", "blocked": "move", "groups": {"by": ["network"], "max_shared": 3}})
    out = tmp_path / "out"
    r = CliRunner().invoke(app, ["plan", str(folder), "--candidates", str(cand), "--out", str(out), "--no-progress"])
    assert r.exit_code == 0, r.output
    s = json.loads((out / "summary.json").read_text())
    assert (s["readiness"]["blocked"], s["readiness"]["ready"]) == (3, 1) and s["confidence"]["rating"] == "C"
    # vm-4's pg-erp NIC is only in the vNetwork tab: still tied to vm-3
    assert s["waves"]["groups"]["groups"] == 2 and s["waves"]["waves"] == 1 and s["waves"]["vms_moved"] == 4


def test_a_chained_giant_group_is_said():
    from densim.tools.plan.waves import waves_lines

    w = {"planned": True, "candidate": "c", "waves": 0, "start": "2026-12-01 22:00:00", "vms_moved": 0, "vms_held": 40,
         "downtime_s": {"max": 0.0}, "calendar": [], "not_converging": [], "held_groups": [],
         "groups": {"largest": 10, "keys_used": ["network"]}}
    assert not any("largest move group" in x for x in waves_lines(w))  # 10 of 40: not above a quarter
    w["groups"]["largest"] = 30
    assert any("holds 30 of 40 VMs" in x and "max_shared" in x for x in waves_lines(w))


def test_landing_vms_keep_their_gpu_requests():
    # 4 VMs of 2 vCPUs and 8 GiB: vdi-0 and vdi-1 ask for a whole GPU (passthrough), app-2 and app-3 for none. The
    # candidate host has 4 cores (16 vCPUs at 4 per core), 64 GiB and one L4: CPU and memory would take all four on
    # one host, the GPUs need two hosts, so the plan buys 2. The landing run places online first-fit as each VM
    # lands: vdi-0 takes 4c-0's L4, vdi-1 finds no GPU left there and goes to 4c-1; the apps (no GPU) go to 4c-0.
    # Before the landing VMs carried their requests, all four landed on 4c-0 and its GPU counted idle.
    inv = build_inventory(["vdi-0", "vdi-1", "app-2", "app-3"], [2] * 4, [1000.0] * 4, [8 * GIB] * 4,
                          cpu_mhz=np.full((24, 4), 500.0), step_s=3600.0, start_s=1_800_000_000.0)
    cand = {"name": "4c", "cpu": {"sockets": 1, "cores_per_socket": 4, "threads_per_core": 1, "base_clock": "1 GHz"},
            "memory": "64 GiB", "hypervisor_memory": "0 GiB", "price_usd": 1000,
            "power": {"model": "linear", "idle": "50 W", "peak": "150 W"}, "gpus": {"model": "nvidia-l4", "count": 1}}
    spec = _spec({"link": 8 * GIB / 600.0, "max_concurrent": 4, "dirty_rate": 0, "resume": 0, "window": 3600},
                 candidates=[cand], gpu={"requests": [{"vms": "vdi-*", "gpu": {"mode": "passthrough", "count": 1}}]})
    res = plan(inv, spec)
    assert res.ranked()[0].n_hosts == 2
    r = res.waves["_landing_result"]
    sch, names = r.ctx.schedule, [str(n) for n in r.ctx.vms.names]
    host = {n: int(h) for n, h in zip(names, sch.host)}
    assert host == {"vdi-0": 0, "vdi-1": 1, "app-2": 0, "app-3": 0}
    assert list(r.ctx.vms.group_names) == ["moved", "moved-gpu-0"]
    assert res.waves["calendar"][-1]["landing_hosts_used"] == 2


def test_landing_vms_keep_their_guest_images():
    # the 6 VMs of the failures-and-memory test (24 GiB, 20 GiB in use, on 64 GiB hosts at memory over-commit 1.5),
    # all booting one image with inter-VM sharing on: the landing run's VMs name it, and once a host is short of
    # memory (4c-1 after the restarts) its VMs share pages, as the plan's memory check counted them
    n = 6
    inv = build_inventory([f"vm-{i}" for i in range(n)], [2] * n, [1000.0] * n, [24 * GIB] * n,
                          cpu_mhz=np.full((24, n), 500.0), mem_used_bytes=np.full((24, n), 20.0 * GIB), step_s=3600.0,
                          start_s=1_800_000_000.0)
    spec = _spec({"link": 24 * GIB / 1800.0, "max_concurrent": 1, "dirty_rate": 0, "resume": 0, "window": 3600,
                  "failures": {"events": [{"time": "25 h", "target": "4c-0", "duration": "3 h"}]}},
                 qos={"cpu_ready_pct": 50.0, "vcpus_per_core": 4, "memory_overcommit": 1.5},
                 memory={"model": "vsphere-like", "inter_vm_sharing": True},
                 guest_images=[{"vms": "vm-*", "image": "linux-server-stack"}])
    r = plan(inv, spec).waves["_landing_result"]
    assert list(r.ctx.vms.group_names) == ["moved-image-0"]
    assert [g.workload for g in r.ctx.scenario.vms] == [{"guest_image": "linux-server-stack"}]
    assert r.vm_acc.sum["mem_shared_gib"].max() > 0


def test_zero_shares_from_rvtools_consumed_memory(tmp_path):
    # the fixture's vMemory gives Consumed = Active + 200 MiB per VM: the never-touched share is 1 - Consumed / Size,
    # at most 1 - wws_fraction (0.9); a VM the tab does not list sends all its memory
    from densim.tools.plan.waves import zero_shares

    w = small_workload()
    inv = load_inventory(write_rvtools_xlsx(tmp_path / "e.xlsx", w))
    assert inv.consumed_bytes is not None
    mib = float(1 << 20)
    size = np.array([int(g * 1024) for g in w.mem_gib], float) * mib
    consumed = (w.mem_used_mib[0].astype(int) + 200) * mib
    z, rule = zero_shares(inv, WavesSpec(zero_fraction="consumed"))
    assert np.allclose(z, np.clip(1 - consumed / size, 0, 0.9), rtol=0, atol=1e-12)
    assert (z > 0).all() and "Consumed" in rule and "0 VMs without the figure" in rule
    # the moves are shorter than sending every page, and a share keeps its old meaning
    spec = WavesSpec(zero_fraction="consumed")
    full = move_times(np.asarray(inv.mem_bytes, float), np.zeros(inv.n_vms), WavesSpec())
    part = move_times(np.asarray(inv.mem_bytes, float), np.zeros(inv.n_vms), spec, z)
    assert (part.total_s < full.total_s).all()
    assert zero_shares(inv, WavesSpec(zero_fraction=0.3))[0] == 0.3


def test_consumed_zero_shares_need_an_export_that_gives_them():
    from densim.tools.plan.waves import zero_shares

    inv = build_inventory(["a"], [1], [2000.0], [4 * 2**30])
    with pytest.raises(InputError) as exc:
        zero_shares(inv, WavesSpec(zero_fraction="consumed"))
    assert exc.value.where == "waves.zero_fraction" and "vMemory" in exc.value.problem
    with pytest.raises(ValueError, match="must be in \\[0, 1\\) or 'consumed'"):
        WavesSpec(zero_fraction=1.5)
