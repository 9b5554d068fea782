"""``placement: {policy: given, assignment: FILE}``: each VM on the host a file names, and ``vms[].sizes`` for a trace group.

Small scenario: 2 hosts of 4 cores (no SMT) at 2 GHz, 16 GiB, cpu_overcommit 1 -> 4 vCPUs and 16 GiB each;
3 VMs of 1 vCPU and 2 GiB (group ``v``: ``v-0``, ``v-1``, ``v-2``). First-fit would put all three on host 0;
the file puts v-0 and v-2 on host 1 and v-1 on host 0.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from densim.errors import InputError, ScenarioInvalid
from densim.plant import plant_from_dict


def _sc(tmp_path: Path, rows: str | None, *, count: int = 3, policy: str = "given", **extra) -> dict:
    sc = {
        "name": "given-micro",
        "cluster": {"hosts": [{"name": "h", "count": 2, "cpu": {"sockets": 1, "cores_per_socket": 4, "threads_per_core": 1,
                                                                "base_clock": "2 GHz"},
                               "memory": "16 GiB", "power": {"model": "linear", "idle": "100 W", "peak": "200 W"}}]},
        "vms": [{"name": "v", "count": count, "vcpus": 1, "vcpu_speed": "2 GHz", "memory": "2 GiB",
                 "profile": {"kind": "constant", "mean": 0.5}}],
        "placement": {"policy": policy},
        "simulation": {"horizon": "2 h", "step": "1 h"},
    }
    if rows is not None:
        (tmp_path / "a.csv").write_text(rows)
        sc["placement"]["assignment"] = "a.csv"
    sc.update(extra)
    return sc


def _plant(tmp_path, sc):
    return plant_from_dict(sc, base_dir=tmp_path)


def _hosts(tmp_path, sc) -> list[int]:
    from densim.engine.run import place_vms
    from densim.engine.state import build_context

    ctx = build_context(_plant(tmp_path, sc), seed=1)
    place_vms(ctx)
    return ctx.vms.host.tolist()


def test_each_vm_lands_on_the_host_the_file_names(tmp_path):
    # by name (h-1: the second host) or by 0-based index, rows in any order
    assert _hosts(tmp_path, _sc(tmp_path, "vm,host\nv-2,h-1\nv-0,h-1\nv-1,h-0\n")) == [1, 0, 1]
    assert _hosts(tmp_path, _sc(tmp_path, "vm,host\nv-0,1\nv-1,0\nv-2,1\n")) == [1, 0, 1]
    assert _hosts(tmp_path, _sc(tmp_path, "vm,host\nv-0,1\nv-1,h-0\nv-2,h-1\n")) == [1, 0, 1]  # mixed
    # the same VMs by first-fit: 3 vCPUs <= 4 on host 0
    assert _hosts(tmp_path, _sc(tmp_path, None, policy="first-fit")) == [0, 0, 0]


def test_names_written_safe_for_spreadsheets_are_read_back(tmp_path):
    # densim writes a cell starting with = + - @ with a ' in front (densim.csvsafe); the reader takes it off again
    sc = _sc(tmp_path, "vm,host\n'=v-0,h-1\n'=v-1,h-0\n'=v-2,h-1\n")
    sc["vms"][0]["name"] = "=v"
    assert _hosts(tmp_path, sc) == [1, 0, 1]


def test_a_run_reports_the_given_hosts(tmp_path):
    from densim.engine import simulate

    res = simulate(_plant(tmp_path, _sc(tmp_path, "vm,host\nv-0,h-1\nv-1,h-0\nv-2,h-1\n")), seed=1)
    s = res.summary
    assert (s["hosts_used"], s["vms_placed"], s["vms_unplaced"]) == (2, 3, 0)


@pytest.mark.parametrize("rows, where, words", [
    ("vm,host\nv-0,h-1\nv-9,h-0\nv-2,h-1\n", "row 3, column 'vm'", "unknown VM 'v-9'"),
    ("vm,host\nv-0,h-1\nv-1,h-7\nv-2,h-1\n", "row 3, column 'host'", "unknown host 'h-7'"),
    ("vm,host\nv-0,1\nv-1,2\nv-2,1\n", "row 3, column 'host'", "host index 2 out of range: the scenario has 2 hosts"),
    ("vm,host\nv-0,h-1\nv-2,h-1\n", "column 'vm'", "no row for VM 'v-1'"),
    ("vm,host\nv-0,h-1\nv-1,h-0\nv-0,h-0\nv-2,h-0\n", "row 4, column 'vm'", "VM 'v-0' again (first on row 2)"),
    ("vm,server\nv-0,h-1\n", "header", "missing column(s) host"),
    ("vm,host\nv-0,h-1\nv-1,\nv-2,h-0\n", "row 3, column 'host'", "empty"),
])
def test_a_bad_assignment_file_is_one_line_naming_file_row_and_column(tmp_path, rows, where, words):
    with pytest.raises(InputError) as e:
        _hosts(tmp_path, _sc(tmp_path, rows))
    line = e.value.one_line()
    assert "\n" not in line and "a.csv" in line and where in line and words in line, line


def test_a_host_over_its_capacity_is_refused_not_placed(tmp_path):
    # 5 VMs of 1 vCPU on host 0, whose capacity is 4 cores x cpu_overcommit 1 = 4 vCPUs: refused, naming the rows
    rows = "vm,host\n" + "".join(f"v-{i},h-0\n" for i in range(5))
    with pytest.raises(InputError, match=r"a\.csv.*row 6, column 'host'.*host 'h-0' gets 5 vCPUs from 5 VMs "
                                         r"\(rows 2, 3, 4, 5, 6\), above its capacity of 4 under placement.cpu_overcommit"):
        _hosts(tmp_path, _sc(tmp_path, rows, count=5))
    # memory: 9 x 2 GiB = 18 GiB > 16 GiB (cpu_overcommit 3 leaves 12 vCPUs of room)
    rows = "vm,host\n" + "".join(f"v-{i},h-0\n" for i in range(9))
    sc = _sc(tmp_path, rows, count=9)
    sc["placement"]["cpu_overcommit"] = 3.0
    with pytest.raises(InputError, match=r"19327352832 bytes of configured memory from 9 VMs .*above its capacity of "
                                         r"17179869184 under placement.memory_overcommit"):
        _hosts(tmp_path, sc)


def test_contradictory_or_missing_settings_are_refused_by_validate(tmp_path):
    with pytest.raises(ScenarioInvalid, match=r"placement.*set placement.assignment"):
        _plant(tmp_path, _sc(tmp_path, None))
    sc = _sc(tmp_path, None, policy="first-fit")
    sc["placement"]["assignment"] = "a.csv"
    with pytest.raises(ScenarioInvalid, match=r"policy 'first-fit' does not read it"):
        _plant(tmp_path, sc)
    sc = _sc(tmp_path, "vm,host\n")
    sc["placement"]["assignment"] = "nowhere.csv"
    with pytest.raises(ScenarioInvalid, match=r"placement.assignment: not found: .*nowhere.csv"):
        _plant(tmp_path, sc)
    # lifetimes: a given placement places once, at the start
    sc = _sc(tmp_path, "vm,host\nv-0,h-1\nv-1,h-0\nv-2,h-1\n", scheduling={"lifetimes": "on"})
    with pytest.raises(ScenarioInvalid, match=r"'given' cannot place VMs as they arrive"):
        _plant(tmp_path, sc)
    # failures: restarts need an online rule, named explicitly
    sc = _sc(tmp_path, "vm,host\nv-0,h-1\nv-1,h-0\nv-2,h-1\n", failures={"events": [{"target": "h-1", "time": "30 min", "duration": "1 h"}]})
    with pytest.raises(ScenarioInvalid, match=r"failures.ha.restart_policy: placement 'given' lands each VM"):
        _plant(tmp_path, sc)


def test_with_failures_vms_start_on_their_given_hosts_and_restart_by_the_ha_policy(tmp_path):
    # h-1 fails at 30 min for 1 h: v-0 and v-2 (given on h-1) restart on h-0 by first-fit (1 + 2 = 3 vCPUs <= 4);
    # v-1 (given on h-0) is never touched. The outages name h-1 as the failed host of exactly v-0 and v-2.
    from densim.engine import simulate

    sc = _sc(tmp_path, "vm,host\nv-0,h-1\nv-1,h-0\nv-2,h-1\n",
             failures={"events": [{"target": "h-1", "time": "30 min", "duration": "1 h"}],
                       "ha": {"restart_policy": "first-fit", "admission": "off"}})
    res = simulate(_plant(tmp_path, sc), seed=1)
    s = res.summary
    assert s["failures"]["vms_interrupted"] == 2 and s["failures"]["power_ons_refused"] == 0
    out = res.ctx.failures.tables(res.ctx.hosts.names)["outages"]
    failed = sorted(zip(out["vm"].to_list(), out["failed_host"].to_list(), out["restart_host"].to_list()))
    assert failed == [("v-0", "h-1", "h-0"), ("v-2", "h-1", "h-0")]


def _bitbrains(tmp_path: Path) -> Path:
    from tests.planning.fixtures import Workload, write_bitbrains

    t = 4
    w = Workload(names=["a", "b"], vcpus=np.array([4, 8]), vcpu_mhz=2000.0, mem_gib=np.array([8.0, 16.0]),
                 cpu_pct=np.full((t, 2), 25.0), mem_used_mib=np.full((t, 2), 1000.0),
                 disk_read_kBps=np.zeros((t, 2)), disk_write_kBps=np.zeros((t, 2)))
    return write_bitbrains(tmp_path / "bb", w)


def test_a_sizes_file_gives_trace_vms_their_own_sizes(tmp_path):
    from densim.engine.state import build_context

    inv = _bitbrains(tmp_path)
    names = build_context(_plant(tmp_path, _trace_sc(inv)), seed=1).vms.names.tolist()
    (tmp_path / "s.csv").write_text(f"vm,vcpus,memory\n{names[1]},2,4 GiB\n")
    ctx = build_context(_plant(tmp_path, _trace_sc(inv, sizes="s.csv")), seed=1)
    # the listed VM takes 2 vCPUs and 4 GiB; the other keeps the trace's 4 vCPUs and 8 GiB
    assert ctx.vms.vcpus.tolist() == [4, 2]
    assert ctx.vms.mem_bytes.tolist() == [8 * 2**30, 4 * 2**30]
    (tmp_path / "s.csv").write_text(f"vm,vcpus,memory\n{names[1]},0,4 GiB\n")
    with pytest.raises(InputError, match=r"s\.csv.*row 2, column 'vcpus'.*not a whole number of vCPUs"):
        build_context(_plant(tmp_path, _trace_sc(inv, sizes="s.csv")), seed=1)
    (tmp_path / "s.csv").write_text(f"vm,vcpus,memory\n{names[1]},2,4 GB\n")
    with pytest.raises(InputError, match=r"row 2, column 'memory'.*ambiguous"):
        build_context(_plant(tmp_path, _trace_sc(inv, sizes="s.csv")), seed=1)
    (tmp_path / "s.csv").write_text("vm,vcpus,memory\nnobody,2,4 GiB\n")
    with pytest.raises(InputError, match=r"row 2, column 'vm'.*unknown VM of this group \(vms\[0\]\) 'nobody'"):
        build_context(_plant(tmp_path, _trace_sc(inv, sizes="s.csv")), seed=1)
    with pytest.raises(ScenarioInvalid, match=r"not both"):
        _plant(tmp_path, _trace_sc(inv, sizes="s.csv", vcpus=2))


def _trace_sc(inv: Path, **group) -> dict:
    return {"name": "sizes", "cluster": {"hosts": [{"name": "h", "count": 2, "cpu": {"sockets": 1, "cores_per_socket": 8,
                                                                                     "threads_per_core": 1, "base_clock": "2 GHz"},
                                                    "memory": "64 GiB", "power": {"model": "linear", "idle": "100 W", "peak": "200 W"}}]},
            "vms": [{"name": "vm", "trace": {"format": "bitbrains", "path": str(inv)}, **group}]}


def test_cli_run_and_validate_refuse_a_bad_assignment_in_one_line(tmp_path):
    from densim.cli.main import app

    sc = _sc(tmp_path, "vm,host\nv-0,h-1\nv-1,h-0\nv-9,h-1\n")
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump(sc))
    r = CliRunner().invoke(app, ["run", str(f), "--out", str(tmp_path / "o"), "--no-progress", "--no-report"])
    assert r.exit_code == 1
    err = (r.stderr or r.stdout).strip().splitlines()
    assert len(err) == 1 and "a.csv" in err[0] and "row 4, column 'vm'" in err[0] and "unknown VM 'v-9'" in err[0], err
    assert not (tmp_path / "o" / "summary.json").exists()
    ok = _sc(tmp_path, "vm,host\nv-0,h-1\nv-1,h-0\nv-2,h-1\n")
    f.write_text(yaml.safe_dump(ok))
    r = CliRunner().invoke(app, ["run", str(f), "--out", str(tmp_path / "o"), "--no-progress", "--no-report"])
    assert r.exit_code == 0, r.output
    assert json.loads((tmp_path / "o" / "summary.json").read_text())["hosts_used"] == 2
