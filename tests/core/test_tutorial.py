"""docs/tutorial/first-run.md, step by step as written: each step's commands run and each claim it makes holds.

The YAML snippet and the SQL are read from the page itself, so an edit there is tested here.
"""

from __future__ import annotations

import json
import re
import shutil

import duckdb
import pytest
import yaml
from typer.testing import CliRunner

from densim.cli.main import app

from tests.conftest import REPO, TRACES

runner = CliRunner()
PAGE = REPO / "docs/tutorial/first-run.md"


def blocks(lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", PAGE.read_text(), re.S | re.M)


def run(*args) -> None:
    r = runner.invoke(app, [str(a) for a in args], catch_exceptions=False)
    assert r.exit_code == 0, r.output


def summary(d) -> dict:
    return json.loads((d / "summary.json").read_text())


@pytest.fixture
def my_yaml(tmp_path):
    # step 1: "cp src/densim/builtin/demo.yaml my.yaml" (beside ../shared, as in a clone's root)
    p = tmp_path / "my.yaml"
    shutil.copy(REPO / "src/densim/builtin/demo.yaml", p)
    return p


def test_step_2_lower_overcommit_uses_more_hosts_less_ready_more_energy(my_yaml, tmp_path):
    text = PAGE.read_text()
    assert "Lower the vCPU over-commit from 3 to 2" in text and "placement.cpu_overcommit: 2" in text
    doc = yaml.safe_load(my_yaml.read_text())
    assert doc["placement"]["cpu_overcommit"] == 3  # the page says the demo's is 3
    run("run", my_yaml, "--out", tmp_path / "at3", "--no-report", "--no-progress")
    doc["placement"]["cpu_overcommit"] = 2
    my_yaml.write_text(yaml.safe_dump(doc, sort_keys=False))
    run("run", my_yaml, "--out", tmp_path / "at2", "--no-report", "--no-progress")
    a3, a2 = summary(tmp_path / "at3"), summary(tmp_path / "at2")
    # "More hosts are used, CPU Ready falls, energy rises (more hosts at idle power)"
    assert a2["hosts_used"] > a3["hosts_used"]
    assert a2["totals"]["cpu_ready_s"] < a3["totals"]["cpu_ready_s"]
    assert a2["totals"]["energy_j"] > a3["totals"]["energy_j"]
    # "the same file and seed give identical results, byte for byte"
    run("run", my_yaml, "--out", tmp_path / "again", "--no-report", "--no-progress")
    for name in ("summary.json", "vms.parquet", "hosts.parquet"):
        assert (tmp_path / "at2" / name).read_bytes() == (tmp_path / "again" / name).read_bytes(), name


def test_step_3_trace_snippet_runs(my_yaml, tmp_path):
    if not TRACES.exists():
        pytest.skip("../shared/traces is not beside the repository")
    (snippet,) = [b for b in blocks("yaml") if "trace:" in b]
    group = yaml.safe_load(snippet)["vms"][0]
    # "Paths are relative to the scenario file": the page's ../shared is beside the clone's root, so
    # the scenario file goes where my.yaml would be, in the root (written to tmp, path made absolute)
    assert group["trace"]["path"] == "../shared/traces/planetlab-20110303"
    group["trace"]["path"] = str(TRACES / "planetlab-20110303")
    doc = yaml.safe_load(my_yaml.read_text())
    doc["vms"][0] = group  # "Replace a VM group's profile with a trace"
    my_yaml.write_text(yaml.safe_dump(doc, sort_keys=False))
    run("run", my_yaml, "--out", tmp_path / "pl", "--no-report", "--no-progress")
    s = summary(tmp_path / "pl")
    assert s["vms_total"] == group["count"] + sum(g["count"] for g in doc["vms"][1:])


def test_step_4_validate_names_the_field_and_exits_1(my_yaml, tmp_path):
    text = PAGE.read_text()
    example = re.search(r"`(densim: error: my\.yaml:cluster\.hosts\[2\]\.cpu\.cores_per_socket: [^`]*)`", text).group(1)
    doc = yaml.safe_load(my_yaml.read_text())
    doc["cluster"]["hosts"].append(dict(doc["cluster"]["hosts"][0], name="third"))
    doc["cluster"]["hosts"][2]["cpu"] = dict(doc["cluster"]["hosts"][2].get("cpu") or {}, cores_per_socket=0)
    my_yaml.write_text(yaml.safe_dump(doc, sort_keys=False))
    r = runner.invoke(app, ["validate", str(my_yaml)])
    assert r.exit_code == 1
    line = r.output.strip().splitlines()[0]
    assert line.startswith("densim: error: ") and "cluster.hosts[2].cpu.cores_per_socket: must be > 0" in line
    assert example.endswith("cluster.hosts[2].cpu.cores_per_socket: must be > 0")


def test_step_5_sql_reads_the_outputs(my_yaml, tmp_path, monkeypatch):
    run("run", my_yaml, "--out", tmp_path / "out/my", "--no-report", "--no-progress")
    monkeypatch.chdir(tmp_path)  # the page's paths are relative: 'out/my/hosts.parquet'
    (code,) = blocks("python")
    queries = re.findall(r'duckdb\.sql\("(.*?)"\)', code)
    assert len(queries) == 2
    hosts = duckdb.sql(queries[0]).fetchall()
    assert hosts and all(row[1] > 0 and row[2] > 0 for row in hosts)  # hosts per server type, kWh
    worst = duckdb.sql(queries[1]).fetchall()
    assert len(worst) == 5 and [r[1] for r in worst] == sorted((r[1] for r in worst), reverse=True)
