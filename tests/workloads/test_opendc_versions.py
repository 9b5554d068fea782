"""OpenDC traces of every schema version read into one task table (issue 14).

Tiny hand-made Parquet files, one per schema (opendc-traces ``workload/schemas/workload_schema_v1..v5.py``
and OpenDC's camel-case read schema 2.0), with the arithmetic in the comments; then the real traces in
../shared/traces (skipped when absent).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from densim.errors import InputError
from densim.workloads.formats import detect_format, load_inventory
from densim.workloads.readers import open_trace
from densim.workloads.readers.opendc import OpenDcSource, read_opendc_tasks
from densim.workloads.timegrid import TimeGrid
from tests.conftest import TRACES

T0 = 1_700_000_000_000  # ms since epoch, a whole number of seconds
TS = pa.timestamp("ms", tz="UTC")


def _write(folder, tasks: dict, frags: dict, names=("tasks.parquet", "fragments.parquet")):
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


def v4(folder, *, frag_ids=(7, 7, 9), durations=(600_000, 300_000, 1_200_000), usage=(1000.0, 500.0, 250.0), task_ids=(7, 9)):
    return _write(folder, {
        "id": pa.array(task_ids, pa.int32()),
        "submission_time": pa.array([T0, T0 + 1_800_000][: len(task_ids)], pa.int64()),
        "duration": pa.array([900_000, 1_200_000][: len(task_ids)], pa.int64()),
        "cpu_count": pa.array([2, 1][: len(task_ids)], pa.int32()),
        "cpu_capacity": pa.array([4800.0, 2400.0][: len(task_ids)]),
        "mem_capacity": pa.array([4 * 1024 * 1024, 1024 * 1024][: len(task_ids)], pa.int64()),
    }, {"id": pa.array(frag_ids, pa.int32()), "duration": pa.array(durations, pa.int64()),
        "cpu_usage": pa.array(usage, pa.float64())})


def v1(folder, *, stamps=(T0 + 600_000, T0 + 1_500_000, T0 + 1_799_000), stop=T0 + 1_800_000, start=T0):
    # task "a": start T0, stop T0 + 30 min; fragments end at +10 min (600 s long), +25 min (600 s) and
    # +29:59 (300 s, so it starts at +24:59, one second before its predecessor ends)
    return _write(folder, {
        "id": pa.array(["a"]), "start_time": pa.array([start], TS), "stop_time": pa.array([stop], TS),
        "cpu_count": pa.array([1], pa.int32()), "cpu_capacity": pa.array([2000.0]), "mem_capacity": pa.array([2 * 1024 * 1024], pa.int64()),
    }, {"id": pa.array(["a"] * 3), "timestamp": pa.array(list(stamps), TS), "duration": pa.array([600_000, 600_000, 300_000], pa.int64()),
        "cpu_count": pa.array([1] * 3, pa.int32()), "cpu_usage": pa.array([100.0, 200.0, 300.0])},
        names=("meta.parquet", "trace.parquet"))


# ------------------------------------------------------------------------------------ versions


def test_v4_table(tmp_path):
    t = read_opendc_tasks(v4(tmp_path / "v4"))
    assert t.version == "v4" and t.n_tasks == 2 and t.n_fragments == 3
    assert list(t.task_id) == [7, 9]
    assert list(t.frag_offset) == [0, 2, 3]  # task 7 owns fragments 0-1, task 9 fragment 2
    assert t.frag_task.dtype == np.int32
    # fragments back to back from the submission: task 7 at T0 and T0 + 600 s, task 9 at T0 + 1,800 s
    assert list(t.frag_start_s() - T0 / 1000) == [0.0, 600.0, 1800.0]
    assert list(t.run_s()) == [900.0, 1200.0]
    assert t.mem_bytes[0] == 4 * 2**30  # 4,194,304 KB of 1,024 bytes
    # 1,000 MHz x 600 s + 500 x 300 + 250 x 1,200 = 600,000 + 150,000 + 300,000
    assert t.total_cpu_mhz_s() == 1_050_000.0


def test_fragments_of_a_task_need_not_be_contiguous(tmp_path):
    t = read_opendc_tasks(v4(tmp_path / "v4", frag_ids=(7, 9, 7), durations=(600_000, 1_200_000, 300_000), usage=(1000.0, 250.0, 500.0)))
    # grouped by task, file order kept inside a task: task 7 = (600 s @ 1,000, 300 s @ 500)
    assert list(t.frag_task) == [0, 0, 1]
    assert list(t.frag_duration_s) == [600.0, 300.0, 1200.0]
    assert list(t.frag_cpu_mhz) == [1000.0, 500.0, 250.0]


def test_v1_timestamps_are_end_times_gaps_idle_overlaps_clipped(tmp_path):
    t = read_opendc_tasks(v1(tmp_path / "v1"))
    assert t.version == "v1"
    # fragment 1 runs [0, 600) s; fragment 2 ends at 1,500 s after 600 s, so it runs [900, 1,500) and
    # [600, 900) is an idle gap (a zero-usage fragment); fragment 3 ends at 1,799 s after 300 s: it would
    # start at 1,499, one second before fragment 2 ends, so it runs [1,500, 1,799): 299 s
    assert list(t.frag_duration_s) == [600.0, 300.0, 600.0, 299.0]
    assert list(t.frag_cpu_mhz) == [100.0, 0.0, 200.0, 300.0]
    assert t.gap_fragments == 1 and t.clipped_fragments == 1
    assert t.clipped_mhz_s == 300.0  # 1 s x 300 MHz dropped, as OpenDC's end-time-only trace drops it
    assert t.duration_s[0] == 1800.0  # stop_time - start_time
    assert t.task_id[0] == "a"


def test_v1_leading_gap_and_nested_subfolder(tmp_path):
    # the first fragment ends at +20 min after 10 min: [0, 600) s of the task is idle
    d = v1(tmp_path / "v1" / "trace", stamps=(T0 + 1_200_000, T0 + 1_800_000, T0 + 2_100_000), stop=T0 + 2_100_000)
    t = read_opendc_tasks(tmp_path / "v1")  # opendc-traces keeps v1 files in trace/meta.parquet
    assert d.name == "trace"
    assert list(t.frag_duration_s) == [600.0, 600.0, 600.0, 300.0]
    assert list(t.frag_cpu_mhz) == [0.0, 100.0, 200.0, 300.0]


def test_v1_is_detected_as_opendc_and_replays(tmp_path):
    d = v1(tmp_path / "v1")
    assert detect_format(d) == "opendc"
    src = OpenDcSource(open_trace("opendc", d), "a")
    w = src.window(TimeGrid(T0 / 1000, 300.0, 6), 0, 6, ("cpu_mhz",))["cpu_mhz"][:, 0]
    # 300-s steps: [0,300) 100, [300,600) 100, [600,900) idle, [900,1200) 200, [1200,1500) 200, [1500,1800) 299/300 x 300
    assert w == pytest.approx([100, 100, 0, 200, 200, 299.0], abs=1e-4)


def test_v2_has_no_duration_column(tmp_path):
    d = _write(tmp_path / "v2", {
        "id": pa.array(["x"]), "submission_time": pa.array([T0], TS), "cpu_count": pa.array([4], pa.int32()),
        "cpu_capacity": pa.array([8000.0]), "mem_capacity": pa.array([1024], pa.int64()),
    }, {"id": pa.array(["x", "x"]), "duration": pa.array([60_000, 240_000], pa.int64()), "cpu_count": pa.array([4, 4], pa.int32()),
        "cpu_usage": pa.array([10.0, 20.0])})
    t = read_opendc_tasks(d)
    assert t.version == "v2"
    assert t.duration_s[0] == 300.0  # 60 s + 240 s of fragments
    assert t.submission_s[0] == T0 / 1000


def test_v3_string_ids_and_v5(tmp_path):
    base = {"submission_time": pa.array([T0], pa.int64()), "duration": pa.array([60_000], pa.int64()), "cpu_count": pa.array([1], pa.int32()),
            "cpu_capacity": pa.array([1000.0]), "mem_capacity": pa.array([1024], pa.int64())}
    d3 = _write(tmp_path / "v3", {"id": pa.array(["t1"]), **base},
                {"id": pa.array(["t1"]), "duration": pa.array([60_000], pa.int64()), "cpu_count": pa.array([1], pa.int32()),
                 "cpu_usage": pa.array([500.0])})
    assert read_opendc_tasks(d3).version == "v3"
    d5 = _write(tmp_path / "v5", {"id": pa.array([1], pa.int32()), **base, "deferrable": pa.array([False])},
                {"id": pa.array([1], pa.int32()), "duration": pa.array([60_000], pa.int64()), "cpu_usage": pa.array([500.0])})
    t5 = read_opendc_tasks(d5)
    assert t5.version == "v5" and t5.total_cpu_mhz_s() == 500.0 * 60
    assert t5.notes == ("tasks.parquet: column 'deferrable' ignored (no task is deferrable)",)


def test_schema_2_0_camel_case_needs_a_clock(tmp_path):
    d = _write(tmp_path / "v20", {
        "id": pa.array(["vm"]), "submissionTime": pa.array([T0], TS), "duration": pa.array([600_000], pa.int64()),
        "maxCores": pa.array([2], pa.int32()), "requiredMemory": pa.array([2048], pa.int64()),
    }, {"id": pa.array(["vm"]), "time": pa.array([T0], TS), "duration": pa.array([600_000], pa.int64()),
        "cores": pa.array([2], pa.int32()), "cpuUsage": pa.array([1500.0])})
    msg = _err(read_opendc_tasks, d)
    assert "tasks.parquet" in msg and "2.0 trace gives no CPU capacity" in msg
    t = read_opendc_tasks(d, vcpu_mhz=2100.0)
    assert t.version == "2.0"
    assert t.cpu_capacity_mhz[0] == 4200.0  # 2 cores x 2,100 MHz
    assert t.mem_bytes[0] == 2048 * 1024
    # tasks/fragments files run fragments back to back: the 'time' column is not used
    assert t.frag_start_s()[0] == T0 / 1000
    # the engine's source asks the VM group for the clock
    assert "vcpu_speed" in _err(OpenDcSource, open_trace("opendc", d), "g")
    assert OpenDcSource(open_trace("opendc", d), "g", vcpu_mhz=2100.0).sizes.vcpu_mhz[0] == 2100.0


def test_schema_2_0_in_meta_files_time_is_the_start(tmp_path):
    # OpenDC's 2.0 converter writes 'time' = the fragment's start (submissionTime = the first one)
    d = _write(tmp_path / "m20", {
        "id": pa.array(["vm"]), "submissionTime": pa.array([T0], TS), "endTime": pa.array([T0 + 900_000], TS),
        "maxCores": pa.array([1], pa.int32()), "requiredMemory": pa.array([2048], pa.int64()),
    }, {"id": pa.array(["vm", "vm"]), "time": pa.array([T0, T0 + 600_000], TS), "duration": pa.array([300_000, 300_000], pa.int64()),
        "cores": pa.array([1, 1], pa.int32()), "cpuUsage": pa.array([10.0, 20.0])}, names=("meta.parquet", "trace.parquet"))
    t = read_opendc_tasks(d, vcpu_mhz=2000.0)
    # [0, 300) 10 MHz, [300, 600) idle, [600, 900) 20 MHz
    assert list(t.frag_duration_s) == [300.0, 300.0, 300.0]
    assert list(t.frag_cpu_mhz) == [10.0, 0.0, 20.0]
    assert t.duration_s[0] == 900.0


def test_unsupported_version_is_one_line(tmp_path):
    d = _write(tmp_path / "v6", {"id": pa.array([1]), "arrival": pa.array([T0])}, {"id": pa.array([1]), "duration": pa.array([1])})
    msg = _err(read_opendc_tasks, d)
    assert "unsupported OpenDC trace version 6" in msg and "tasks.parquet" in msg
    d2 = _write(tmp_path / "odd", {"id": pa.array([1]), "arrival": pa.array([T0])}, {"id": pa.array([1]), "duration": pa.array([1])})
    assert "unsupported OpenDC trace version: the tasks file columns (id, arrival)" in _err(read_opendc_tasks, d2)


def test_v1_without_trace_file(tmp_path):
    d = tmp_path / "v1"
    d.mkdir()
    pq.write_table(pa.table({"id": pa.array(["a"])}), d / "meta.parquet")
    assert _err(read_opendc_tasks, d).endswith("trace.parquet: file not found (the fragments that go with meta.parquet)")


# ------------------------------------------------------------------------------------ bad input


def test_negative_fragment_duration(tmp_path):
    d = v4(tmp_path / "v4", durations=(600_000, -300_000, 1_200_000))
    assert "fragments.parquet:row 2, column 'duration': duration (s) must be >= 0, got -300" in _err(read_opendc_tasks, d)


def test_negative_task_duration(tmp_path):
    d = v4(tmp_path / "v4")
    t = pq.read_table(d / "tasks.parquet")
    pq.write_table(t.set_column(2, "duration", pa.array([900_000, -5_000], pa.int64())), d / "tasks.parquet")
    assert "tasks.parquet:row 2, column 'duration': duration (s) must be >= 0, got -5" in _err(read_opendc_tasks, d)


def test_fragment_of_unknown_task(tmp_path):
    d = v4(tmp_path / "v4", frag_ids=(7, 8, 9))
    assert "fragments.parquet:row 2, column 'id': fragment of task 8, which is not in tasks.parquet" in _err(read_opendc_tasks, d)


def test_duplicate_task_ids(tmp_path):
    d = v4(tmp_path / "v4", task_ids=(7, 7), frag_ids=(7, 7, 7))
    assert "tasks.parquet:row 2, column 'id': duplicate task id 7 (also in row 1)" in _err(read_opendc_tasks, d)


def test_departure_before_arrival(tmp_path):
    d = v1(tmp_path / "v1", stop=T0 - 60_000)
    msg = _err(read_opendc_tasks, d)
    assert "meta.parquet:row 1, column 'stop_time'" in msg and "60 s before it starts" in msg


def test_v1_fragment_inside_its_predecessor(tmp_path):
    # fragment 3 ends at +24:00, before fragment 2 ends (+25:00): a repeated or misordered row
    d = v1(tmp_path / "v1", stamps=(T0 + 600_000, T0 + 1_500_000, T0 + 1_440_000))
    msg = _err(read_opendc_tasks, d)
    assert "trace.parquet:row 3, column 'timestamp'" in msg and "ends before the task's previous fragment ends" in msg


def test_limit_keeps_the_first_tasks(tmp_path):
    t = read_opendc_tasks(v4(tmp_path / "v4"), limit=1)
    assert t.n_tasks == 1 and t.n_fragments == 2 and list(t.frag_offset) == [0, 2]


def test_100k_tasks_shape_is_small(tmp_path):
    # OpenDC's taskScaling/100K_tasks shape: 100,000 one-hour tasks of one fragment over ~31 days.
    # The table holds 20 bytes per fragment and ~40 per task, nothing per time step (the dense
    # 100,000 x 8,929 float64 array that failed before was 6.65 GiB).
    n = 100_000
    rng = np.random.default_rng(0)
    d = _write(tmp_path / "100k", {
        "id": pa.array(np.arange(n), pa.int32()), "submission_time": pa.array(T0 + rng.integers(0, 31 * 86_400_000, n), pa.int64()),
        "duration": pa.array(np.full(n, 3_600_000), pa.int64()), "cpu_count": pa.array(np.ones(n), pa.int32()),
        "cpu_capacity": pa.array(np.full(n, 1000.0)), "mem_capacity": pa.array(np.full(n, 10_000), pa.int64()),
    }, {"id": pa.array(rng.permutation(n), pa.int32()), "duration": pa.array(np.full(n, 3_600_000), pa.int64()),
        "cpu_usage": pa.array(np.full(n, 1000.0))})
    t = read_opendc_tasks(d)
    assert t.nbytes < 100 * n  # 8.4 MB
    assert t.total_cpu_mhz_s() == pytest.approx(n * 1000.0 * 3600, rel=1e-12)


# ------------------------------------------------------------------------------------ real traces


def _needs(name):
    if not (TRACES / name).exists():
        pytest.skip(f"../shared/traces/{name} is not beside the repository")
    return TRACES / name


def test_surf_week_total_demand_equals_the_trace():
    d = _needs("opendc-surf-week")
    t = read_opendc_tasks(d)
    f = pq.read_table(d / "fragments.parquet", columns=["cpu_usage", "duration"])
    trace_total = float(np.sum(f.column("cpu_usage").to_numpy() * (f.column("duration").to_numpy() / 1000.0)))
    assert t.n_tasks == 6295 and t.n_fragments == 2_323_475
    assert t.total_cpu_mhz_s() == pytest.approx(trace_total, rel=1e-9)
    assert abs(t.total_cpu_mhz_s() - trace_total) <= 1e-9 * trace_total


def test_bitbrains_v1_and_v4_are_the_same_workload():
    d = _needs("opendc-bitbrains-small")
    a, b = read_opendc_tasks(d / "v1"), read_opendc_tasks(d / "v4")
    assert (a.version, b.version) == ("v1", "v4")
    assert np.array_equal(a.task_id.astype(np.int64), b.task_id)
    assert np.array_equal(a.submission_s, b.submission_s) and np.array_equal(a.duration_s, b.duration_s)
    assert np.array_equal(a.cpu_capacity_mhz, b.cpu_capacity_mhz) and np.array_equal(a.mem_bytes, b.mem_bytes)
    # v1 keeps the idle gaps (13,475 zero fragments) so each task spans stop - start exactly; 1,451
    # fragments overlap their predecessor by 1 s and lose that second
    assert np.allclose(a.run_s(), a.duration_s)
    assert a.clipped_fragments == 1451 and b.clipped_fragments == 0
    assert a.total_cpu_mhz_s() + a.clipped_mhz_s == pytest.approx(b.total_cpu_mhz_s(), rel=1e-12)
    # README: total CPU demand 2.0738e11 MHz s
    assert b.total_cpu_mhz_s() == pytest.approx(2.0738e11, rel=1e-4)


def test_v1_plans_as_an_inventory():
    d = _needs("opendc-bitbrains-small")
    inv = load_inventory(d / "v1")
    assert inv.n_vms == 50 and int(inv.vcpus.sum()) == 194
