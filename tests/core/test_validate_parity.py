"""`densim validate` makes every check `densim run` makes before its first step: for each refusal below both
exit 1 with the same one line, naming the scenario file (or the other file at fault) and the field path.

Every case used to be accepted by validate (exit 0) while run refused it, or accepted by both although the
settings contradict each other or cannot be right (issue 29).
"""

from __future__ import annotations

import copy

import pytest
import yaml
from typer.testing import CliRunner

from densim.cli.main import app

runner = CliRunner()

# 2 hosts 'hg-0', 'hg-1' (4 cores, 16 GiB), 2 constant VMs, 12 steps of 5 min
BASE = {
    "cluster": {"hosts": [{"name": "hg", "count": 2, "cpu": {"cores_per_socket": 4, "base_clock": "2 GHz"},
                           "memory": "16 GiB", "power": {"model": "linear", "idle": "100 W", "peak": "200 W"}}]},
    "vms": [{"name": "v", "count": 2, "vcpus": 1, "memory": "1 GiB", "profile": {"kind": "constant", "mean": 0.5}}],
    "simulation": {"step": "5 min", "horizon": "1 h"},
}
EVENT = {"time": "10 min", "target": "hg-0", "duration": "20 min"}
STORAGE_ON = {"model": "queueing", "datastores": [{"name": "ds", "device": "fc-san-lun"}], "default_datastore": "ds"}


def _host_group(**over):
    g = copy.deepcopy(BASE["cluster"]["hosts"][0])
    g.update(over)
    return g


# (id, patch of the scenario, file written next to it or None, field path in the error, words in the error)
CASES = [
    # settings of a model that is switched off: contradictory, not ignored
    ("maintenance-without-migration", {"migration": {"maintenance": [{"host": "hg-0", "at": "10 min"}]}}, None,
     "migration.maintenance", "migration.model: none"),
    ("balancer-without-migration", {"migration": {"balance": {"threshold": 0.2}}}, None, "migration.balance", "model: none"),
    ("memory-settings-without-memory-model", {"memory": {"balloon_limit": 0.5}}, None, "memory.balloon_limit", "model: none"),
    ("datastores-without-storage-model", {"storage": {"datastores": [{"name": "ds", "device": "fc-san-lun"}]}}, None,
     "storage.datastores", "model: none"),
    ("arrivals-with-lifetimes-off", {"vms": [{**BASE["vms"][0], "arrivals": {"over": "30 min", "lifetime": "10 min"}}],
                                     "scheduling": {"lifetimes": "off"}}, None, "vms[0].arrivals", "lifetimes"),
    # values that cannot be right
    ("power-table-decreasing", {"cluster": {"hosts": [_host_group(power={"model": "table", "points": [
        100, 120, 140, 160, 150, 180, 190, 200, 210, 220, 230]})]}}, None, "cluster.hosts[0].power.points",
     "160 W at 30 % load to 150 W at 40 %"),
    ("duplicate-host-group-names", {"cluster": {"hosts": [_host_group(), _host_group()]}}, None, "cluster.hosts[1].name",
     "'hg'"),
    ("numa-pin-to-missing-node", {"virtualization": {"model": "kvm", "numa": {"policy": "manual", "pinning": {"v": 5}}}},
     None, "virtualization.numa.pinning.v", "node 5 does not exist"),
    ("negative-vm-iops", {"storage": STORAGE_ON, "vms": [{**BASE["vms"][0], "workload": {"iops": -50}}]}, None,
     "vms[0].workload.iops", ">= 0"),
    ("vcpus-1e12", {"vms": [{**BASE["vms"][0], "vcpus": 10**12}]}, None, "vms[0].vcpus", "<= 4096"),
    ("sockets-1e12", {"cluster": {"hosts": [_host_group(cpu={"cores_per_socket": 4, "base_clock": "2 GHz",
                                                              "sockets": 10**12})]}}, None, "cluster.hosts[0].cpu.sockets",
     "at most 64"),
    ("start-beyond-float64-resolution", {"simulation": {**BASE["simulation"], "start": 1e17}}, None, "simulation.start",
     "16 s apart"),
    # the checks run made in the engine, before its first step
    ("unknown-failure-target", {"failures": {"events": [{**EVENT, "target": "nohost"}]}}, None,
     "failures.events[0].target", "'nohost'"),
    ("overlapping-failures", {"failures": {"events": [EVENT, {**EVENT, "time": "15 min"}]}}, None, "failures.events[1]",
     "may not overlap"),
    ("unknown-maintenance-host", {"migration": {"model": "precopy", "maintenance": [{"host": "nohost", "at": "10 min"}]}},
     None, "migration.maintenance[0].host", "no host named 'nohost'"),
    ("unknown-embodied-carbon-group", {"carbon": {"grid_gco2_per_kwh": 300, "lifetime_years": 4,
                                                  "embodied": {"hg": 1000, "zz": 100}}}, None, "carbon.embodied.zz",
     "no host group"),
    ("grid-series-after-start", {"carbon": {"grid_series": {"file": "grid.csv", "value_column": "g"}}},
     ("grid.csv", "time_s,g\n3600,300\n7200,200\n"), "carbon.grid_series", "starts at t = 3600 s"),
    ("boot-read-without-storage", {"failures": {"events": [EVENT], "ha": {"boot_read": "100 MB/s"}}}, None,
     "failures.ha.boot_read", "storage"),
    ("bad-restart-policy", {"failures": {"events": [EVENT], "ha": {"restart_policy": "nonsense"}}}, None,
     "failures.ha.restart_policy", "'nonsense'"),
    ("failure-trace-not-csv", {"failures": {"trace": "trace.csv"}}, ("trace.csv", "\x00\x01 not a csv"), "byte 0",
     "binary data"),
    ("rate-for-missing-domain-kind", {"failures": {"random": {"domains": {"rack": {"mtbf": "1000 h", "mttr": "1 h"}}}}},
     None, "failures.random.domains.rack", "no failure domain of kind 'rack'"),
    ("profile-only-without-horizon", {"simulation": {"step": "5 min"}}, None, "simulation.horizon", "required"),
    ("generic-trace-in-a-scenario", {"vms": [{"name": "g", "trace": {"format": "generic", "path": "gen.csv"}}]},
     ("gen.csv", "vm,time,cpu\n"), "vms[0].trace.format", "not by the engine"),
]


@pytest.mark.parametrize("patch,extra,where,words", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_run_and_validate_refuse_with_the_same_line(patch, extra, where, words, tmp_path):
    doc = copy.deepcopy(BASE)
    doc.update(copy.deepcopy(patch))
    f = tmp_path / "scenario.yaml"
    f.write_text(yaml.safe_dump(doc, sort_keys=False))
    if extra is not None:
        (tmp_path / extra[0]).write_text(extra[1])
    lines = {}
    for command in ("validate", "run"):
        args = [command, str(f)] + (["--out", str(tmp_path / "o"), "--no-progress", "--no-report"] if command == "run" else [])
        r = runner.invoke(app, args)
        assert r.exit_code == 1, (command, r.output)
        err = (r.stderr or r.stdout).strip().splitlines()
        assert len(err) == 1, (command, err)
        lines[command] = err[0]
    assert lines["validate"] == lines["run"], lines
    line = lines["run"]
    assert f":{where}:" in line and words in line, line
    named = str(tmp_path / extra[0]) if extra is not None and where.startswith("byte") else str(f)
    assert named in line, line
    assert not (tmp_path / "o" / "summary.json").exists()


def test_settings_left_at_their_defaults_with_the_model_off_are_accepted(tmp_path):
    """The serve page posts every control's value: a default value with the model off is no contradiction."""
    from densim.plant import plant_from_dict

    doc = copy.deepcopy(BASE)
    doc["memory"] = {"model": "none", "swap_device": "fc-san-lun"}  # the default device
    doc["storage"] = {"model": "none", "datastores": []}
    doc["migration"] = {"model": "none", "maintenance": []}
    plant_from_dict(doc, source="s.yaml", base_dir=tmp_path)
