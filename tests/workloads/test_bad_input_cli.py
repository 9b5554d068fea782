"""Bad traces through the command line (issue 14): negative durations, fragments of unknown tasks, duplicate
ids, departures before arrivals give one line naming file, row and problem, exit status 1, no traceback."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from typer.testing import CliRunner

from densim.cli.main import app
from tests.workloads.test_opendc_versions import T0, v1, v4

ROOT = Path(__file__).resolve().parents[2]
CANDIDATES = ROOT / "examples" / "planning" / "candidates.yaml"


def _one_error_line(r) -> str:
    assert r.exit_code == 1, r.output
    text = r.stderr if r.stderr else r.output
    assert "Traceback" not in text
    lines = [ln for ln in text.splitlines() if ln.strip()]
    assert len(lines) == 1, lines
    assert lines[0].startswith("densim: error: ")
    return lines[0]


def _azure(d: Path, vmtable: str, readings: str) -> Path:
    d.mkdir()
    (d / "vmtable.csv").write_text(vmtable)
    (d / "vm_cpu_readings-file-1-of-1.csv").write_text(readings)
    return d


def _bad_inputs(tmp: Path) -> dict[str, tuple[Path, str]]:
    return {
        "negative duration": (v4(tmp / "neg", durations=(600_000, -300_000, 1_200_000)),
                              "fragments.parquet:row 2, column 'duration': duration (s) must be >= 0, got -300"),
        "unknown task": (v4(tmp / "unk", frag_ids=(7, 8, 9)),
                         "fragments.parquet:row 2, column 'id': fragment of task 8, which is not in tasks.parquet"),
        "duplicate id": (v4(tmp / "dup", task_ids=(7, 7), frag_ids=(7, 7, 7)),
                         "tasks.parquet:row 2, column 'id': duplicate task id 7 (also in row 1)"),
        "departure before arrival (OpenDC v1)": (v1(tmp / "early", stop=T0 - 60_000), "meta.parquet:row 1, column 'stop_time'"),
        "departure before arrival (Azure)": (_azure(tmp / "az", "a,s,d,600,0,1,1,1,Interactive,2,4\n", "0,a,0,1,1\n"),
                                             "vmtable.csv:row 1, column 'vmdeleted': the VM is deleted 600 s before it is created"),
    }


@pytest.mark.parametrize("case", ["negative duration", "unknown task", "duplicate id", "departure before arrival (OpenDC v1)",
                                  "departure before arrival (Azure)"])
def test_plan_refuses_bad_traces_in_one_line(tmp_path, case):
    path, expected = _bad_inputs(tmp_path)[case]
    r = CliRunner().invoke(app, ["plan", str(path), "-c", str(CANDIDATES), "-o", str(tmp_path / "out")])
    line = _one_error_line(r)
    assert expected in line
    assert not (tmp_path / "out" / "summary.json").exists()


@pytest.mark.parametrize("case", ["negative duration", "unknown task", "duplicate id", "departure before arrival (OpenDC v1)",
                                  "departure before arrival (Azure)"])
def test_run_refuses_bad_traces_in_one_line(tmp_path, case):
    path, expected = _bad_inputs(tmp_path)[case]
    fmt = "azure" if "Azure" in case else "opendc"
    scenario = {
        "name": "bad-trace",
        "cluster": {"hosts": [{"count": 2, "cpu": {"sockets": 1, "cores_per_socket": 8, "base_clock": "2.4 GHz"},
                               "memory": "64 GiB", "power": {"model": "linear", "idle": "100 W", "peak": "200 W"}}]},
        "vms": [{"name": "t", "trace": {"format": fmt, "path": str(path)}}],
        "simulation": {"step": "5 min"},
    }
    sc = tmp_path / "s.yaml"
    sc.write_text(yaml.safe_dump(scenario))
    r = CliRunner().invoke(app, ["run", str(sc), "--out", str(tmp_path / "run"), "--no-report", "--no-progress"])
    assert expected in _one_error_line(r)


def test_unsupported_opendc_version_through_the_cli(tmp_path):
    d = tmp_path / "v9"
    d.mkdir()
    pq.write_table(pa.table({"id": pa.array([1]), "arrival": pa.array([T0])}), d / "tasks.parquet")
    pq.write_table(pa.table({"id": pa.array([1]), "duration": pa.array([1])}), d / "fragments.parquet")
    r = CliRunner().invoke(app, ["plan", str(d), "-c", str(CANDIDATES), "-o", str(tmp_path / "out")])
    assert "unsupported OpenDC trace version 9" in _one_error_line(r)
