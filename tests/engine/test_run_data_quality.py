"""The run summary's data-quality section (issue 35 item 4): the plan's A-D rating rule on the run's demand sources."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from densim.cli.main import app
from densim.engine import simulate
from densim.plant import resolve
from densim.spec.loader import scenario_from_dict
from tests.planning.fixtures import small_workload, write_bitbrains

HOSTS = {"hosts": [{"name": "h", "count": 2, "server": "dual-platinum-8180-768g"}]}


def _run(vms: list[dict], **sim):
    sc = scenario_from_dict({"name": "dq", "cluster": HOSTS, "vms": vms, "placement": {"policy": "first-fit"},
                             "simulation": {"step": "5 min"} | sim})
    return simulate(resolve(sc)).summary.to_dict()["data_quality"]


PROFILE = {"name": "web", "count": 3, "vcpus": 2, "memory": "4 GiB", "profile": {"kind": "constant", "mean": 0.3}}


def test_a_synthetic_run_is_rated_d_and_says_why():
    dq = _run([PROFILE], horizon="1 h")
    # no measured demand at all: history D (synthetic), 3 of 3 VMs on a synthetic profile: defaulted D
    assert dq["rating"] == "D" and dq["grades"] == {"history": "D", "defaulted": "D"}
    assert dq["facts"]["kind"] == "synthetic" and dq["facts"]["synthetic_vms_share"] == 1.0
    assert "synthetic demand" in dq["reasons"][0]


def test_a_trace_run_grades_its_history_and_the_share_of_synthetic_vms(tmp_path):
    bb = write_bitbrains(tmp_path / "bb", small_workload(n_vms=4, n_steps=12))
    trace = {"name": "measured", "trace": {"format": "bitbrains", "path": str(bb)}}
    dq = _run([trace])
    # 12 samples of 300 s = 1 h = 0.0417 days: a short series, history C; no synthetic VM: defaulted A; rating C
    assert dq["facts"]["kind"] == "series" and dq["facts"]["step_s"] == 300.0
    assert dq["facts"]["days"] == pytest.approx(3600 / 86400)
    assert dq["grades"] == {"history": "C", "defaulted": "A"} and dq["rating"] == "C"
    # the same trace beside 3 synthetic VMs: 3 of 7 VMs (43 %) driven by a profile: defaulted C (<= 50 %)
    mixed = _run([trace, PROFILE])
    assert mixed["facts"]["synthetic_vms_share"] == pytest.approx(3 / 7)
    assert mixed["grades"]["defaulted"] == "C" and "43 % of VMs driven by a synthetic profile" in " ".join(mixed["reasons"])


def test_densim_run_writes_the_section_in_summary_json(tmp_path):
    sc = tmp_path / "s.yaml"
    sc.write_text("name: dq\ncluster:\n  hosts: [{name: h, count: 1, server: dual-platinum-8180-768g}]\n"
                  "vms: [{name: web, count: 2, vcpus: 2, memory: 4 GiB, profile: {kind: constant, mean: 0.3}}]\n"
                  "placement: {policy: first-fit}\nsimulation: {step: 5 min, horizon: 1 h}\n")
    r = CliRunner().invoke(app, ["run", str(sc), "--out", str(tmp_path / "out"), "--no-progress"])
    assert r.exit_code == 0, r.output
    s = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert s["data_quality"]["rating"] == "D"
