"""The page's B - A never shows a run that leaves VMs out as an improvement: a warning instead of bold."""

from __future__ import annotations

import pytest

from densim.tools.serve.view import compare

from .conftest import wait_done


def _view(energy: float, unplaced: int) -> dict:
    return {"headline": [{"key": "energy_kwh", "label": "energy", "value": energy, "text": f"{energy:g} kWh"},
                         {"key": "vms_unplaced", "label": "VMs unplaced", "value": unplaced, "text": f"{unplaced:,}"}]}


def test_b_that_leaves_vms_out_gets_a_warning_not_an_improvement():
    # B: 535 kWh less, because it left 2,000 VMs unplaced
    d = compare(_view(1000.0, 0), _view(465.0, 2000))
    assert d["warning"].startswith("B leaves 2,000 VMs unplaced: infeasible")
    energy = d["headline"][0]
    assert energy["delta"] == -535.0 and energy["comparable"] is False  # shown, but not in bold as a change
    assert d["headline"][1] == {"key": "vms_unplaced", "label": "VMs unplaced", "a": "0", "b": "2,000", "delta": 2000,
                                "comparable": True}


def test_a_that_leaves_vms_out_is_named_too_and_both_placed_is_comparable():
    assert compare(_view(465.0, 1), _view(1000.0, 0))["warning"].startswith("A leaves 1 VM unplaced")
    d = compare(_view(1000.0, 0), _view(900.0, 0))
    assert d["warning"] is None and all(h["comparable"] for h in d["headline"])


def test_a_headline_without_vms_unplaced_is_an_error_not_a_silent_zero():
    with pytest.raises(KeyError):
        compare({"headline": []}, _view(1.0, 0))


def run(client, edits=None, slot="a"):
    return client.post("/api/run", json={"source": "given", "edits": edits or {}, "slot": slot})


def test_diff_api_warns_when_b_leaves_vms_unplaced(client):
    # micro: hosts of 8 GiB, VMs of 4 GiB. memory_overcommit 0.5 -> 4 GiB per host -> 1 VM per host:
    # 4 hosts place 4 of the 8 VMs, 4 unplaced; B uses less energy only because half the VMs do not run
    ka = run(client, slot="a").json()["key"]
    kb = run(client, {"placement.memory_overcommit": "0.5"}, slot="b").json()["key"]
    wait_done(client, ka), wait_done(client, kb)
    d = client.get(f"/api/diff?a={ka}&b={kb}").json()
    assert d["warning"].startswith("B leaves 4 VMs unplaced")
    rows = {h["key"]: h for h in d["headline"]}
    assert rows["vms_unplaced"]["delta"] == 4 and rows["vms_unplaced"]["comparable"]
    assert rows["energy_kwh"]["delta"] < 0 and rows["energy_kwh"]["comparable"] is False
