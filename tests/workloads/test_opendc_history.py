"""Historical OpenDC traces (issue 31 item 1): the 2.0 Capelin pair, v1 meta files without a CPU
capacity, columns densim does not model, and tasks asking more per core than their cores run at.

Tiny Parquet files written here with pyarrow; the arithmetic in the comments.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from densim.errors import InputError
from densim.workloads.formats import load_inventory
from densim.workloads.readers import open_trace
from densim.workloads.readers.opendc import OpenDcSource, read_opendc_tasks

T0 = 1_700_000_000_000  # ms since epoch
MIN5 = 300_000
TS = pa.timestamp("ms", tz="UTC")


def _write(folder, tasks: dict, frags: dict, names=("meta.parquet", "trace.parquet")):
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(tasks), folder / names[0])
    pq.write_table(pa.table(frags), folder / names[1])
    return folder


def _err(fn, *a, **kw) -> str:
    with pytest.raises(InputError) as exc:
        fn(*a, **kw)
    msg = exc.value.one_line()
    assert "\n" not in msg
    return msg


def capelin(folder, names=("meta.parquet", "trace.parquet")):
    """Two VMs as OpenDC's 2.0 converter writes them: 'time' is each fragment's start, rows sorted by
    (time, id) across VMs, submissionTime the first start, endTime the last start + duration.

    vm "a": 100 MHz [0, 5 min), 200 MHz [5, 15 min)  (run-length encoded: one 10-min fragment)
    vm "b": 300 MHz [5, 10 min), idle [10, 15 min), 400 MHz [15, 20 min)
    """
    rows = [("a", 0, MIN5, 100.0), ("a", MIN5, 2 * MIN5, 200.0), ("b", MIN5, MIN5, 300.0), ("b", 3 * MIN5, MIN5, 400.0)]
    rows.sort(key=lambda r: (r[1], r[0]))
    return _write(folder, {
        "id": pa.array(["a", "b"]), "submissionTime": pa.array([T0, T0 + MIN5], TS),
        "endTime": pa.array([T0 + 3 * MIN5, T0 + 4 * MIN5], TS),
        "maxCores": pa.array([1, 2], pa.int32()), "requiredMemory": pa.array([1024, 2048], pa.int64()),
    }, {"id": pa.array([r[0] for r in rows]), "time": pa.array([T0 + r[1] for r in rows], TS),
        "duration": pa.array([r[2] for r in rows], pa.int64()), "cores": pa.array([1, 1, 2, 2], pa.int32()),
        "cpuUsage": pa.array([r[3] for r in rows]),
        "flops": pa.array([int(r[3] * r[2] / 1000) for r in rows], pa.int64())}, names=names)


# ------------------------------------------------------------------------------------ 2.0 (Capelin)


def test_capelin_2_0_pair_reads_the_same_under_either_name_pair(tmp_path):
    # the old reader took 'time' for the fragment's END under meta/trace names: vm a's first fragment
    # (time = submissionTime, 5 min long) "ended before the task started": "row out of order or repeated"
    meta = read_opendc_tasks(capelin(tmp_path / "meta"), vcpu_mhz=2000.0)
    tasks = read_opendc_tasks(capelin(tmp_path / "tasks", names=("tasks.parquet", "fragments.parquet")), vcpu_mhz=2000.0)
    for t in (meta, tasks):
        assert t.version == "2.0"
        assert list(t.task_id) == ["a", "b"]
        assert list(t.frag_offset) == [0, 2, 5]
        # a: 300 s at 100 MHz, 600 s at 200; b: 300 s at 300, a 300-s idle gap, 300 s at 400
        assert list(t.frag_duration_s) == [300.0, 600.0, 300.0, 300.0, 300.0]
        assert list(t.frag_cpu_mhz) == [100.0, 200.0, 300.0, 0.0, 400.0]
        assert list(t.frag_start_s() - T0 / 1000) == [0.0, 300.0, 300.0, 600.0, 900.0]
        assert t.gap_fragments == 1 and t.clipped_fragments == 0
        # 100 x 300 + 200 x 600 + 300 x 300 + 400 x 300 = 30,000 + 120,000 + 90,000 + 120,000
        assert t.total_cpu_mhz_s() == 360_000.0
        assert list(t.duration_s) == [900.0, 900.0]  # endTime - submissionTime
        assert list(t.cpu_capacity_mhz) == [2000.0, 4000.0]
        assert t.notes == ()  # cores and flops are redundant (usage is the total MHz; flops = usage x duration)


def test_capelin_2_0_fragment_inside_its_predecessor_is_one_line(tmp_path):
    d = _write(tmp_path / "bad", {
        "id": pa.array(["a"]), "submissionTime": pa.array([T0], TS), "endTime": pa.array([T0 + 2 * MIN5], TS),
        "maxCores": pa.array([1], pa.int32()), "requiredMemory": pa.array([1024], pa.int64()),
    }, {"id": pa.array(["a", "a"]), "time": pa.array([T0, T0 + 60_000], TS), "duration": pa.array([2 * MIN5, 60_000], pa.int64()),
        "cores": pa.array([1, 1], pa.int32()), "cpuUsage": pa.array([1.0, 2.0])})
    msg = _err(read_opendc_tasks, d, vcpu_mhz=1000.0)
    assert "trace.parquet:row 2, column 'time'" in msg and "its 'time' is its start" in msg


# ------------------------------------------------------------------------------------ v1 / 2.1 without capacity


def v1_no_capacity(folder, tz="UTC"):
    ts = pa.timestamp("ms", tz=tz)
    return _write(folder, {
        "id": pa.array(["a"]), "start_time": pa.array([T0], ts), "stop_time": pa.array([T0 + 2 * MIN5], ts),
        "cpu_count": pa.array([2], pa.int32()), "mem_capacity": pa.array([1024], pa.int64()),
    }, {"id": pa.array(["a", "a"]), "timestamp": pa.array([T0 + MIN5, T0 + 2 * MIN5], ts),
        "duration": pa.array([MIN5, MIN5], pa.int64()), "cpu_count": pa.array([2, 2], pa.int32()),
        "cpu_usage": pa.array([1000.0, 3000.0])})


@pytest.mark.parametrize("tz", ["UTC", "Europe/Amsterdam", None])
def test_v1_meta_without_cpu_capacity_takes_vcpu_speed(tmp_path, tz):
    d = v1_no_capacity(tmp_path / "v1", tz)
    # the old reader: "column 'cpu_capacity': missing column (an OpenDC v1 tasks file)"
    t = read_opendc_tasks(d, vcpu_mhz=2600.0)
    assert t.version == "v1"
    assert t.cpu_capacity_mhz[0] == 5200.0  # 2 cores x 2,600 MHz
    # a timestamp column stores UTC instants whatever its zone: the same seconds for every tz
    assert t.submission_s[0] == T0 / 1000
    assert list(t.frag_start_s() - T0 / 1000) == [0.0, 300.0]
    assert t.duration_s[0] == 600.0


def test_v1_meta_without_any_capacity_is_refused_in_one_line(tmp_path):
    d = v1_no_capacity(tmp_path / "v1")
    msg = _err(read_opendc_tasks, d)
    assert "meta.parquet" in msg and "v1 trace gives no CPU capacity" in msg and "vcpu_speed" in msg
    assert "vcpu_speed" in _err(OpenDcSource, open_trace("opendc", d), "g")
    assert OpenDcSource(open_trace("opendc", d), "g", vcpu_mhz=2600.0).sizes.vcpu_mhz[0] == 2600.0


# ------------------------------------------------------------------------------------ columns not modelled


def v4_with(folder, tasks_extra: dict | None = None, frags_extra: dict | None = None, usage=(1000.0, 500.0)):
    return _write(folder, {
        "id": pa.array([1, 2], pa.int32()), "submission_time": pa.array([T0, T0], pa.int64()),
        "duration": pa.array([MIN5, MIN5], pa.int64()), "cpu_count": pa.array([1, 1], pa.int32()),
        "cpu_capacity": pa.array([2600.0, 2600.0]), "mem_capacity": pa.array([1024, 1024], pa.int64()), **(tasks_extra or {}),
    }, {"id": pa.array([1, 2], pa.int32()), "duration": pa.array([MIN5, MIN5], pa.int64()),
        "cpu_usage": pa.array(list(usage)), **(frags_extra or {})}, names=("tasks.parquet", "fragments.parquet"))


def test_gpu_columns_are_read_and_a_gpu_usage_without_gpus_is_refused(tmp_path):
    # issue 33 item 3: the GPU columns are read (the old reader refused any non-zero value: "OpenDC's GPU columns
    # are not read yet"); all zero or empty they are tasks without GPUs (tests/workloads/test_opendc_gpus.py)
    zero = v4_with(tmp_path / "z", {"gpu_count": pa.array([0, 0], pa.int32())}, {"gpu_usage": pa.array([0.0, None])})
    t = read_opendc_tasks(zero)
    assert t.notes == () and list(t.gpu_count) == [0, 0] and list(t.frag_gpu_mhz) == [0.0, 0.0]
    g = read_opendc_tasks(v4_with(tmp_path / "g", {"gpu_count": pa.array([0, 1], pa.int32())}))
    assert list(g.gpu_count) == [0, 1] and g.frag_gpu_mhz is None
    msg = _err(read_opendc_tasks, v4_with(tmp_path / "u", frags_extra={"gpu_usage": pa.array([0.0, 80.0])}))
    assert msg.endswith("fragments.parquet:column 'gpu_usage': fragments of task 2 (row 2 of tasks.parquet) use a GPU "
                        "(up to 80 MHz) but the task's gpu_count is 0")


def test_workflow_dependencies_are_refused(tmp_path):
    # task 2 depends on task 1: densim would start both at their submission time
    d = v4_with(tmp_path / "w", {"parents": pa.array([[], [1]], pa.list_(pa.int32())),
                                 "children": pa.array([[2], []], pa.list_(pa.int32()))})
    msg = _err(read_opendc_tasks, d)
    assert msg.endswith("tasks.parquet:column 'parents': workflow dependencies are not modelled (1 dependent tasks would "
                        "start together, each at its own submission time); drop the column to run them independently")
    empty = v4_with(tmp_path / "e", {"parents": pa.array([[], None], pa.list_(pa.int32()))})
    assert read_opendc_tasks(empty).notes == ("tasks.parquet: column 'parents' ignored (empty for every task: no workflow dependencies)",)


def test_deferrable_nature_and_deadline(tmp_path):
    d = v4_with(tmp_path / "d", {"deferrable": pa.array([False, True]), "deadline": pa.array([0, T0 + 3_600_000], pa.int64())})
    assert "column 'deferrable': deferrable tasks are not modelled (1 tasks marked deferrable" in _err(read_opendc_tasks, d)
    ok = v4_with(tmp_path / "ok", {"deferrable": pa.array([False, False]), "deadline": pa.array([-1, -1], pa.int64()),
                                   "nature": pa.array([None, ""], pa.string())})
    assert read_opendc_tasks(ok).notes == (
        "tasks.parquet: column 'deferrable' ignored (no task is deferrable)",
        "tasks.parquet: column 'deadline' ignored (only deferrable tasks use it, and none is)",
        "tasks.parquet: column 'nature' ignored (no task is deferrable)")
    nat = v4_with(tmp_path / "n", {"nature": pa.array(["deferrable", ""])})
    assert "column 'nature': deferrable tasks are not modelled (1 tasks marked nature" in _err(read_opendc_tasks, nat)


def test_unknown_columns_are_named_in_a_note(tmp_path):
    d = v4_with(tmp_path / "x", {"owner": pa.array(["x", "y"])}, {"mem_usage": pa.array([1.0, 2.0])})
    assert read_opendc_tasks(d).notes == ("tasks.parquet: column not read: owner", "fragments.parquet: column not read: mem_usage")


# ------------------------------------------------------------------------------------ demand above the core speed


def test_task_asking_more_per_core_than_its_cores_run_at_is_a_note(tmp_path):
    # task 1: 1 core asking 39,600 MHz; at 2,600 MHz a core it gets 2,600 / 39,600 = 6.6 % (15.2x too much)
    d = v4_with(tmp_path / "o", usage=(39_600.0, 500.0))
    t = read_opendc_tasks(d)
    assert len(t.notes) == 1 and t.notes[0].startswith(
        "1 task asks more CPU per core than the task's cores run at (cpu_capacity / cpu_count in tasks.parquet): the worst asks 39,600")
    src = OpenDcSource(open_trace("opendc", d), "g")  # what densim plan's inventory notes say
    assert src.notes == ["1 task asks more CPU per core than the VMs of group 'g' run at: the worst asks 39,600 MHz per core on "
                         "2,600 MHz cores (15.2x; it can get 6.6 % of its demand); check the trace's cpu_usage units or the VM "
                         "group's vcpu_speed"]
    # the VM group's vcpu_speed decides: at 40,000 MHz a core nothing is over
    assert OpenDcSource(open_trace("opendc", d), "g", vcpu_mhz=40_000.0).notes == []
    # within capacity: no note
    assert read_opendc_tasks(v4_with(tmp_path / "fine", usage=(2600.0, 500.0))).notes == ()
    # the plan's inventory carries the note (summary.json "notes")
    assert any("39,600 MHz per core" in n for n in load_inventory(d, "opendc").notes)
    assert np.isclose(src.trace.table.peak_cpu_mhz(), [39_600.0, 500.0]).all()


def test_the_note_reaches_the_runs_summary(tmp_path):
    # one host of 2 cores; task 1 (1 core, 2,600 MHz capacity) asks 39,600 MHz for 5 min. The engine caps
    # a VM at its vCPUs x its host's core speed: on 2.6 GHz cores it gets 2,600 / 39,600 = 6.6 % (15.2x)
    from densim.engine import simulate
    from densim.plant import resolve
    from densim.spec.loader import scenario_from_dict

    def run(folder, clock="2.6 GHz"):
        sc = scenario_from_dict({
            "name": "over", "vms": [{"name": "t", "trace": {"format": "opendc", "path": str(folder)}}],
            "cluster": {"hosts": [{"name": "h", "count": 1, "cpu": {"sockets": 1, "cores_per_socket": 2, "base_clock": clock},
                                   "memory": "4 GiB", "power": {"model": "linear", "idle": "100 W", "peak": "200 W"}}]},
            "simulation": {"step": "5 min"},
        })
        return simulate(resolve(sc)).summary.to_dict()

    s = run(v4_with(tmp_path / "o", usage=(39_600.0, 500.0)))
    assert s["notes"] == ["1 VM asks more CPU than its vCPUs at its host's core speed give: the worst, t-1, asks 39,600 MHz per "
                          "vCPU on 2,600 MHz cores (15.2x; it gets at most 6.6 % of its demand); check the trace's CPU units "
                          "or the hosts' clock"]
    # 39,600 x 300 MHz s asked, 2,600 x 300 delivered (task 2's 500 MHz all delivered)
    assert s["totals"]["cpu_unserved_mhz_s"] == pytest.approx((39_600 - 2_600) * 300.0, rel=1e-6)
    fine = v4_with(tmp_path / "fine", usage=(2600.0, 500.0))
    assert "notes" not in run(fine)
    # the same task within its own capacity (2,600 MHz) but on 2 GHz cores: 1.3x, 76.9 %
    assert run(fine, "2 GHz")["notes"][0].startswith("1 VM asks more CPU than its vCPUs at its host's core speed give: the worst, "
                                                     "t-1, asks 2,600 MHz per vCPU on 2,000 MHz cores (1.3x; it gets at most 76.9 %")


def test_densim_run_prints_the_notes_on_stderr(tmp_path):
    # the same over-speed task as above, through the CLI: the note is in summary.json and on stderr
    import json

    import yaml

    from densim.cli.main import main

    folder = v4_with(tmp_path / "o", usage=(39_600.0, 500.0))
    spec = {"name": "over", "vms": [{"name": "t", "trace": {"format": "opendc", "path": str(folder)}}],
            "cluster": {"hosts": [{"name": "h", "count": 1, "cpu": {"sockets": 1, "cores_per_socket": 2, "base_clock": "2.6 GHz"},
                                   "memory": "4 GiB", "power": {"model": "linear", "idle": "100 W", "peak": "200 W"}}]},
            "simulation": {"step": "5 min"}}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(spec))
    import contextlib
    import io

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()), pytest.raises(SystemExit) as ex:
        main(["run", str(path), "--out", str(tmp_path / "out"), "--no-report", "--no-progress"])
    assert ex.value.code == 0
    notes = json.loads((tmp_path / "out" / "summary.json").read_text())["notes"]
    assert f"densim: note: {notes[0]}" in err.getvalue()
