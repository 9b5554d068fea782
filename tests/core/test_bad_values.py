"""Values that used to be accepted although wrong (or hung the run) are one-line errors in validate and run alike."""

from __future__ import annotations

import copy

import pytest
from typer.testing import CliRunner

from densim.cli.main import app
from densim.units import UnitError, parse

runner = CliRunner()

BASE = {
    "cluster": {"hosts": [{"count": 1, "cpu": {"cores_per_socket": 4, "base_clock": "2 GHz"}, "memory": "16 GiB",
                           "power": {"model": "linear", "idle": "100 W", "peak": "200 W"}}]},
    "vms": [{"name": "v", "count": 2, "vcpus": 1, "memory": "1 GiB", "profile": {"kind": "constant", "mean": 0.5}}],
    "simulation": {"step": "5 min", "horizon": "1 h"},
}

# (field path, bad value, words the one-line error must contain)
CASES = [
    (("vms", 0, "memory"), "inf GiB", "vms[0].memory"),
    (("vms", 0, "memory"), "nan GiB", "vms[0].memory"),
    (("vms", 0, "memory"), "1e400 GiB", "not a finite quantity"),
    (("vms", 0, "memory"), "GiB", "has no number"),
    (("vms", 0, "memory"), "50 %", "not convertible to byte"),
    (("vms", 0, "memory"), "5 GiBxyz", "cannot parse"),
    (("cluster", "hosts", 0, "power", "idle"), "10**10**10 W", "powers are not allowed"),
    (("cluster", "hosts", 0, "power", "idle"), "1e9^1e9 W", "powers are not allowed"),
    (("vms", 0, "count"), True, "vms[0].count"),
    (("vms", 0, "count"), 1e30, "vms[0].count"),
    (("cluster", "hosts", 0, "count"), 10**12, "cluster.hosts[0].count"),
    (("placement", "cpu_overcommit"), float("inf"), "finite"),
    (("placement", "cpu_overcommit"), float("nan"), "placement.cpu_overcommit"),
    (("simulation", "step"), "1 d", "longer than the horizon"),
    (("simulation", "horizon"), "1000000 year", "time steps"),
    (("simulation", "start"), float("nan"), "simulation.start"),
    (("simulation", "seed"), 2**70, "simulation.seed"),
    (("simulation", "seed"), -1, "simulation.seed"),
]


def _set(d, path, value):
    for k in path[:-1]:
        d = d[k] if not isinstance(d, dict) or k in d else d.setdefault(k, {})
    d[path[-1]] = value


@pytest.mark.parametrize("path,value,words", CASES, ids=[f"{'.'.join(map(str, c[0]))}={c[1]!r}" for c in CASES])
@pytest.mark.parametrize("command", ["validate", "run"])
def test_bad_value_is_one_line_in_validate_and_run(path, value, words, command, write_yaml, tmp_path):
    doc = copy.deepcopy(BASE)
    _set(doc, path, value)
    f = write_yaml(doc)
    args = [command, str(f)] + (["--out", str(tmp_path / "o"), "--no-progress", "--no-report"] if command == "run" else [])
    r = runner.invoke(app, args)
    assert r.exit_code == 1, r.output
    err = (r.stderr or r.stdout).strip().splitlines()
    assert len(err) == 1 and words in err[0] and str(f) in err[0], err
    assert not (tmp_path / "o" / "summary.json").exists()


def test_good_quantities_still_parse():
    # 256 GiB = 256 x 2^30 bytes; 2.3 GHz = 2,300 MHz; "1,000 W" with a thousands separator
    assert parse("256 GiB", "byte") == 256 * 2**30
    assert parse("2.3 GHz", "MHz") == pytest.approx(2300.0)
    assert parse("1,000 W", "W") == 1000.0
    assert parse("10 Gbit/s", "byte/s") == pytest.approx(1.25e9)
    with pytest.raises(UnitError):
        parse(float("inf"), "W")
