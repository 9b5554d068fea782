"""Study val-specpower-components (issue 30): the model choice rule, the leave-one-server-out folds and one
row by hand."""

from __future__ import annotations

import pytest

from densim.tools.studies import val_specpower_components as v


def _server(name):
    return next(s for s in v.servers() if s["name"] == name)


def test_twenty_servers_six_vendors_2008_to_2017():
    ss = v.servers()
    assert len(ss) == 20
    assert {s["vendor"] for s in ss} == {"Supermicro", "Fujitsu", "IBM", "HP", "Dell", "Huawei"}
    assert min(s["year"] for s in ss) == 2008 and max(s["year"] for s in ss) == 2017
    assert all(s["result"].startswith("https://www.spec.org/power_ssj2008/results/") for s in ss)


def test_the_rule_reads_the_cpu_not_the_curve():
    # Core 2 generation (no package C-state): a straight line; Nehalem and later: the component model
    assert v.choose_model(_server("supermicro-6025b-tr-2x5160"))[0] == "linear"
    assert v.choose_model(_server("hp-ml110-g4-xeon3040"))[0] == "linear"
    model, why = v.choose_model(_server("dell-r740-2s-2017"))
    assert model == "component" and "package C-states" in why


def test_a_row_by_hand_dell_r740_at_10_percent():
    # Dell R740: idle 52.3 W, peak 457 W; 2x Xeon Platinum 8180: 28 cores, top 3,150 MHz (half-way between 2.5
    # and 3.8 GHz), lowest 1,000 MHz; shape step_share 0.134, busy_target 0.926, v_floor 0.5. At u = 0.1:
    #   wanted clock 0.1 x 3150 / 0.926 = 340 MHz -> floor 1,000 MHz; busy b = 0.1 x 3150 / 1000 = 0.315
    #   x = 1000 / 3150 = 0.31746, V/V_top = 0.5 + 0.5 x 0.31746 = 0.65873, phi = 0.31746 x 0.65873^2 = 0.137754
    #   package awake 1 - 0.685^28 = 0.999975
    #   p = 0.134 x 0.999975 + 0.866 x 0.315 x 0.137754 = 0.133997 + 0.037578 = 0.171575
    #   P = 52.3 + 404.7 x 0.171575 = 121.74 W (published 129 W: -5.6 %; the straight line: 92.8 W, -28 %)
    p = v.curve(_server("dell-r740-2s-2017"), "component", 0.134, 0.926)
    assert p[1] == pytest.approx(121.74, abs=0.01)
    assert v.curve(_server("dell-r740-2s-2017"), "linear")[1] == pytest.approx(52.3 + 0.1 * 404.7)


def test_no_server_is_in_its_own_fit_and_the_table_gets_a_row_per_level():
    ev = v.evaluate()
    comp = sum(r["model"] == "component" for r in ev["servers"])
    for r in ev["servers"]:  # the fold leaves the predicted server out
        assert r["fold"]["fitted_on"] == (comp - 1 if r["model"] == "component" else comp)
        # the idle/full-load fit leaves it out too: the other servers of its CPU class
        same = sum(t["model"] == r["model"] for t in ev["servers"])
        assert r["ends_fold"]["fitted_on"] == same - 1
    s = v.run(__import__("pathlib").Path("."), 42)
    # 9 intermediate levels + active idle + 100 % per server, and idle + 100 % of the 7 results with only those
    assert len(s["headline"]) == 20 * 11 + 7 * 2 and all(h["role"] == "prediction" for h in s["headline"])
    # an idle/100 %-only result is predicted from every other server of its class (27 servers, all package C-state
    # but the 5 Core 2 ones: 15 + 7 - 1 = 21)
    assert all(r["ends_fold"]["fitted_on"] == 21 for r in ev["ends_only"])
    assert {r["year"] for r in ev["ends_only"]} >= {2018, 2020, 2022, 2023}
