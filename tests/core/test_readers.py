"""Trace readers on the real traces, exact resampling, and bad input."""

import gzip
import shutil

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from densim.errors import InputError
from densim.workloads.readers import open_trace
from densim.workloads.readers.bitbrains import BitbrainsSource
from densim.workloads.readers.opendc import OpenDcSource
from densim.workloads.readers.planetlab import PlanetLabSource
from densim.workloads.timegrid import TimeGrid, resample_piecewise


def test_planetlab_reads_1052_files(traces):
    tr = open_trace("planetlab", traces / "planetlab-20110303")
    assert tr.util_pct.shape == (288, 1052)
    assert any(" " in f.name for f in tr.files)  # the 50 names with a space are read too
    src = PlanetLabSource(tr, "pl", 2104, 2, 1000.0, 2 * 2**30)
    w = src.window(TimeGrid(0.0, 300.0, 288), 0, 288, ("cpu_mhz",))["cpu_mhz"]
    # VM 0 and VM 1052 are driven by the same file; demand = util/100 x 2 x 1,000 MHz
    assert np.array_equal(w[:, 0], w[:, 1052])
    assert w[:, 5] == pytest.approx(tr.util_pct[:, 5] / 100 * 2000)


def test_planetlab_resampled_to_a_coarser_step_conserves_work(traces):
    tr = open_trace("planetlab", traces / "planetlab-20110303", limit=20)
    src = PlanetLabSource(tr, "pl", 20, 1, 1000.0, 2**30)
    fine = src.window(TimeGrid(0.0, 300.0, 288), 0, 288, ("cpu_mhz",))["cpu_mhz"].astype(float).sum() * 300
    coarse = src.window(TimeGrid(0.0, 3600.0, 24), 0, 24, ("cpu_mhz",))["cpu_mhz"].astype(float).sum() * 3600
    assert coarse == pytest.approx(fine, rel=1e-6)


def test_opendc_total_matches_trace(traces):
    tr = open_trace("opendc", traces / "opendc-bitbrains-small/v4")
    src = OpenDcSource(tr, "bb")
    a, b = src.span_s()
    n = int(np.ceil((b - a) / 300))
    w = src.window(TimeGrid(a, 300.0, n), 0, n, ("cpu_mhz",))["cpu_mhz"]
    # README: total CPU demand = 2.0738e11 MHz s
    assert w.astype(float).sum() * 300 == pytest.approx(2.0738e11, rel=1e-4)
    assert src.sizes.vcpus.sum() == 194


def test_opendc_windows_add_up(traces):
    tr = open_trace("opendc", traces / "opendc-bitbrains-small/v4")
    src = OpenDcSource(tr, "bb")
    a, _ = src.span_s()
    g = TimeGrid(a, 300.0, 2000)
    whole = src.window(g, 0, 2000, ("cpu_mhz",))["cpu_mhz"]
    parts = np.concatenate([src.window(g, t, min(2000, t + 700), ("cpu_mhz",))["cpu_mhz"] for t in range(0, 2000, 700)])
    assert np.allclose(whole, parts, rtol=1e-5, atol=1e-2)


def test_bitbrains_raw_csv(traces):
    tr = open_trace("bitbrains", traces / "gwa-t-12-rnd-2013-8-first250", limit=25)
    src = BitbrainsSource(tr, "rnd")
    assert src.n_vms == 25
    a, b = src.span_s()
    n = int(np.ceil((b - a) / 300))
    w = src.window(TimeGrid(a, 300.0, n), 0, n, ("cpu_mhz", "mem_used_bytes", "disk_read_Bps"))
    assert set(w) == {"cpu_mhz", "mem_used_bytes", "disk_read_Bps"}
    assert w["cpu_mhz"].astype(float).sum() * 300 == pytest.approx(tr.total_cpu_mhz_s(), rel=1e-5)


def test_bitbrains_duplicate_timestamps_are_averaged(tmp_path):
    head = "Timestamp [ms];\tCPU cores;\tCPU capacity provisioned [MHZ];\tCPU usage [MHZ];\tCPU usage [%];\tMemory capacity provisioned [KB];\tMemory usage [KB];\tDisk read throughput [KB/s];\tDisk write throughput [KB/s];\tNetwork received throughput [KB/s];\tNetwork transmitted throughput [KB/s]\n"
    rows = ["1000;\t2;\t4000;\t100;\t2.5;\t1024;\t512;\t0;\t0;\t0;\t0", "1000;\t2;\t4000;\t300;\t7.5;\t1024;\t512;\t0;\t0;\t0;\t0",
            "1300;\t2;\t4000;\t400;\t10;\t1024;\t512;\t0;\t0;\t0;\t0"]
    (tmp_path / "1.csv").write_text(head + "\n".join(rows) + "\n")
    tr = open_trace("bitbrains", tmp_path)
    # duplicates at t=1000 average to 200 MHz; 200 x 300 s + 400 x 300 s (last sample lasts the median step)
    assert tr.total_cpu_mhz_s() == pytest.approx(200 * 300 + 400 * 300)


@settings(max_examples=60, deadline=None)
@given(segs=st.lists(st.tuples(st.floats(0, 50), st.floats(0.1, 40), st.floats(0, 100)), min_size=1, max_size=8),
       step=st.floats(1, 30))
def test_resampling_conserves_work(segs, step):
    # back-to-back segments of one owner; a grid covering them all conserves sum(value x duration)
    start = np.cumsum([0.0] + [d for _, d, _ in segs[:-1]]) + segs[0][0]
    dur = np.array([d for _, d, _ in segs])
    val = np.array([v for _, _, v in segs])
    end = start[-1] + dur[-1]
    n = int(np.ceil(end / step)) + 1
    edges = np.arange(n + 1) * step
    out = resample_piecewise(start, dur, val, np.zeros(len(segs), int), 1, edges)
    assert out.astype(float).sum() * step == pytest.approx(float((val * dur).sum()), rel=1e-5, abs=1e-3)


# ---- bad input: one line naming file, row/column and problem -------------------------------

def _copy_planetlab(traces, tmp_path, n=3):
    d = tmp_path / "pl"
    d.mkdir()
    for f in sorted((traces / "planetlab-20110303").iterdir())[:n]:
        shutil.copy(f, d / f.name)
    return d


def test_planetlab_non_numeric(traces, tmp_path):
    d = _copy_planetlab(traces, tmp_path)
    f = sorted(d.iterdir())[1]
    lines = f.read_text().splitlines()
    lines[9] = "abc"
    f.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as e:
        open_trace("planetlab", d)
    assert str(e.value) == f"{f}:line 10: not a number: 'abc'"


def test_planetlab_integer_files_parse_as_floats_and_name_a_bad_value(traces, tmp_path):
    # CoMon files (one integer per line) are parsed together in one array pass: the same values as
    # float() line by line; a value above 100 % in the third file is reported with its file and line
    from densim.workloads.readers.planetlab import PlanetLabTrace, _parse_file

    d = _copy_planetlab(traces, tmp_path, n=4)
    files = sorted(d.iterdir())
    tr = PlanetLabTrace(d)
    want = np.stack([np.array([float(x) for x in f.read_text().splitlines() if x.strip()], np.float32) for f in files], axis=1)
    assert np.array_equal(tr.util_pct, want)
    assert all(np.array_equal(_parse_file(f), want[:, i]) for i, f in enumerate(files))
    lines = files[2].read_text().splitlines()
    lines[6] = "101"
    files[2].write_text("\n".join(lines))  # and no newline at the end
    with pytest.raises(InputError) as e:
        PlanetLabTrace(d)
    assert str(e.value) == f"{files[2]}:line 7: CPU utilisation must be in [0, 100] %, got 101"


def test_planetlab_negative_and_truncated(traces, tmp_path):
    d = _copy_planetlab(traces, tmp_path)
    f = sorted(d.iterdir())[0]
    lines = f.read_text().splitlines()
    f.write_text("\n".join(lines[:100]) + "\n")
    with pytest.raises(InputError, match=r"line 101: truncated: 100 samples"):
        open_trace("planetlab", d)
    lines[3] = "-5"
    f.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=r"line 4: CPU utilisation must be in \[0, 100\] %, got -5"):
        open_trace("planetlab", d)


def _bitbrains_copy(traces, tmp_path):
    d = tmp_path / "bb"
    d.mkdir()
    text = gzip.decompress((traces / "gwa-t-12-rnd-2013-8-first250" / "1.csv.gz").read_bytes()).decode()
    return d, text


def test_bitbrains_missing_column(traces, tmp_path):
    d, text = _bitbrains_copy(traces, tmp_path)
    (d / "1.csv").write_text(text.replace("Memory usage [KB]", "Mem used"))
    with pytest.raises(InputError) as e:
        open_trace("bitbrains", d)
    assert "row 1 (header): missing column 'Memory usage [KB]'" in str(e.value)


def test_bitbrains_bad_values_and_truncation(traces, tmp_path):
    d, text = _bitbrains_copy(traces, tmp_path)
    lines = text.splitlines()
    bad = lines.copy()
    fields = bad[5].split(";")
    fields[3] = "\tfoo"
    bad[5] = ";".join(fields)
    (d / "1.csv").write_text("\n".join(bad) + "\n")
    with pytest.raises(InputError, match=r"1.csv:row 6, column 'CPU usage \[MHZ\]': not a number: 'foo'"):
        open_trace("bitbrains", d)
    neg = lines.copy()
    fields = neg[7].split(";")
    fields[3] = "\t-12.5"
    neg[7] = ";".join(fields)
    (d / "1.csv").write_text("\n".join(neg) + "\n")
    with pytest.raises(InputError, match=r"row 8, column 'CPU usage \[MHZ\]': negative value -12.5"):
        open_trace("bitbrains", d)
    cut = "\n".join(lines[:50]) + "\n" + lines[50][: len(lines[50]) // 2]
    (d / "1.csv").write_text(cut)
    with pytest.raises(InputError, match=r"row 51: expected 11 fields, found \d+ \(truncated file\?\)"):
        open_trace("bitbrains", d)


def test_opendc_missing_column_and_truncated(traces, tmp_path):
    d = tmp_path / "odc"
    d.mkdir()
    src = traces / "opendc-bitbrains-small/v4"
    shutil.copy(src / "fragments.parquet", d / "fragments.parquet")
    t = pq.read_table(src / "tasks.parquet").drop_columns(["mem_capacity"])
    pq.write_table(t, d / "tasks.parquet")
    with pytest.raises(InputError, match=r"tasks.parquet:column 'mem_capacity': missing column"):
        open_trace("opendc", d)
    shutil.copy(src / "tasks.parquet", d / "tasks.parquet")
    raw = (src / "fragments.parquet").read_bytes()
    (d / "fragments.parquet").write_bytes(raw[: len(raw) // 2])
    with pytest.raises(InputError, match=r"fragments.parquet: not a readable Parquet file \(truncated\?\)"):
        open_trace("opendc", d)


def test_opendc_negative_usage(traces, tmp_path):
    d = tmp_path / "odc"
    d.mkdir()
    src = traces / "opendc-bitbrains-small/v4"
    shutil.copy(src / "tasks.parquet", d / "tasks.parquet")
    df = pl.read_parquet(src / "fragments.parquet")
    df = df.with_columns(pl.when(pl.int_range(pl.len()) == 41).then(-3.0).otherwise(pl.col("cpu_usage")).alias("cpu_usage"))
    df.write_parquet(d / "fragments.parquet")
    # every fragment is checked when the trace is opened, before any work
    with pytest.raises(InputError, match=r"fragments.parquet:row 42, column 'cpu_usage': CPU usage \(MHz\) must be >= 0, got -3"):
        open_trace("opendc", d)


def test_unknown_format(tmp_path):
    with pytest.raises(InputError, match="unknown workload-format 'swf'"):
        open_trace("swf", tmp_path)
    assert pa is not None


@given(st.binary(max_size=60).map(lambda b: bytes(b";\t0a\n"[x % 5] for x in b).replace(b"a", b"\t")))
def test_bitbrains_tab_after_separator_is_dropped_as_replace_does(data):
    # the fast path (delete every tab when each one follows ';') equals data.replace(b";\t", b";"),
    # including ";\t\t", a leading tab and tabs elsewhere (which take the replace itself)
    from densim.workloads.readers.bitbrains import _drop_tab_after_separator

    assert _drop_tab_after_separator(data) == data.replace(b";\t", b";")
    assert _drop_tab_after_separator(b";\t;\t\t1\t") == b";;\t1\t" and _drop_tab_after_separator(b"\t;") == b"\t;"
