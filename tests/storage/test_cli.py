"""`densim io`, `densim size` and `densim study mail-server` through the CLI (typer CliRunner)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from typer.testing import CliRunner

from densim.cli.main import app

REPO = Path(__file__).resolve().parents[2]
runner = CliRunner()


def test_io_table_and_json(tmp_path):
    f = REPO / "examples/storage/fio-30-ssd-5-hba.yaml"
    r = runner.invoke(app, ["io", str(f)])
    assert r.exit_code == 0, r.output
    for word in ("throughput", "latency mean / p99", "bottleneck", "controller", "device", "link", "cpu"):
        assert word in r.output
    out = tmp_path / "io"
    r = runner.invoke(app, ["io", str(f), "--json", "--out", str(out)])
    data = json.loads(r.output)
    assert data == json.loads((out / "summary.json").read_text())  # --out is a folder
    assert data["outstanding"] == 1000
    assert abs(data["throughput_iops"] * data["mean_latency_s"] - 1000) < 1e-6


def test_io_bad_input_exits_1_with_the_field(tmp_path):
    f = tmp_path / "bad.yaml"
    f.write_text(yaml.safe_dump({"system": {"arrays": [{"name": "d", "device": "sas-10k-900gb", "drives": 2, "raid": "raid5"}]},
                                 "workload": {"mode": "closed", "queue_depth": 0}}))
    out = tmp_path / "never"
    r = runner.invoke(app, ["io", str(f), "--out", str(out)])
    assert r.exit_code == 1
    assert f"{f}:system.arrays[0].drives: raid5 needs at least 3 drives, got 2" in r.output
    assert f"{f}:workload.queue_depth: must be > 0" in r.output
    assert not out.exists()


def test_size_prints_winner_and_runners_up():
    r = runner.invoke(app, ["size", str(REPO / "examples/storage/size-500k-iops.yaml"), "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["winner"]["device"] == "intel-dc-s3710-400gb" and len(data["runners_up"]) == 4
    for c in [data["winner"], *data["runners_up"]]:
        assert {"cost_usd", "power_w", "rack_units", "bottleneck"} <= set(c)


def test_study_mail_server_writes_summary(tmp_path):
    r = runner.invoke(app, ["study", "mail-server", "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output
    s = json.loads((tmp_path / "summary.json").read_text())
    assert s["seed"] == 42 and all(h["passed"] for h in s["headline"])
    assert (tmp_path / "report.html").exists()
