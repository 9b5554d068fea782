"""The cache of parsed traces (densim.workloads.trace_cache) as the PlanetLab reader uses it.

The folder of every test: three PlanetLab files of four samples each, so the matrix is (4 x 3) and
its columns can be checked by eye."""

from __future__ import annotations

import os

import numpy as np
import pytest

from densim.workloads import trace_cache
from densim.workloads.readers import planetlab
from densim.workloads.readers.planetlab import PlanetLabTrace

FILES = {"a": [10, 20, 30, 40], "b": [0, 5, 100, 7], "c file": [1, 2, 3, 4]}  # a name with a space, as in the real day
WANT = np.array([[10, 0, 1], [20, 5, 2], [30, 100, 3], [40, 7, 4]], dtype=np.float32)  # columns in name order


@pytest.fixture
def day(tmp_path, monkeypatch):
    monkeypatch.setenv("DENSIM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("DENSIM_TRACE_CACHE", raising=False)
    d = tmp_path / "day"
    d.mkdir()
    for name, vals in FILES.items():
        (d / name).write_text("".join(f"{v}\n" for v in vals))
    return d


def entries(tmp_path):
    folder = tmp_path / "cache" / "traces"
    return sorted(folder.iterdir()) if folder.exists() else []


def no_parsing(monkeypatch):
    def fail(*a, **k):
        raise AssertionError("parsed although the cache holds these bytes")

    monkeypatch.setattr(planetlab, "_parse_files", fail)


def test_a_second_read_comes_from_the_cache_with_identical_arrays(day, tmp_path, monkeypatch):
    first = PlanetLabTrace(day)
    assert np.array_equal(first.util_pct, WANT) and first.util_pct.dtype == np.float32
    [entry] = entries(tmp_path)
    assert entry.name.startswith("planetlab-v1-") and entry.suffix == ".bin"
    no_parsing(monkeypatch)
    again = PlanetLabTrace(day)
    assert again.util_pct.dtype == first.util_pct.dtype and again.util_pct.shape == (4, 3)
    assert np.array_equal(again.util_pct, first.util_pct)
    assert [f.name for f in again.files] == ["a", "b", "c file"]
    again.util_pct[0, 0] = 99.0  # the array is the run's own (writable), not a view of a shared buffer
    # a copy of the same files elsewhere (another checkout) has the same key: names, sizes and bytes
    other = tmp_path / "copy"
    other.mkdir()
    for f in day.iterdir():
        (other / f.name).write_bytes(f.read_bytes())
    assert np.array_equal(PlanetLabTrace(other).util_pct, WANT)


def test_a_file_changed_with_the_same_size_and_mtime_is_read_again(day, tmp_path):
    PlanetLabTrace(day)
    f = day / "b"
    st = f.stat()
    f.write_text("0\n5\n100\n8\n")  # 7 -> 8: the same size
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))  # and the modification time set back
    assert f.stat().st_size == st.st_size and f.stat().st_mtime_ns == st.st_mtime_ns
    tr = PlanetLabTrace(day)
    assert tr.util_pct[3, 1] == 8.0  # not the cached 7
    assert len(entries(tmp_path)) == 2  # the new content is an entry of its own


def test_renamed_files_are_another_key(day, tmp_path):
    # the columns follow the names' order, so the names belong to the key: swapping two files' names
    # gives the same bytes in another order
    PlanetLabTrace(day)
    (day / "a").rename(day / "tmp")
    (day / "b").rename(day / "a")
    (day / "tmp").rename(day / "b")
    assert np.array_equal(PlanetLabTrace(day).util_pct, WANT[:, [1, 0, 2]])


@pytest.mark.parametrize("damage", ["truncate", "flip a data byte", "garbage", "empty", "another key"])
def test_a_damaged_entry_is_ignored_and_rewritten(day, tmp_path, damage):
    PlanetLabTrace(day)
    [entry] = entries(tmp_path)
    raw = bytearray(entry.read_bytes())
    if damage == "truncate":
        raw = raw[: len(raw) - 40]
    elif damage == "flip a data byte":
        raw[trace_cache._HEADER.size + 5] ^= 0x40  # inside the payload: only the digest can tell
    elif damage == "garbage":
        raw = bytearray(b"not a cache entry at all" * 10)
    elif damage == "empty":
        raw = bytearray()
    else:  # an intact entry of another key copied under this name
        raw[8:40] = bytes(32)
    entry.write_bytes(bytes(raw))
    tr = PlanetLabTrace(day)
    assert np.array_equal(tr.util_pct, WANT)
    [entry2] = entries(tmp_path)
    assert entry2 == entry and entry.read_bytes() != bytes(raw)  # rewritten
    key = trace_cache.content_key(planetlab.CACHE_NAME, ["a", "b", "c file"], [(day / n).read_bytes() for n in FILES])
    assert np.array_equal(trace_cache.load(planetlab.CACHE_NAME, key), WANT)


def test_an_entry_that_is_a_folder_or_a_cache_that_cannot_be_written_never_fails_the_run(day, tmp_path, monkeypatch):
    PlanetLabTrace(day)
    [entry] = entries(tmp_path)
    entry.unlink()
    entry.mkdir()  # cannot be read, cannot be replaced by a file
    assert np.array_equal(PlanetLabTrace(day).util_pct, WANT)
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    monkeypatch.setenv("DENSIM_CACHE_DIR", str(blocker))  # the cache folder would be inside a file
    assert np.array_equal(PlanetLabTrace(day).util_pct, WANT)
    assert np.array_equal(PlanetLabTrace(day).util_pct, WANT)


@pytest.mark.parametrize("how", ["env", "context"])
def test_cache_off_reads_and_writes_nothing(day, tmp_path, monkeypatch, how):
    if how == "env":
        monkeypatch.setenv("DENSIM_TRACE_CACHE", "0")
        tr = PlanetLabTrace(day)
    else:
        with trace_cache.trace_cache(False):
            tr = PlanetLabTrace(day)
    assert np.array_equal(tr.util_pct, WANT)
    assert entries(tmp_path) == []
    PlanetLabTrace(day.parent / "day")  # on again: written
    assert len(entries(tmp_path)) == (1 if how == "context" else 0)


def test_cache_off_does_not_read_an_entry(day, tmp_path, monkeypatch):
    PlanetLabTrace(day)
    no_parsing(monkeypatch)
    with trace_cache.trace_cache(False), pytest.raises(AssertionError, match="parsed although"):
        PlanetLabTrace(day)


def test_where_the_cache_lives(monkeypatch, tmp_path):
    monkeypatch.setenv("DENSIM_CACHE_DIR", str(tmp_path / "x"))
    assert trace_cache.cache_dir() == tmp_path / "x" / "traces"
    monkeypatch.delenv("DENSIM_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert trace_cache.cache_dir() == tmp_path / "xdg" / "densim" / "traces"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative")  # the XDG spec says to ignore a relative path
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert trace_cache.cache_dir() == tmp_path / "home" / ".cache" / "densim" / "traces"


def test_the_oldest_entries_beyond_the_limit_are_removed(day, tmp_path, monkeypatch):
    monkeypatch.setattr(trace_cache, "MAX_ENTRIES", 2)
    for v in ("11", "12", "13"):  # three contents of file a, three entries written one after the other
        (day / "a").write_text(f"{v}\n20\n30\n40\n")
        PlanetLabTrace(day)
        for i, e in enumerate(entries(tmp_path)):  # distinct ages whatever the clock's resolution
            os.utime(e, ns=(e.stat().st_atime_ns, e.stat().st_mtime_ns - 10**9 * (10 - i)))
    assert len(entries(tmp_path)) == 2
    no_parsing(monkeypatch)
    assert PlanetLabTrace(day).util_pct[0, 0] == 13.0  # the newest is kept


def test_errors_still_name_the_file_and_line(day, tmp_path):
    # a bad file is never cached: the next read fails the same way
    (day / "b").write_text("0\n5\n101\n7\n")
    for _ in range(2):
        with pytest.raises(planetlab.InputError, match="line 3: CPU utilisation must be in"):
            PlanetLabTrace(day)
    assert entries(tmp_path) == []
    (day / "b").write_text("0\n5\n")
    with pytest.raises(planetlab.InputError, match="truncated: 2 samples where the other files have 4"):
        PlanetLabTrace(day)
    assert entries(tmp_path) == []


def test_densim_run_no_trace_cache(day, tmp_path, write_yaml):
    # the same run with and without --no-trace-cache: the same energy; only the run without it writes an entry
    from typer.testing import CliRunner

    from densim.cli.main import app

    host = {"count": 1, "cpu": {"sockets": 1, "cores_per_socket": 4, "base_clock": "1000 MHz"}, "memory": "8 GiB",
            "power": {"model": "linear", "idle": "100 W", "peak": "200 W"}}
    p = write_yaml({"name": "pl", "cluster": {"hosts": [host]},
                    "vms": [{"name": "v", "count": 3, "vcpus": 1, "vcpu_speed": "1000 MHz", "memory": "1 GiB",
                             "trace": {"format": "planetlab", "path": str(day)}}],
                    "simulation": {"step": "5 min", "horizon": "20 min"}})
    runner = CliRunner()
    r = runner.invoke(app, ["run", str(p), "--out", str(tmp_path / "o1"), "--no-progress", "--no-report", "--json",
                            "--no-trace-cache"])
    assert r.exit_code == 0, r.output
    assert entries(tmp_path) == []
    r2 = runner.invoke(app, ["run", str(p), "--out", str(tmp_path / "o2"), "--no-progress", "--no-report", "--json"])
    assert r2.exit_code == 0, r2.output
    assert len(entries(tmp_path)) == 1
    import json

    e1, e2 = (json.loads(x.output[: x.output.rindex("}") + 1])["totals"]["energy_kwh"] for x in (r, r2))
    assert e1 == e2
