"""Time remaining (issue 17): fitted growth, what-if growth, simulated crossing dates.

The headline check is a closed form: a resource growing linearly, ``y(t) = y0 + b t``, crosses a fixed
capacity ``C`` at ``t* = (C - y0) / b``; the forecast's median crossing date must be within one period of it.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from scipy.optimize import brentq
from typer.testing import CliRunner

from densim.cli.main import app
from densim.errors import InputError
from densim.spec.forecast import CurrentHosts, ForecastSpec, GrowthSpec
from densim.tools.plan.capacity import host_type_of
from densim.tools.plan.forecast import (DAYS_PER_MONTH, Cluster, History, cluster_ready_pct, fit_resource, growth_added,
                                        read_cluster_history, time_remaining)

GIB = 2.0**30
ROOT = Path(__file__).resolve().parents[2]
START = np.datetime64("2026-01-01")
CPU = {"sockets": 2, "cores_per_socket": 16, "base_clock": 2400, "smt_gain": 1.25}


def _cluster(hosts=4, mem_gib=400.0) -> tuple[CurrentHosts, Cluster]:
    cur = CurrentHosts(hosts=hosts, cpu=CPU, memory=mem_gib * GIB)
    return cur, Cluster("current", host_type_of(cur), hosts)


def _linear_history(n=120, seed=1) -> History:
    """Memory 1000 + 2 t GiB (noise sd 0.5 GiB); vCPUs 400 + t; CPU demand 30 % of the vCPUs' 2,400 MHz (noise sd 300 MHz)."""
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    vcpus = 400.0 + t
    return History(dates=START + t.astype("timedelta64[D]"), period="day", vcpus=vcpus,
                   cpu_mhz=0.3 * 2400 * vcpus + rng.normal(0, 300, n), mem_bytes=(1000 + 2 * t + rng.normal(0, 0.5, n)) * GIB)


def _days(date: str) -> float:
    return float((np.datetime64(date) - START).astype(int))


def test_linear_growth_crossing_date_within_one_step_of_the_closed_form():
    cur, c = _cluster(hosts=4, mem_gib=400.0)
    spec = ForecastSpec(current=cur, replications=200, seed=5, horizon_days=400)
    tr = time_remaining(_linear_history(), spec, [c])
    mem = tr["clusters"][0]["memory"]
    # memory: 4 hosts x 400 GiB = 1600 GiB; 1000 + 2 t = 1600 at t* = 300 days after 2026-01-01 (2026-10-28)
    assert mem["status"] == "crosses" and mem["p_cross"] == 1.0
    assert abs(_days(mem["date_median"]) - 300.0) <= 1.0
    assert _days(mem["date_lo"]) - 1 <= 300.0 <= _days(mem["date_hi"]) + 1
    # CPU Ready: n = (400 + t) / 4 vCPUs per host, each busy u = 0.3, against C = 32 cores x 1.25 = 40;
    # the same ready function, solved for the continuous t where it equals 5 %
    t_star = brentq(lambda t: float(cluster_ready_pct(c, np.array([400.0 + t]), np.array([0.3 * 2400 * (400 + t)]))[0]) - 5.0, 0, 400)
    ready = tr["clusters"][0]["cpu_ready"]
    assert ready["status"] == "crosses"
    assert abs(_days(ready["date_median"]) - t_star) <= 1.0, (ready, t_star)
    # the fitted trend is the known slope (2 GiB a day) to 1 %
    assert tr["fits"]["mem_bytes"]["slope_per_period"] / GIB == pytest.approx(2.0, rel=0.01)
    assert "between" in tr["clusters"][0]["headline"]


def test_not_within_horizon_is_said_honestly():
    cur, c = _cluster(hosts=40, mem_gib=1024.0)  # 40 TiB: 1000 + 2 t GiB needs 20,000 days
    tr = time_remaining(_linear_history(), ForecastSpec(current=cur, replications=50, horizon_days=365), [c])
    mem = tr["clusters"][0]["memory"]
    assert mem["status"] == "not within horizon" and mem["p_cross"] == 0.0 and mem["date_median"] is None
    assert "not within the horizon" in mem["text"]


def test_weekly_season_is_found_and_kept_in_the_forecast():
    # weekdays 20 % above weekends (x 1.1 vs x 0.9 around a level of 1000 + 3 t), noise sd 5
    rng = np.random.default_rng(3)
    t = np.arange(84)
    season = np.where(((START + t.astype("timedelta64[D]") - np.datetime64("1970-01-05")).astype(int) % 7) >= 5, 0.9, 1.1)
    y = (1000 + 3 * t) * season + rng.normal(0, 5, t.size)
    f = fit_resource("cpu_mhz", y, ForecastSpec(), "day")
    assert f.model == "AAA" and f.aicc < f.aicc_other
    sims = f.simulate(14, 200, np.random.default_rng(0))
    med = np.median(sims, axis=1)
    fut = START + (84 + np.arange(14)).astype("timedelta64[D]")
    wkend = ((fut - np.datetime64("1970-01-05")).astype(int) % 7) >= 5
    # weekday / weekend ratio of the median path: 1.1 / 0.9 = 1.222 (within 3 %)
    assert med[~wkend].mean() / med[wkend].mean() == pytest.approx(1.1 / 0.9, rel=0.03)
    # pure noise around a trend: the season does not pay for its 6 extra parameters
    g = fit_resource("cpu_mhz", 1000 + 3 * t + rng.normal(0, 5, t.size), ForecastSpec(), "day")
    assert g.model == "AAN"


def test_same_seed_same_result_other_seed_other_paths():
    cur, c = _cluster()
    h = _linear_history()
    a = time_remaining(h, ForecastSpec(current=cur, replications=50, seed=11), [c])
    b = time_remaining(h, ForecastSpec(current=cur, replications=50, seed=11), [c])
    d = time_remaining(h, ForecastSpec(current=cur, replications=50, seed=12), [c])
    assert json.dumps(a) == json.dumps(b)
    assert a["clusters"][0]["memory"]["path_frac"] != d["clusters"][0]["memory"]["path_frac"]


def test_what_if_growth_by_hand():
    g = GrowthSpec(vms_per_month=5, vm={"vcpus": 2, "cpu_demand": 500, "memory_used": "4 GiB"},
                   projects=[{"name": "erp", "date": "2026-02-15", "vms": 20, "vm": {"vcpus": 8, "cpu_demand": 1000, "memory_used": "16 GiB"}}])
    dates = START + np.array([0, 30, 31, 45, 61, 91]).astype("timedelta64[D]")
    add = growth_added(dates, g, None, START)
    # monthly: floor(5 x days / 30.4375): day 0 -> 0, 30 -> floor(4.93) = 4, 31 -> floor(5.09) = 5, 45 -> floor(7.39) = 7,
    # 61 -> floor(10.02) = 10, 91 -> floor(14.95) = 14; the project adds 20 from 2026-02-15 (day 45) on
    monthly = np.array([0, 4, 5, 7, 10, 14])
    assert np.floor(5 * 61 / DAYS_PER_MONTH) == 10
    proj = np.array([0, 0, 0, 20, 20, 20])
    np.testing.assert_array_equal(add["vms"], monthly + proj)
    np.testing.assert_array_equal(add["vcpus"], 2 * monthly + 8 * proj)
    np.testing.assert_array_equal(add["cpu_mhz"], 500 * monthly + 1000 * proj)
    np.testing.assert_array_equal(add["mem_bytes"] / GIB, 4 * monthly + 16 * proj)


def test_what_if_moves_the_crossing_earlier_by_the_arithmetic():
    # +60 GiB a month of added VMs (15 VMs x 4 GiB) on top of 2 GiB a day: (2 + 60 / 30.4375) GiB a day from the first
    # forecast day (t = 120, 1240 GiB): 1600 - 1240 = 360 GiB at 3.971 GiB/day -> t* = 120 + 90.7 = 210.7 (steps of 4 VMs
    # make the added memory lag the ramp by up to one VM's 4 GiB: at most one more day)
    cur, c = _cluster()
    g = GrowthSpec(vms_per_month=15, vm={"vcpus": 1, "cpu_demand": 0, "memory_used": "4 GiB"})
    tr = time_remaining(_linear_history(), ForecastSpec(current=cur, replications=100, growth=g), [c])
    med = _days(tr["clusters"][0]["memory"]["date_median"])
    assert 209.0 <= med <= 213.0


# --------------------------------------------------------------------------------------------- CLI and bad input


def _write_history(path: Path, h: History) -> Path:
    lines = ["date,vms,vcpus,cpu_used_mhz,mem_used_gib"]
    lines += [f"{d},{v / 4:.2f},{v:.0f},{c:.1f},{m / GIB:.3f}" for d, v, c, m in zip(h.dates, h.vcpus, h.cpu_mhz, h.mem_bytes)]
    path.write_text("\n".join(lines) + "\n")
    return path


def _spec_file(tmp_path: Path, **extra) -> Path:
    doc = {"forecast": {"replications": 50, "current": {"hosts": 4, "cpu": CPU, "memory": "400 GiB"}, **extra}}
    p = tmp_path / "forecast.yaml"
    p.write_text(yaml.safe_dump(doc))
    return p


def test_cli_writes_json_and_report(tmp_path):
    hist = _write_history(tmp_path / "h.csv", _linear_history())
    r = CliRunner().invoke(app, ["forecast", str(hist), "--spec", str(_spec_file(tmp_path)), "--out", str(tmp_path / "o"),
                                 "--json", "--project", "erp:2026-06-01:10"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["growth"]["projects"][0]["vms"] == 10
    # no growth.vm: the project's VMs are the history's mean VM over its last 7 days (vCPUs / VMs = 4)
    assert doc["growth"]["projects"][0]["vm"]["vcpus"] == 4 and doc["growth"]["added_at_horizon"]["vcpus"] == 40
    html = (tmp_path / "o" / "report.html").read_text()
    assert 'id="time-remaining"' in html and doc["clusters"][0]["headline"].split(";")[0] in html.replace("&#39;", "'")
    assert json.loads((tmp_path / "o" / "summary.json").read_text())["seed"] == 42  # densim.rng.DEFAULT_SEED


@pytest.mark.parametrize("content, where", [
    ("date,vcpus,cpu_used_mhz\n2026-01-01,4,100\nnot-a-date,4,100\n", "row 3, date"),
    ("date,vcpus,cpu_used_mhz,colour\n2026-01-01,4,100,red\n", "unknown column 'colour'"),
    ("date,cpu_used_mhz\n2026-01-01,100\n", "needs 'vcpus'"),
    ("date,vcpus,cpu_used_mhz\n2026-01-01,4,100\n2026-01-03,4,-5\n", "row 3, cpu_used_mhz"),
    ("date,vcpus,cpu_used_mhz\n2026-01-01,4,100\n2026-01-03,4,100\n", "gap"),
    ("date,vcpus,cpu_used_mhz\n2026-01-01,4,100\n2026-01-02,4,100\n", "at least forecast.min_periods = 10"),
])
def test_bad_history_is_one_line_naming_file_and_place(tmp_path, content, where):
    p = tmp_path / "bad.csv"
    p.write_text(content)
    r = CliRunner().invoke(app, ["forecast", str(p), "--spec", str(_spec_file(tmp_path)), "--out", str(tmp_path / "o"),
                                 "--format", "cluster-history"])
    assert r.exit_code == 1
    err = r.stderr.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in r.output
    assert where in err and "bad.csv" in err


def test_bad_spec_and_missing_hosts_are_one_line(tmp_path):
    hist = _write_history(tmp_path / "h.csv", _linear_history())
    bad = _spec_file(tmp_path, replications=3)
    r = CliRunner().invoke(app, ["forecast", str(hist), "--spec", str(bad), "--out", str(tmp_path / "o")])
    assert r.exit_code == 1 and "forecast.replications" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    r = CliRunner().invoke(app, ["forecast", str(hist), "--out", str(tmp_path / "o")])
    assert r.exit_code == 1 and "forecast.current" in r.stderr
    r = CliRunner().invoke(app, ["forecast", str(hist), "--spec", str(_spec_file(tmp_path)), "--project", "erp:2026-13-01:5"])
    assert r.exit_code == 1 and "--project" in r.stderr
    with pytest.raises(InputError, match="vms_per_month needs the added VM's size"):
        growth_added(START + np.arange(3).astype("timedelta64[D]"), GrowthSpec(vms_per_month=2), None, START)


def test_read_cluster_history_reduces_rows_to_the_daily_max(tmp_path):
    p = tmp_path / "h.csv"
    p.write_text("date,vms,vcpus,cpu_used_mhz\n2026-01-01T08:00,10,40,100\n2026-01-01T14:00,10,40,300\n2026-01-02,11,44,200\n")
    h = read_cluster_history(p)
    assert h.n == 2 and h.cpu_mhz.tolist() == [300.0, 200.0] and h.vms.tolist() == [10.0, 11.0]


# --------------------------------------------------------------------------------------------- the plan hook


def test_plan_writes_time_remaining_for_the_recommended_hosts(tmp_path):
    # 6 VMs x 28 days hourly; each VM's demand grows 1 % a day, memory in use 0.02 GiB a day
    n_vm, steps = 6, 28 * 24
    t0 = 1_780_000_000 - 1_780_000_000 % 86400  # a midnight (2026-05-28 UTC)
    rng = np.random.default_rng(4)
    hours = np.arange(steps)
    rows = ["vm,time [s],vcpus,vcpu_speed [MHz],memory [GiB],cpu_used [MHz],memory_used [GiB]"]
    for j in range(n_vm):
        cpu = 2400 * (0.5 + 0.005 * hours / 24 * 2) * (1 + 0.05 * rng.standard_normal(steps))
        mem = 4 + 0.02 * hours / 24 + 0.01 * rng.standard_normal(steps)
        rows += [f"vm{j},{t0 + 3600 * h},4,2400,16,{c:.1f},{m:.3f}" for h, c, m in zip(hours, cpu, mem)]
    inv = tmp_path / "inv.csv"
    inv.write_text("\n".join(rows) + "\n")
    cand = {"qos": {"cpu_ready_pct": 5.0}, "windows": 48,
            "forecast": {"replications": 50, "horizon_days": 730},
            "candidates": [{"name": "small", "cpu": CPU, "memory": "128 GiB", "price_usd": 10000,
                            "power": {"model": "linear", "idle": "100 W", "peak": "300 W"}}]}
    cf = tmp_path / "c.yaml"
    cf.write_text(yaml.safe_dump(cand))
    r = CliRunner().invoke(app, ["plan", str(inv), "--candidates", str(cf), "--out", str(tmp_path / "o")])
    assert r.exit_code == 0, r.output
    tr = json.loads((tmp_path / "o" / "summary.json").read_text())["time_remaining"]
    assert tr["history"]["periods"] == 28 and tr["clusters"][0]["name"].endswith("(this plan)")
    # memory in use: 6 VMs x 0.02 GiB a day on 24 GiB (6 x 4 GiB): far below 1 host's 128 GiB within two years
    assert tr["clusters"][0]["memory"]["status"] == "not within horizon"
    assert tr["fits"]["mem_bytes"]["slope_per_period"] / GIB == pytest.approx(6 * 0.02, rel=0.15)
