"""`densim io` and `densim size` refuse counts beyond their sanity bounds, a search space above
--max-configurations and an --out that is not a regular file: one line naming the file (or option)
and the field path, exit 1, before any work (issue 20)."""

from __future__ import annotations

import copy

import pytest
import yaml
from typer.testing import CliRunner

from densim.cli.estimates import sizing_space
from densim.cli.main import app
from densim.plant.storage import load_sizing
from densim.spec.storage import MAX_CONTROLLERS, MAX_DRIVES, MAX_OUTSTANDING

runner = CliRunner()

IO = {
    "name": "hdd-raid10-open",
    "system": {"host": {"cores": 12, "clock": "3.33 GHz", "stack": "windows-storport-2010"},
               "controllers": [{"name": "p410", "model": "hp-smart-array-p410i", "count": 2}],
               "arrays": [{"name": "db", "device": "sas-10k-900gb", "drives": 16, "raid": "raid10", "controllers": "p410"}]},
    "workload": {"mode": "open", "iops": 1500, "read_fraction": 0.6, "block_size": "8 KiB"},
}
SIZE = {
    "name": "small-sizing",
    "target": {"iops": 20000, "max_latency": "2 ms", "latency_metric": "mean", "capacity": "1 TB"},
    "workload": {"read_fraction": 0.7, "block_size": "4 KiB"},
    "candidates": {"devices": ["intel-dc-s3700-400gb"], "raid": ["raid10"], "drives_max": 12,
                   "controllers": ["lsi-9211-8i"], "extra_controllers": 0, "cores": [8, 16], "clock": "2.6 GHz",
                   "stack": "linux-kernel-irq"},
    "top": 2,
}


def _write(tmp_path, doc: dict, name: str):
    p = tmp_path / name
    p.write_text(yaml.safe_dump(doc, sort_keys=False))
    return p


def _set(doc: dict, path: tuple, value):
    doc = copy.deepcopy(doc)
    node = doc
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    return doc


def _one_line(r) -> str:
    assert r.exit_code == 1, r.output
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in r.output, r.output
    return lines[0]


@pytest.mark.parametrize("path,value,words", [
    # 2^64 controllers: io used to build one queueing station per controller, for ever
    (("system", "controllers", 0, "count"), 2**64, f"system.controllers[0].count: must be <= {MAX_CONTROLLERS}"),
    (("system", "controllers", 0, "count"), True, "system.controllers[0].count: Input should be a valid integer"),
    (("system", "arrays", 0, "drives"), 10**30, f"system.arrays[0].drives: must be <= {MAX_DRIVES}"),
    (("system", "host", "cores"), 0, "system.host.cores: must be > 0"),
    (("system", "arrays", 0, "share"), float("inf"), "system.arrays[0].share: Input should be a finite number"),
    (("workload", "iops"), "1e400 IOPS", "workload.iops"),
])
def test_io_counts_and_numbers_are_bounded(tmp_path, path, value, words):
    f = _write(tmp_path, _set(IO, path, value), "io.yaml")
    line = _one_line(runner.invoke(app, ["io", str(f)]))
    assert line.startswith(f"densim: error: {f}:") and words in line, line


def test_io_closed_workload_outstanding_is_bounded(tmp_path):
    # 1,000 workers x 10,000 queue depth = 10^7 outstanding I/Os > 10^6: the exact MVA takes O(outstanding) steps
    doc = _set(IO, ("workload",), {"mode": "closed", "workers": 1000, "queue_depth": 10_000})
    f = _write(tmp_path, doc, "io.yaml")
    line = _one_line(runner.invoke(app, ["io", str(f)]))
    assert f"{f}:workload: workers x queue_depth = 10,000,000 outstanding I/Os, more than {MAX_OUTSTANDING:,}" in line
    # at the bound it still solves
    doc = _set(IO, ("workload",), {"mode": "closed", "workers": 1000, "queue_depth": 1000})
    r = runner.invoke(app, ["io", str(_write(tmp_path, doc, "io2.yaml")), "--json"])
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize("path,value,words", [
    (("candidates", "drives_max"), 10**9, f"candidates.drives_max: must be <= {MAX_DRIVES}"),
    (("candidates", "extra_controllers"), 2**64, f"candidates.extra_controllers: must be <= {MAX_CONTROLLERS}"),
    # a core count <= 0 reached the search as an unexpected ValueError
    (("candidates", "cores"), [8, -1], "candidates.cores[1]: must be > 0"),
    (("candidates", "cores"), [0], "candidates.cores[0]: must be > 0"),
    (("candidates", "drives_min"), 20, "candidates: drives_min (20) is above drives_max (12)"),
    (("costs",), {"per_core_usd": float("nan")}, "costs.per_core_usd: Input should be a finite number"),
])
def test_size_counts_are_bounded(tmp_path, path, value, words):
    f = _write(tmp_path, _set(SIZE, path, value), "size.yaml")
    line = _one_line(runner.invoke(app, ["size", str(f)]))
    assert line.startswith(f"densim: error: {f}:") and words in line, line


def test_size_refuses_a_search_space_above_the_limit(tmp_path):
    f = _write(tmp_path, SIZE, "size.yaml")
    sc, _ = load_sizing(f)
    # 1 device x 1 RAID level x 12 drive counts (1..12) x 1 controller x 1 controller count (extra 0) x 2 core counts
    assert sizing_space(sc) == 24
    out = tmp_path / "o"
    line = _one_line(runner.invoke(app, ["size", str(f), "--max-configurations", "23", "--out", str(out)]))
    assert line == (f"densim: error: {f}:candidates: the search could evaluate up to 24 configurations (1 device x 1 RAID "
                    "level x 12 drive counts x 1 controller x 1 controller count x 2 core counts), more than "
                    "--max-configurations (23); narrow drives_min..drives_max or the candidate lists, or raise "
                    "--max-configurations")
    assert not out.exists()
    r = runner.invoke(app, ["size", str(f), "--max-configurations", "24", "--out", str(out)])
    assert r.exit_code == 0 and (out / "summary.json").exists(), r.output


def test_size_default_limit_allows_the_shipped_example_and_refuses_a_wide_search(repo, tmp_path):
    r = runner.invoke(app, ["size", str(repo / "examples/storage/size-500k-iops.yaml"), "--json"])
    assert r.exit_code == 0, r.output
    # every drive count up to the bound: 1 x 1 x 10,000 x 1 x 1 x 2 = 20,000 configurations pass the default
    # (1,000,000); with 3 extra controllers and 6 core counts: 10,000 x 4 x 6 = 240,000 also pass, x 5 RAID
    # levels = 1,200,000 do not
    wide = _set(_set(_set(SIZE, ("candidates", "drives_max"), MAX_DRIVES), ("candidates", "extra_controllers"), 3),
                ("candidates", "cores"), [4, 8, 16, 24, 32, 64])
    wide = _set(wide, ("candidates", "raid"), ["raid0", "raid10", "raid5", "raid6", "jbod"])
    line = _one_line(runner.invoke(app, ["size", str(_write(tmp_path, wide, "wide.yaml"))]))
    assert "up to 1,200,000 configurations" in line and "more than --max-configurations (1,000,000)" in line


@pytest.mark.parametrize("value", ["0", "-1", "abc"])
def test_max_configurations_must_be_a_whole_number_above_zero(tmp_path, value):
    r = runner.invoke(app, ["size", str(_write(tmp_path, SIZE, "size.yaml")), "--max-configurations", value])
    assert r.exit_code == 2 and "--max-configurations" in r.output + r.stderr


@pytest.mark.parametrize("cmd,doc,name", [("io", IO, "io.yaml"), ("size", SIZE, "size.yaml")])
def test_out_must_be_a_folder_or_a_new_name(tmp_path, cmd, doc, name):
    f = _write(tmp_path, doc, name)
    afile = tmp_path / "afile.json"
    afile.write_text("{}\n")  # the old form, --out RESULT.json, is refused: --out is a folder
    line = _one_line(runner.invoke(app, [cmd, str(f), "--out", str(afile)]))
    assert line == f"densim: error: --out {afile}: exists and is not a folder; results go to a folder"
    assert afile.read_text() == "{}\n"
    fifo = tmp_path / "fifo"
    import os

    os.mkfifo(fifo)  # a FIFO stands for a device: never opened, never replaced
    line = _one_line(runner.invoke(app, [cmd, str(f), "--out", str(fifo)]))
    assert line == f"densim: error: --out {fifo}: exists and is not a folder; results go to a folder"
    assert not fifo.is_file() and fifo.exists()
