"""fio results (issue 31): `densim io fio.json` prints the device profile fio measured, `densim calibrate`
fits a catalog device to it with scipy's least_squares, and a bad fio file is one line naming the file
and the JSON path.

The fixtures in ``fixtures/`` have the shape of fio 3.x ``--output-format=json`` (fio's HOWTO, "JSON
output"; sample outputs in public repositories): ``global options``, ``jobs[]`` with ``jobname``,
``groupid``, ``job options`` and ``read``/``write``/``trim`` sections (``iops``, ``bw_bytes``,
``slat_ns``/``clat_ns``/``lat_ns`` with ``clat_ns.percentile``):

* ``fio-psync-preamble.json``: fio's "note: ... queue depth will be capped at 1" lines before the JSON;
  psync, iodepth 8, numjobs 4 under group_reporting;
* ``fio-two-clones-randrw.json``: a ``fio-3.33`` line first; randrw 70/30, 8 KiB, iodepth 4, numjobs 2
  without group_reporting (two entries of one reporting group);
* ``fio-nvme-depth-sweep.json``: eight stonewalled jobs (randread 4 KiB at QD 1/4/16/64, randwrite 4 KiB
  at QD 1/16, read 128 KiB at QD 1/8) whose IOPS and latencies are the storage model's own for a device
  of 80/25 us QD1 latency, 400k/150k IOPS, 3000/1200 MB/s, so a fit must recover those figures.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from densim.cli.main import app
from densim.errors import InputError
from densim.models.devices import DeviceSpec
from densim.models.storage.fio import FioPoint, fit_device, model_point, read_fio

FIX = Path(__file__).resolve().parent / "fixtures"
PSYNC = FIX / "fio-psync-preamble.json"
CLONES = FIX / "fio-two-clones-randrw.json"
SWEEP = FIX / "fio-nvme-depth-sweep.json"
runner = CliRunner()


def test_preamble_is_skipped_and_a_sync_engine_keeps_one_io_in_flight_per_job():
    run = read_fio(PSYNC)
    assert run.version == "fio-3.28"
    (p,) = run.points
    # psync is synchronous: iodepth 8 counts as 1; numjobs 4 under group_reporting -> 4 outstanding I/Os
    assert (p.rw, p.block_bytes, p.depth, p.sequential) == ("randread", 4096.0, 4, False)
    assert p.iops == 32000.0 and p.read_fraction == 1.0
    assert p.mean_latency_s == pytest.approx(125e-6)  # lat_ns.mean = 125,000 ns
    assert p.p99_latency_s == pytest.approx(310.5e-6)  # clat_ns.percentile["99.000000"] = 310,500 ns
    assert any("psync (iodepth 8)" in n for n in run.notes)


def test_clones_of_one_group_are_one_point():
    (p,) = read_fio(CLONES).points
    # two entries of groupid 0, iodepth 4 each -> depth 8; reads 7000 + 7000, writes 3000 + 3000
    assert p.where == "jobs[0,1]" and p.depth == 8 and p.block_bytes == 8192.0
    assert (p.read_iops, p.write_iops, p.read_fraction) == (14000.0, 6000.0, 0.7)
    # reads: (7000 x 300 us + 7000 x 500 us) / 14000 = 400 us; writes 600 us;
    # mean = (14000 x 400 + 6000 x 600) / 20000 = 460 us
    assert p.read_latency_s == pytest.approx(400e-6) and p.write_latency_s == pytest.approx(600e-6)
    assert p.mean_latency_s == pytest.approx(460e-6)


def test_depth_sweep_points_in_order():
    pts = read_fio(SWEEP).points
    assert [(p.rw, int(p.block_bytes), p.depth) for p in pts] == [
        ("randread", 4096, 1), ("randread", 4096, 4), ("randread", 4096, 16), ("randread", 4096, 64),
        ("randwrite", 4096, 1), ("randwrite", 4096, 16), ("read", 131072, 1), ("read", 131072, 8)]
    assert pts[0].iops == 12500.0 and pts[0].mean_latency_s == pytest.approx(80e-6)  # QD1: 1 / 80 us
    assert pts[-1].sequential and pts[-1].bandwidth_bps == pytest.approx(22877.848933 * 131072, rel=1e-9)


def test_densim_io_recognises_a_fio_file_with_and_without_preamble(tmp_path):
    for f in (PSYNC, CLONES, SWEEP):
        r = runner.invoke(app, ["io", str(f)])
        assert r.exit_code == 0, r.output
        assert "fio device profile" in r.output and "unknown field" not in r.output
    r = runner.invoke(app, ["io", str(SWEEP), "--json", "--out", str(tmp_path / "o")])
    data = json.loads(r.stdout)
    assert data == json.loads((tmp_path / "o" / "summary.json").read_text())
    assert data["kind"] == "fio-profile" and len(data["points"]) == 8 and data["points"][3]["depth"] == 64


# ------------------------------------------------------------------------------------------------
# fitting


def _device(**kw) -> DeviceSpec:
    base = dict(name="truth", kind="nvme_ssd", read_latency="100 us", write_latency="30 us", read_iops=200000, write_iops=50000,
                seq_read="2000 MB/s", seq_write="1000 MB/s")
    return DeviceSpec(**{**base, **kw})


def _synthetic(dev: DeviceSpec, specs) -> list[FioPoint]:
    """Points whose IOPS and latency are the model's own for ``dev`` (what a perfect fio run would give)."""
    out = []
    for rw, bs, depth, reads, seq in specs:
        p = FioPoint("", rw, rw, seq, bs, depth, reads, 1.0 - reads, 0.0, None, None, None)
        x, r = model_point(dev, p)
        out.append(FioPoint(f"jobs[{len(out)}]", rw, rw, seq, bs, depth, x * reads, x * (1 - reads), x * bs,
                            r if reads else None, r if reads < 1 else None, None))
    return out


def test_model_point_at_qd1_is_the_qd1_latency_and_at_depth_the_saturated_rate():
    dev = _device()
    p1 = _synthetic(dev, [("randread", 4096.0, 1, 1.0, False)])[0]
    assert p1.iops == pytest.approx(10000.0) and p1.mean_latency_s == pytest.approx(100e-6)  # 1 / 100 us
    # parallelism = 200,000 IOPS x 100 us = 20 servers; at depth 256 the device is saturated near 200,000 IOPS
    deep = _synthetic(dev, [("randread", 4096.0, 256, 1.0, False)])[0]
    assert 0.99 * 200000 < deep.iops <= 200000 * (1 + 1e-12)


def test_fit_recovers_the_parameters_that_generated_the_data():
    truth = _device()
    pts = _synthetic(truth, [("randread", 4096.0, q, 1.0, False) for q in (1, 4, 16, 64)]
                     + [("randwrite", 4096.0, q, 0.0, False) for q in (1, 8)]
                     + [("read", 131072.0, q, 1.0, True) for q in (1, 16)])
    start = DeviceSpec(name="start", kind="nvme_ssd", read_latency="85 us", write_latency="20 us", read_iops=559000, write_iops=176000,
                       seq_read="3270 MB/s", seq_write="1300 MB/s")
    fit = fit_device(start, pts)
    got = {q["field"]: q["fitted_si"] for q in fit["parameters"]}
    assert set(got) == {"read_latency_s", "read_iops", "write_latency_s", "write_iops", "seq_read_bps"}  # no sequential writes measured
    assert got["read_latency_s"] == pytest.approx(100e-6, rel=1e-6) and got["read_iops"] == pytest.approx(200000, rel=1e-6)
    assert got["write_latency_s"] == pytest.approx(30e-6, rel=1e-6) and got["write_iops"] == pytest.approx(50000, rel=1e-6)
    assert got["seq_read_bps"] == pytest.approx(2e9, rel=1e-6)
    assert fit["parallelism"]["read"] == pytest.approx(20.0, rel=1e-6)  # 200,000 x 100 us
    assert fit["mape_iops_pct"] < 1e-4 and fit["mape_latency_pct"] < 1e-4 and fit["not_constrained"] == []
    assert all(abs(r["iops_error_pct"]) < 1e-4 for r in fit["points"])


def test_a_single_depth_does_not_determine_both_latency_and_iops():
    # one depth: IOPS x latency = depth ties the two, so only the QD1 latency is fitted and the
    # catalog's saturated IOPS is kept (and reported as not constrained), never an arbitrary pair
    pts = _synthetic(_device(), [("randread", 4096.0, 4, 1.0, False)])
    start = _device(read_iops=300000)
    fit = fit_device(start, pts)
    assert fit["not_constrained"] == ["read_iops"]
    got = {q["field"]: q for q in fit["parameters"]}
    assert got["read_iops"]["fitted_si"] == 300000 and not got["read_iops"]["fitted_to_data"]
    assert fit["mape_iops_pct"] < 1e-4  # the latency alone matches the one point


def test_calibrate_command_on_the_depth_sweep(tmp_path):
    r = runner.invoke(app, ["calibrate", str(SWEEP), "--device", "intel-dc-p4600-1.6tb", "--json", "--out", str(tmp_path / "c")])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    got = {q["field"]: q["fitted"] for q in data["parameters"]}
    # the fixture is the model's own output for 80/25 us, 400k/150k IOPS, 3000 MB/s sequential reads (rounded to fio's 6 decimals)
    assert got == pytest.approx({"read_latency_s": 80.0, "read_iops": 400000.0, "seq_read_bps": 3000.0,
                                 "write_latency_s": 25.0, "write_iops": 150000.0}, rel=1e-5)
    assert data["mape_iops_pct"] < 1e-3 and len(data["points"]) == 8
    r = runner.invoke(app, ["calibrate", str(SWEEP), "--device", "intel-dc-p4600-1.6tb"])
    assert r.exit_code == 0 and "MAPE: IOPS" in r.output and "fit error per point" in r.output


# ------------------------------------------------------------------------------------------------
# bad files: one line, the file and the JSON path, exit 1


def _mutated(tmp_path: Path, edit, preamble: str = "") -> Path:
    doc = json.loads(SWEEP.read_text())
    edit(doc)
    f = tmp_path / "bad.json"
    f.write_text(preamble + json.dumps(doc, indent=2))
    return f


def _fails(f: Path, expected: str, cmd=("io",)) -> None:
    r = runner.invoke(app, [*cmd, str(f)])
    assert r.exit_code == 1, r.output
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert lines == [f"densim: error: {f}:{expected}"], r.output


def test_bad_fio_files_name_the_file_and_the_json_path(tmp_path):
    def drop_iops(d):
        del d["jobs"][1]["read"]["iops"]

    _fails(_mutated(tmp_path, drop_iops), "jobs[1].read.iops: missing")

    def text_iops(d):
        d["jobs"][2]["read"]["iops"] = "fast"

    _fails(_mutated(tmp_path, text_iops, "fio-3.28\n"), "jobs[2].read.iops: expected a number, got 'fast'")

    def split_bs(d):
        d["jobs"][0]["job options"]["bs"] = "4k,64k"

    _fails(_mutated(tmp_path, split_bs), 'jobs[0]["job options"].bs: separate read/write block sizes (4k,64k) are not one point of a profile')

    def failed_job(d):
        d["jobs"][3]["error"] = 5

    _fails(_mutated(tmp_path, failed_job), "jobs[3].error: fio reported error 5 for job 'randread-4k-qd64'")

    def same_group(d):
        d["jobs"][4]["groupid"] = 0

    _fails(_mutated(tmp_path, same_group), "jobs[4]: ran at the same time as jobs[0] (same groupid) with rw=randwrite bs=4096 against "
                                           "rw=randread bs=4096: not one point of a profile (separate them with stonewall)")

    def fio2(d):
        sec = d["jobs"][0]["read"]
        del sec["lat_ns"], sec["clat_ns"]
        sec["lat"] = {"mean": 80.0}

    _fails(_mutated(tmp_path, fio2), "jobs[0].read.lat: fio 2.x output (latencies in microseconds under 'lat'); densim reads fio 3.x JSON")

    def no_jobs(d):
        d["jobs"] = []

    _fails(_mutated(tmp_path, no_jobs), "jobs: empty: the run has no jobs", cmd=("calibrate", "--device", "intel-dc-p4600-1.6tb"))


def test_broken_json_after_the_preamble_gives_its_line(tmp_path):
    f = tmp_path / "cut.json"
    f.write_text("fio-3.28\nnote: both iodepth >= 1 and synchronous I/O engine are selected, queue depth will be capped at 1\n"
                 '{\n  "fio version" : "fio-3.28",\n  "jobs" : [\n')
    r = runner.invoke(app, ["io", str(f)])
    assert r.exit_code == 1
    assert r.output.strip().startswith(f"densim: error: {f}:line 6 column 1: invalid JSON") and "Traceback" not in r.output
    f.write_text("fio-3.28\nfio: pid=1, err=2/file:filesetup.c:  No such file or directory\n")
    r = runner.invoke(app, ["io", str(f)])
    assert r.exit_code == 1
    assert r.output.strip() == f"densim: error: {f}: no JSON object found (expected the output of fio --output-format=json)"


def test_unknown_device_is_one_line(tmp_path):
    r = runner.invoke(app, ["calibrate", str(SWEEP), "--device", "no-such-ssd"])
    assert r.exit_code == 1 and r.output.startswith("densim: error: --device: no device named 'no-such-ssd' in the catalog; known: ")


def test_reader_errors_are_input_errors():
    with pytest.raises(InputError):
        read_fio(FIX / "does-not-exist.json")


def test_a_fifo_is_not_opened_to_look_for_fio(tmp_path):
    # opening a FIFO for reading blocks until a writer comes: the sniffing must not open it (the fuzz
    # harness found `densim io FIFO` hanging); the loader then refuses it in one line
    import os

    from densim.models.storage.fio import looks_like_fio

    fifo = tmp_path / "io.yaml"
    os.mkfifo(fifo)
    assert looks_like_fio(fifo) is False
