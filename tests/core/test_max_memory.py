"""--max-memory: runs and plans are sized before they allocate, and refused in one line above the limit."""

from __future__ import annotations

import copy

import pytest
import yaml
from typer.testing import CliRunner

from densim.cli.estimates import run_bytes, run_shape, sizing_space
from densim.cli.main import app
from densim.spec import load_scenario
from tests.planning.fixtures import small_workload, write_generic_csv

runner = CliRunner()

BASE = {
    "cluster": {"hosts": [{"count": 10_000, "cpu": {"cores_per_socket": 16, "base_clock": "2 GHz"}, "memory": "256 GiB",
                           "power": {"model": "linear", "idle": "100 W", "peak": "300 W"}}]},
    "vms": [{"name": "v", "count": 100_000, "vcpus": 1, "memory": "1 GiB", "profile": {"kind": "constant", "mean": 0.3}}],
    "simulation": {"step": "5 min", "horizon": "1 d"},
}


def _scenario(tmp_path, **sim):
    doc = copy.deepcopy(BASE)
    doc["simulation"].update(sim)
    p = tmp_path / "s.yaml"
    p.write_text(yaml.safe_dump(doc))
    return p


def test_estimate_matches_the_benchmark_ladder(tmp_path):
    # benchmarks/ladder.py, 100k rung: 100,000 VMs x 288 steps on 10,000 hosts, 0.59 GiB peak RSS
    sc = load_scenario(_scenario(tmp_path))
    assert run_shape(sc) == (100_000, 10_000, 288)
    need, shape = run_bytes(sc)
    assert 0.3 * 2**30 < need < 1.2 * 2**30 and shape == "100,000 VMs x 288 steps on 10,000 hosts"


def test_a_run_above_the_limit_is_refused_before_it_starts(tmp_path):
    p = _scenario(tmp_path, step="1 s", horizon="30 d")  # 2.6 million steps x 100,000 VMs
    out = tmp_path / "o"
    r = runner.invoke(app, ["run", str(p), "--out", str(out), "--no-progress"])
    assert r.exit_code == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and str(p) in lines[0] and "more than --max-memory (8.0 GiB)" in lines[0]
    assert "100,000 VMs x 2,592,000 steps" in lines[0] and not out.exists()
    r = runner.invoke(app, ["run", str(p), "--out", str(out), "--no-progress", "--max-memory", "1 MiB"])
    assert r.exit_code == 1 and "more than --max-memory (1 MiB)" in r.stderr


@pytest.mark.parametrize("value", ["abc", "0", "-1 GiB", "nan GiB", "5 W"])
def test_max_memory_must_be_a_size(tmp_path, value):
    r = runner.invoke(app, ["run", str(_scenario(tmp_path)), "--out", str(tmp_path / "o"), "--max-memory", value])
    assert r.exit_code == 2 and "--max-memory" in r.output + r.stderr


def test_plan_refuses_an_inventory_above_the_limit(tmp_path):
    inv = write_generic_csv(tmp_path / "w.csv", small_workload(4, 50))
    cand = tmp_path / "c.yaml"
    cand.write_text(yaml.safe_dump({"candidates": [{"name": "h", "cpu": {"sockets": 2, "cores_per_socket": 8, "base_clock": "2.4 GHz"},
                                                    "memory": "128 GiB", "power": {"model": "linear", "idle": "70 W", "peak": "230 W"},
                                                    "price_usd": 5000}], "windows": 5}))
    r = runner.invoke(app, ["plan", str(inv), "--candidates", str(cand), "--out", str(tmp_path / "o"), "--max-memory", "4 KiB"])
    assert r.exit_code == 1 and len(r.stderr.strip().splitlines()) == 1
    assert "demand grid (50 steps of 300 s x 4 VMs)" in r.stderr and "--max-memory" in r.stderr
    assert not (tmp_path / "o" / "summary.json").exists()
    r = runner.invoke(app, ["plan", str(inv), "--candidates", str(cand), "--out", str(tmp_path / "o")])
    assert r.exit_code == 0, r.output


def test_sizing_space_is_counted_without_searching(repo):
    from densim.plant.storage import load_sizing

    sc, _ = load_sizing(repo / "examples" / "storage" / "size-500k-iops.yaml")
    # 4 devices x 3 RAID levels x 96 drive counts x 3 controllers x 2 (extra controllers) x 5 core counts
    assert sizing_space(sc) == 4 * 3 * 96 * 3 * 2 * 5


def test_a_trace_is_not_listed_when_the_scenario_gives_count_and_horizon(tmp_path, monkeypatch):
    # issue 34: the estimate listed and stat'ed the 1,052 PlanetLab files (15-25 ms of every run) to learn a
    # VM count and a length the scenario already gives; it lists the folder only when one of them is missing
    import densim.cli.estimates as est

    folder = tmp_path / "pl"
    folder.mkdir()
    for name in ("a", "b", "c"):
        (folder / name).write_text("10\n20\n30\n")  # 3 samples of 300 s each
    doc = copy.deepcopy(BASE)
    doc["vms"] = [{"name": "v", "count": 7, "vcpus": 1, "memory": "1 GiB",
                   "trace": {"format": "planetlab", "path": str(folder), "assign": "cycle"}}]
    p = tmp_path / "s.yaml"
    p.write_text(yaml.safe_dump(doc))
    listed = []
    real = est._trace_vms_and_steps
    monkeypatch.setattr(est, "_trace_vms_and_steps", lambda trace, step_s: listed.append(1) or real(trace, step_s))
    assert run_shape(load_scenario(p)) == (7, 10_000, 288) and listed == []  # count 7, 1 d / 5 min
    doc["simulation"].pop("horizon")  # the run lasts as long as the trace: 3 samples of 300 s
    p.write_text(yaml.safe_dump(doc))
    assert run_shape(load_scenario(p)) == (7, 10_000, 3) and listed == [1]
