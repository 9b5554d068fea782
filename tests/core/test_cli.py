"""The command line end to end: run, validate, schema, demo, bad input."""

import json
import shutil

import jsonschema
import polars as pl
import pytest
import yaml
from typer.testing import CliRunner

from densim.cli.main import app

runner = CliRunner()


def test_bitbrains_small_end_to_end(repo, traces, tmp_path):
    out = tmp_path / "bb"
    r = runner.invoke(app, ["run", str(repo / "examples/bitbrains-small.yaml"), "--out", str(out), "--no-progress"])
    assert r.exit_code == 0, r.output
    s = json.loads((out / "summary.json").read_text())
    # total CPU demand equals the trace's total (sum of usage x duration) within 0.01 %
    assert s["totals"]["cpu_demand_mhz_s"] == pytest.approx(2.0738e11, rel=1e-4)
    for key in ("cpu_demand_mhz_s", "cpu_delivered_mhz_s", "cpu_unserved_mhz_s", "cpu_ready_s", "energy_j"):
        assert key in s["totals"]
    assert s["seed"] == 42 and s["hosts_total"] == 9 and s["vms_placed"] + s["vms_unplaced"] == 50
    assert s["vms_unplaced"] == len(s["unplaced_vms"])
    vms = pl.read_parquet(out / "vms.parquet")
    assert vms.height == 50 and vms["cpu_demand_mhz_s"].sum() == pytest.approx(s["totals"]["cpu_demand_mhz_s"], rel=1e-9)
    hs = pl.read_parquet(out / "host_steps.parquet")
    assert hs.height == 9 * s["grid"]["n_steps"]
    assert (out / "report.html").stat().st_size > 100_000


def test_same_seed_same_results(repo, tmp_path):
    from densim.builtin import builtin_path

    outs = []
    for i in range(2):
        out = tmp_path / f"d{i}"
        assert runner.invoke(app, ["run", str(builtin_path("demo.yaml")), "--out", str(out), "--no-report"]).exit_code == 0
        outs.append(out)
    for name in ("summary.json", "vms.parquet", "hosts.parquet", "host_steps.parquet"):
        assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes(), name


def test_validate_reports_every_problem_with_its_path(write_yaml):
    p = write_yaml({
        "cluster": {"hosts": [
            {"count": 1, "cpu": {"cores_per_socket": 4, "base_clock": "2 GHz"}, "memory": "8 GiB", "power": {"model": "linear", "idle": "1 W", "peak": "2 W"}},
            {"count": 1, "cpu": {"cores_per_socket": 4, "base_clock": "2 GHz"}, "memory": "8 GiB", "power": {"model": "linear", "idle": "1 W", "peak": "2 W"}},
            {"count": 1, "cpu": {"cores_per_socket": 0, "base_clock": "2 GHz"}, "memory": "8 GiB", "power": {"model": "linear", "idle": "1 W", "peak": "2 W"}},
        ]},
        "vms": [{"name": "a", "count": 1, "vcpus": 1, "memory": "3 GiBs", "profile": {"mean": 0.2}}],
    })
    r = runner.invoke(app, ["validate", str(p)])
    assert r.exit_code == 1
    err = r.output
    assert f"{p}:cluster.hosts[2].cpu.cores_per_socket: must be > 0" in err
    assert f"{p}:vms[0].memory: cannot parse '3 GiBs' as a quantity" in err


_HOST = {"count": 1, "cpu": {"cores_per_socket": 4, "base_clock": "2 GHz"}, "memory": "8 GiB",
         "power": {"model": "linear", "idle": "1 W", "peak": "2 W"}}
_VM = {"name": "a", "count": 1, "vcpus": 1, "memory": "1 GiB", "profile": {"mean": 0.2}}


@pytest.mark.parametrize("case", ["two-problems", "unknown-policy", "missing", "folder", "binary"])
def test_validate_prints_the_lines_run_prints(tmp_path, case):
    # one format for every error line: 'densim: error: FILE:field.path: problem' (validate printed the
    # lines without the prefix)
    p = tmp_path / "s.yaml"
    doc = {"cluster": {"hosts": [_HOST]}, "vms": [_VM], "simulation": {"step": "5 min", "horizon": "1 h"}}
    if case == "two-problems":
        doc["cluster"]["hosts"] = [{**_HOST, "cpu": {"cores_per_socket": 0, "base_clock": "2 GHz"}}]
        doc["vms"] = [{**_VM, "memory": "3 GiBs"}]
    elif case == "unknown-policy":
        doc["placement"] = {"policy": "no-such-policy"}
    if case == "folder":
        p.mkdir()
    elif case == "binary":
        p.write_bytes(b"\x00\x01")
    elif case != "missing":
        p.write_text(yaml.safe_dump(doc))
    v = runner.invoke(app, ["validate", str(p)])
    r = runner.invoke(app, ["run", str(p), "--out", str(tmp_path / "o"), "--no-progress", "--no-report"])
    assert v.exit_code == r.exit_code == 1
    lines = v.stderr.strip().splitlines()
    assert lines == r.stderr.strip().splitlines() and v.stdout == ""
    assert all(ln.startswith(f"densim: error: {p}") for ln in lines) and len(lines) == (2 if case == "two-problems" else 1)


def test_unknown_unit_in_run_is_one_line_and_leaves_no_summary(write_yaml, tmp_path):
    p = write_yaml({
        "cluster": {"hosts": [{"count": 1, "cpu": {"cores_per_socket": 4, "base_clock": "2 GHz"}, "memory": "8 GiB",
                               "power": {"model": "linear", "idle": "100 W", "peak": "2 furlongs"}}]},
        "vms": [{"name": "a", "count": 1, "vcpus": 1, "memory": "1 GiB", "profile": {"mean": 0.2}}],
        "simulation": {"horizon": "1 h"},
    })
    out = tmp_path / "o"
    r = runner.invoke(app, ["run", str(p), "--out", str(out)])
    assert r.exit_code == 1
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and "cluster.hosts[0].power.peak" in lines[0] and "furlongs" in lines[0]
    assert not (out / "summary.json").exists()


def test_bad_trace_in_run_is_one_line(traces, write_yaml, tmp_path):
    d = tmp_path / "pl"
    d.mkdir()
    for f in sorted((traces / "planetlab-20110303").iterdir())[:2]:
        shutil.copy(f, d / f.name)
    bad = sorted(d.iterdir())[0]
    bad.write_text(bad.read_text().replace("\n", "\nx7\n", 1))
    p = write_yaml({
        "cluster": {"hosts": [{"count": 1, "cpu": {"cores_per_socket": 4, "base_clock": "2 GHz"}, "memory": "8 GiB",
                               "power": {"model": "linear", "idle": "100 W", "peak": "200 W"}}]},
        "vms": [{"name": "a", "count": 2, "vcpus": 1, "memory": "1 GiB", "trace": {"format": "planetlab", "path": str(d)}}],
    })
    out = tmp_path / "o"
    r = runner.invoke(app, ["run", str(p), "--out", str(out)])
    assert r.exit_code == 1
    assert r.output.strip() == f"densim: error: {bad}:line 2: not a number: 'x7'"
    assert not (out / "summary.json").exists()


def test_schema_is_valid_json_schema_and_accepts_examples(repo):
    r = runner.invoke(app, ["schema"])
    assert r.exit_code == 0
    schema = json.loads(r.output)
    jsonschema.Draft202012Validator.check_schema(schema)
    doc = yaml.safe_load((repo / "examples/planetlab.yaml").read_text())
    jsonschema.validate(doc, schema)


def test_imports_resolve_relative_to_the_importing_file(tmp_path):
    (tmp_path / "parts").mkdir()
    (tmp_path / "parts/hw.yaml").write_text(yaml.safe_dump({
        "parts": {"servers": [{"name": "s1", "cpu": {"model": "xeon-x5680", "sockets": 2}, "memory": "96 GiB",
                               "power": {"model": "linear", "idle": "150 W", "peak": "300 W"}}]},
        "cluster": {"hosts": [{"server": "s1", "count": 2}]},
    }))
    main = tmp_path / "main.yaml"
    main.write_text(yaml.safe_dump({"imports": ["parts/hw.yaml"], "vms": [
        {"name": "a", "count": 4, "vcpus": 2, "memory": "4 GiB", "profile": {"mean": 0.3}}], "simulation": {"horizon": "1 h"}}))
    r = runner.invoke(app, ["run", str(main), "--out", str(tmp_path / "o"), "--no-report", "--json"])
    assert r.exit_code == 0, r.output
    s = json.loads(r.output[r.output.index("{"):])
    assert s["hosts_total"] == 2 and s["vms_placed"] == 4


def test_demo_and_models_and_studies(tmp_path, traces):  # densim studies reads the shared traces
    r = runner.invoke(app, ["demo", "--out", str(tmp_path / "demo"), "--no-progress"])
    assert r.exit_code == 0, r.output
    assert "report.html" in r.output and (tmp_path / "demo/report.html").exists()
    r = runner.invoke(app, ["models"])
    assert r.exit_code == 0 and "first-fit" in r.output and "binomial" in r.output
    assert runner.invoke(app, ["studies"]).exit_code == 0
    r = runner.invoke(app, ["study", "no-such-study"])
    assert r.exit_code == 1
