"""Leave-one-out cross-validation of the older studies' fits (issue 15)."""

from __future__ import annotations

import math

import pytest

from densim.tools.studies import crossval as C


def test_swap_sql_each_fold_fits_its_two_devices_exactly_and_the_sata_fold_is_the_catalog_fit():
    from densim.tools.studies import swap_device_sql as S

    rows = C.swap_sql_loo()
    assert [r["left_out"] for r in rows] == [f"swap on {k}" for k in S.DEVICES]
    for r in rows:
        assert r["fit"]["max_fit_residual"] < 1e-6, r
        assert r["error"] == pytest.approx(r["predicted"] / r["measured"] - 1)
    sata = rows[2]
    # leaving SATA out is the catalog's own fit: 0.333 ms and 2,109 faults/s (memory.yaml, rounded
    # there), and the study's SATA prediction (13.36 %) up to that rounding
    assert sata["fit"]["fault_software_time_ms"] == pytest.approx(0.333, abs=5e-4)
    assert sata["fit"]["access_rate_per_s"] == pytest.approx(2109, rel=1e-3)
    assert sata["predicted"] == pytest.approx(100 * float(S.throughput("sata-7k2-2tb")["throughput"][0]), rel=1e-3)


def test_swap_sql_two_point_fit_by_hand_without_queueing():
    # X/X0 = 1/(1 + F (t_sw + t_dev)) at two devices gives F (t2 - t1) = 1/x2 - 1/x1 and
    # t_sw = (1/x1 - 1)/F - t1: the fit has one solution when t_sw comes out >= 0. Check the
    # algebra the least-squares fit relies on with the guide's numbers (§2.6.1): SSD 0.88, SAN 0.31
    a1, a2 = 1 / 0.88 - 1, 1 / 0.31 - 1
    assert a1 == pytest.approx(0.136, abs=1e-3) and a2 == pytest.approx(2.226, abs=1e-3)
    t1, t2 = 0.1e-3, 3.0e-3
    f = (a2 - a1) / (t2 - t1)
    t_sw = a1 / f - t1
    assert 1 / (1 + f * (t_sw + t1)) == pytest.approx(0.88) and 1 / (1 + f * (t_sw + t2)) == pytest.approx(0.31)


def test_host_swap_cache_folds_refit_the_parameter_the_kept_figure_pins():
    rows = {r["left_out"]: r for r in C.host_swap_cache_loo()}
    assert set(rows) == set(C.HSC_POINTS)
    ratio = rows["transactions SSD / SAN at 150 %"]
    r_eq = rows["R the SSD host tolerates at the SAN host's 125 % degradation"]
    assert ratio["fit"]["parameter"] == "active_fraction" and r_eq["fit"]["parameter"] == "access_rate_per_s"
    # each fit reproduces the figure it kept
    assert C._hsc_figures(active_fraction=ratio["fit"]["value"])["R the SSD host tolerates at the SAN host's 125 % degradation"] \
        == pytest.approx(1.5, abs=5e-3)
    assert C._hsc_figures(access_rate_per_s=r_eq["fit"]["value"])["transactions SSD / SAN at 150 %"] == pytest.approx(2.3, rel=1e-3)
    for r in rows.values():
        assert "optimistic" in r["note"]
        assert isinstance(r["fit"]["bounds_hold"], bool)


def test_host_swap_cache_equal_degradation_hardly_moves_with_the_access_rate():
    # why the equal-degradation point cannot pin the access rate: a 4x change in the rate moves it < 0.01
    lo = C._hsc_figures(access_rate_per_s=300.0)["R the SSD host tolerates at the SAN host's 125 % degradation"]
    hi = C._hsc_figures(access_rate_per_s=1200.0)["R the SSD host tolerates at the SAN host's 125 % degradation"]
    assert abs(hi - lo) < 0.01


def test_kvm_gains_at_catalog_values_are_the_study_steps():
    from densim.tools.studies.kvm_tuning import step_scores

    s = step_scores(42)
    g = C._kvm_gains(42)
    assert g["total"] == pytest.approx(s["+node binding (manual)"] / s["default"])
    assert g["+hugepages"] == pytest.approx(s["+hugepages"] / s["default"])
    assert g["total"] == pytest.approx(g["+hugepages"] * g["+SR-IOV"] * g["+node binding (manual)"])


def test_kvm_loo_picks_the_grid_point_closest_to_the_published_total(monkeypatch):
    # a separable stand-in: step k = 1 + b_k x scale_k, total = product. Leaving out step k, the fit
    # picks the grid scale whose total is closest to 1.54 and predicts that step there.
    base = {"+hugepages": 0.20, "+SR-IOV": 0.15, "+node binding (manual)": 0.12}
    arg = {"tlb": "+hugepages", "host_cycles": "+SR-IOV", "llc": "+node binding (manual)"}

    def fake(seed, **scales):
        g = {k: 1 + b * scales.get(next(a for a, s in arg.items() if s == k), 1.0) for k, b in base.items()}
        g["total"] = math.prod(g.values())
        return g

    monkeypatch.setattr(C, "_kvm_gains", fake)
    rows = C.kvm_tuning_loo()
    assert rows[0]["predicted"] == pytest.approx(1.2 * 1.15 * 1.12)  # total from the steps
    grid = [float(x) for x in __import__("numpy").geomspace(0.7, 1.5, 11)]
    for r, (step, b) in zip(rows[1:], base.items()):
        others = math.prod(1 + v for k, v in base.items() if k != step)
        best = min(grid, key=lambda x: (abs((1 + b * x) * others - 1.54), abs(math.log(x))))
        assert r["fit"]["scale"] == pytest.approx(best)
        assert r["predicted"] == pytest.approx(1 + b * best)


def test_cli_validation_shows_every_cross_validation_error(monkeypatch, traces):  # densim studies reads the traces
    import json

    from typer.testing import CliRunner

    from densim.cli.main import app

    fold = {"source": "s", "left_out": "swap on local SATA", "measured": 17.0, "predicted": 13.36, "error": 13.36 / 17 - 1,
            "unit": "%", "fit": {"fault_software_time_ms": 0.333, "access_rate_per_s": 2109.0}, "note": "exact fit"}
    monkeypatch.setattr(C, "all_loo", lambda seed=42: {"swap-device-sql": [fold]})
    res = CliRunner().invoke(app, ["studies", "--validation"])
    assert res.exit_code == 0, res.output
    assert "cross-validation" in res.output and "swap on local" in res.output and "-21.4 %" in res.output
    assert "SPECpower load levels" in res.output
    res = CliRunner().invoke(app, ["studies", "--validation", "--json"])
    doc = json.loads(res.output)
    assert doc["cross_validation"]["swap-device-sql"][0]["predicted"] == pytest.approx(13.36)
    assert set(doc["cross_validation"]["specpower"]) >= {"ibm-x3250-x3480"}
    assert not any(r["study"] == "val-live-migration" for r in doc["predictions"])  # calibration since issue 30
    assert any(r["study"] == "val-live-migration" and r["role"] == "calibration" for r in doc["not_predictions"])
