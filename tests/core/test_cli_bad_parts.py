"""Bad parts in a scenario's own ``parts:``: one line naming the part and the field, exit 1, no traceback."""

from __future__ import annotations

import pytest
import yaml
from typer.testing import CliRunner

from densim.cli.main import app

runner = CliRunner()

SSD = {"name": "my-ssd", "kind": "nvme_ssd", "read_latency": "85 us", "write_latency": "20 us",
       "read_iops": 500000, "write_iops": 170000, "seq_read": "3 GB/s", "seq_write": "1 GB/s", "capacity": "1.6 TB"}


def _pooled(repo, device: dict) -> dict:
    d = yaml.safe_load((repo / "examples/fabric/pooled-nvme.yaml").read_text())
    d["parts"] = {"devices": [device]}
    d["fabric"]["pools"][0]["device"] = device["name"]
    return d


def _one_error_line(r, path) -> str:
    assert r.exit_code == 1, r.output
    assert "Traceback" not in r.output and r.exception is None or isinstance(r.exception, SystemExit)
    lines = [x for x in r.output.splitlines() if x.strip()]
    assert len(lines) == 1, r.output
    assert str(path) in lines[0]
    return lines[0]


@pytest.mark.parametrize("command", ["validate", "run"])
def test_ssd_without_seq_read_used_by_the_fabric_model(repo, write_yaml, tmp_path, command):
    p = write_yaml(_pooled(repo, {k: v for k, v in SSD.items() if k != "seq_read"}))
    args = [command, str(p)] + (["--out", str(tmp_path / "o"), "--no-progress", "--no-report"] if command == "run" else [])
    line = _one_error_line(runner.invoke(app, args), p)
    assert line.endswith("fabric.pools[0].device: device 'my-ssd': seq_read is required by the fabric model "
                         "(give seq_read, or media_rate for an HDD)")


@pytest.mark.parametrize("command", ["validate", "run"])
def test_device_without_read_latency(repo, write_yaml, tmp_path, command):
    p = write_yaml(_pooled(repo, {k: v for k, v in SSD.items() if k != "read_latency"}))
    args = [command, str(p)] + (["--out", str(tmp_path / "o"), "--no-progress", "--no-report"] if command == "run" else [])
    line = _one_error_line(runner.invoke(app, args), p)
    assert "parts.devices[0]: device 'my-ssd': read_latency is required" in line


@pytest.mark.parametrize("command", ["validate", "run"])
def test_hdd_mechanics_without_media_rate(repo, write_yaml, tmp_path, command):
    hdd = {"name": "my-hdd", "kind": "hdd", "rpm": 10000, "seek_read": "4 ms", "seek_write": "4.4 ms",
           "ncq_gain": 1.6, "capacity": "900 GB"}
    p = write_yaml(_pooled(repo, hdd))
    args = [command, str(p)] + (["--out", str(tmp_path / "o"), "--no-progress", "--no-report"] if command == "run" else [])
    line = _one_error_line(runner.invoke(app, args), p)
    assert "parts.devices[0]: device 'my-hdd': media_rate is required for a drive given by its mechanics" in line


def test_storage_target_part_missing_a_field(repo, write_yaml):
    d = yaml.safe_load((repo / "examples/fabric/pooled-nvme.yaml").read_text())
    d["parts"] = {"storage_targets": [{"name": "half-target", "device": "intel-dc-p4600-1.6tb", "device_count": 4,
                                       "controller_bandwidth": "1 GB/s", "controller_iops": 100000}]}
    d["fabric"]["pools"][0]["target"] = "half-target"
    p = write_yaml(d)
    line = _one_error_line(runner.invoke(app, ["validate", str(p)]), p)
    assert "parts.storage_targets[0]: storage target 'half-target': port_speed is required" in line


def test_complete_ssd_part_is_valid(repo, write_yaml):
    p = write_yaml(_pooled(repo, SSD))
    r = runner.invoke(app, ["validate", str(p)])
    assert r.exit_code == 0, r.output
