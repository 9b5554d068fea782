"""Licensing rules that decide host choices: hand-checked unit counts and yearly costs."""

from __future__ import annotations

import numpy as np
import pytest

from densim.catalog.core import builtin_catalog
from densim.models.licensing import (
    LicenceProduct,
    cores_licensed_per_host,
    cores_licensed_per_vm,
    fleet_licences,
    licence_products,
    units_per_host,
    yearly_usd,
)

CAT = builtin_catalog()


def product(name: str) -> LicenceProduct:
    return licence_products(CAT)[name]


def test_worked_example_two_12_core_cpus_license_32_cores_under_16_per_cpu():
    # VMware Cloud Foundation: every CPU counts at least 16 cores.
    # 2 x 12-core CPUs -> max(12, 16) + max(12, 16) = 16 + 16 = 32 cores licensed (not 24)
    vcf = product("vmware-vcf")
    assert cores_licensed_per_host(vcf, [12, 12]) == 32
    # at $350 per core-year: 32 x 350 = $11,200 per host-year (three hosts: 96 cores, above the 72-core order minimum)
    row = fleet_licences(vcf, n_hosts=3, sockets=2, cores_per_socket=12, vm_vcpus=[], years=4)
    assert row["units"] == 96 and row["usd_per_year"] == 3 * 32 * 350 == 3 * 11_200
    # one host alone: an order is at least 72 cores (since 2025-04-10), so max(32, 72) = 72 cores = $25,200;
    # each VCF core includes 1 TiB of raw vSAN: 72 TiB
    one = fleet_licences(vcf, n_hosts=1, sockets=2, cores_per_socket=12, vm_vcpus=[], years=4)
    assert (one["units"], one["usd_per_year"], one["vsan_tib_included"]) == (72, 72 * 350, 72.0)
    # above the minimum every core counts: 2 x 24 -> 48; mixed 8 + 20 -> 16 + 20 = 36
    assert cores_licensed_per_host(vcf, [24, 24]) == 48
    assert cores_licensed_per_host(vcf, [8, 20]) == 36


def test_windows_datacenter_16_per_server_8_per_processor_2_core_packs():
    win = product("windows-server-2022-datacenter")
    assert cores_licensed_per_host(win, [4]) == 16       # 1 x 4: max(4, 8) = 8 per CPU, then 16 per server
    assert cores_licensed_per_host(win, [4, 4]) == 16    # 2 x 4: 8 + 8 = 16
    assert cores_licensed_per_host(win, [6, 6, 6, 6]) == 32  # 4 x 6: 8 x 4 = 32 (per-processor minimum)
    assert cores_licensed_per_host(win, [12, 12]) == 24  # 2 x 12: above both minimums, every core
    assert cores_licensed_per_host(win, [9]) == 16       # 1 x 9: 9 -> 16 per server
    # 2-core packs: a 1 x 17-core host -> 17 -> 18 cores (9 packs)
    assert cores_licensed_per_host(win, [17]) == 18
    # price: $6,155 per 16 cores, perpetual over 4 years: 24 cores = 1.5 x 6,155 = 9,232.5 / 4 = 2,308.125 per year
    assert yearly_usd(win, 24, years=4) == pytest.approx(1.5 * 6155 / 4)


def test_sql_server_per_vm_4_core_minimum_and_per_host():
    per_vm = product("sqlserver-2022-enterprise-per-vm")
    # VMs of 1, 2, 4, 5 and 8 vCPUs: max(v, 4) rounded up to 2-core packs = 4, 4, 4, 6, 8 -> 26 cores
    got = cores_licensed_per_vm(per_vm, [1, 2, 4, 5, 8])
    assert got.tolist() == [4, 4, 4, 6, 8]
    row = fleet_licences(per_vm, n_hosts=3, sockets=2, cores_per_socket=16, vm_vcpus=[1, 2, 4, 5, 8], years=4)
    # 26 cores x $15,123 / 2 = $196,599 perpetual, over 4 years = $49,149.75 a year; hosts do not matter
    assert row["units"] == 26 and row["vms"] == 5
    assert row["usd_per_year"] == pytest.approx(26 * 15123 / 2 / 4)
    per_host = product("sqlserver-2022-enterprise-per-host")
    # per host: all physical cores, >= 4 per CPU: 2 x 2-core CPUs -> 8; 2 x 16 -> 32
    assert cores_licensed_per_host(per_host, [2, 2]) == 8
    assert cores_licensed_per_host(per_host, [16, 16]) == 32


def test_per_socket_subscription_counts_socket_pairs():
    rhel = product("rhel-server-standard")
    assert units_per_host(rhel, 1) == 1  # a 1-socket host needs one pair
    assert units_per_host(rhel, 2) == 1
    assert units_per_host(rhel, 4) == 2
    row = fleet_licences(rhel, n_hosts=5, sockets=2, cores_per_socket=64, vm_vcpus=[], years=4)
    assert row["units"] == 5 and row["usd_per_year"] == 5 * rhel.price_usd  # cores do not matter
    assert rhel.price_status == "estimate"


def test_price_override_and_perpetual_support():
    p = LicenceProduct(name="x", rule="per_core", unit="core", min_cores_per_cpu=16, term="perpetual",
                       price_usd=1000, price_covers=2, support_fraction=0.25, price_status="estimate",
                       price_date="2024", source="test")
    # 2 x 12 -> 32 cores x $500 per core x (1/4 + 0.25) = 16,000 x 0.5 = 8,000 per year
    assert fleet_licences(p, n_hosts=1, sockets=2, cores_per_socket=12, vm_vcpus=[], years=4)["usd_per_year"] == 8000
    # a quoted $300 per core instead: 32 x 300 x 0.5 = 4,800
    assert fleet_licences(p, n_hosts=1, sockets=2, cores_per_socket=12, vm_vcpus=[], years=4,
                          unit_price_usd=300)["usd_per_year"] == 4800


def test_every_product_has_a_dated_sourced_price():
    prods = licence_products(CAT)
    assert {"vmware-vcf", "vmware-vvf", "windows-server-2022-datacenter", "sqlserver-2022-enterprise-per-vm",
            "rhel-server-standard"} <= set(prods)
    for p in prods.values():
        assert p.price_date and p.source and p.price_status in ("list", "estimate") and p.unit


def test_rule_fields_that_do_not_apply_are_refused():
    with pytest.raises(ValueError, match="min_cores_per_vm"):
        LicenceProduct(name="x", rule="per_core", unit="core", min_cores_per_vm=4, term="year", price_usd=1,
                       price_status="estimate", price_date="2024", source="t")
    with pytest.raises(ValueError, match="per_core"):
        cores_licensed_per_host(product("rhel-server-standard"), [8, 8])
    assert np.array_equal(cores_licensed_per_vm(product("sqlserver-2022-standard-per-vm"), []), [])


# ---------------------------------------------------------------------------------------------
# licences move the best host choice: a high-core and a low-core host, hand-checkable


def _flip_plan(licensing=None, carbon=None, cost_licences=()):
    from densim.spec.plan import PlanSpec
    from densim.tools.plan.capacity import plan
    from densim.workloads.inventory import Inventory

    # 48 VMs of 4 vCPUs and 4 GiB, no CPU series: placed by vCPUs (1 per core, no SMT) and memory only
    n = 48
    inv = Inventory(names=np.array([f"vm{i:02d}" for i in range(n)], dtype=object), vcpus=np.full(n, 4, dtype=np.int32),
                    vcpu_mhz=np.full(n, 2000.0), mem_bytes=np.full(n, 4 * 2.0**30), source="flip", fmt="generic")

    def cand(name, cores, price):
        return {"name": name, "cpu": {"sockets": 2, "cores_per_socket": cores, "threads_per_core": 1, "base_clock": "2 GHz"},
                "memory": "256 GiB", "power": {"model": "linear", "idle": "100 W", "peak": "300 W"}, "price_usd": price}

    spec = PlanSpec.model_validate({
        "qos": {"vcpus_per_core": 1.0},
        "cost": {"years": 4, "pue": 1.0, "price_per_kwh_usd": 0.0, "licences": list(cost_licences)},
        "candidates": [cand("hi 2x16", 16, 20_000), cand("lo 2x6", 6, 6_000)],
        "licensing": licensing, "carbon": carbon,
    })
    return inv, plan(inv, spec)


def test_licences_flip_the_best_host_from_low_core_to_high_core():
    # hi: 2 x 16 cores = 32 vCPU slots -> 8 VMs per host -> 6 hosts; lo: 2 x 6 = 12 -> 3 VMs -> 16 hosts.
    # hardware per year: hi 6 x 20,000 / 4 = 30,000 ($625 per VM); lo 16 x 6,000 / 4 = 24,000 ($500): lo wins.
    # vSphere Foundation, $135 per core-year, 16 cores per CPU minimum: both hosts license 32 cores.
    #   hi 6 x 32 x 135 = 25,920; lo 16 x 32 x 135 = 69,120
    #   with licences: hi 55,920 ($1,165 per VM); lo 93,120 ($1,940): hi wins.
    # what-if m: hi 30,000 + 25,920 m = lo 24,000 + 69,120 m at m = 6,000 / 43,200 = 0.1389
    from densim.tools.plan.report import summary_dict

    inv, res = _flip_plan({"products": ["vmware-vvf"], "what_if": [0.1, 0.5, 1.0, 2.0]})
    hosts = {r.name: r.n_hosts for r in res.results}
    assert hosts == {"hi 2x16": 6, "lo 2x6": 16}
    s = summary_dict(res)
    lic = s["licensing"]
    assert lic["best_without_licences"] == "lo 2x6" and lic["best_with_licences"] == "hi 2x16" == s["best"]
    assert lic["licences_change_best"]
    rows = {r["candidate"]: r for r in lic["candidates"]}
    assert rows["hi 2x16"]["licences"][0]["cores_per_host"] == 32 == rows["lo 2x6"]["licences"][0]["cores_per_host"]
    assert rows["hi 2x16"]["licences_usd_per_year"] == pytest.approx(25_920)
    assert rows["lo 2x6"]["licences_usd_per_year"] == pytest.approx(69_120)
    assert rows["hi 2x16"]["tco_per_vm_year_usd"] == pytest.approx(1_165)
    assert rows["lo 2x6"]["tco_per_vm_year_without_licences_usd"] == pytest.approx(500)
    assert [w["best"] for w in lic["what_if"]] == ["lo 2x6", "hi 2x16", "hi 2x16", "hi 2x16"]
    # m = 0.1: hi (30,000 + 2,592) / 48 = 679.0; lo (24,000 + 6,912) / 48 = 644.0
    assert lic["what_if"][0]["per_vm_year_usd"]["lo 2x6"] == pytest.approx(30_912 / 48)
    assert lic["break_even_multiplier"] == pytest.approx(6_000 / 43_200)


def test_a_quoted_price_and_a_per_socket_licence_keep_low_core_best():
    # RHEL per socket pair, given at $100 a year: hi 6 x 100 = 600, lo 16 x 100 = 1,600
    # hi 30,600 / 48 = 637.5 > lo 25,600 / 48 = 533.3: the cheap subscription leaves lo best
    from densim.tools.plan.report import summary_dict

    _, res = _flip_plan({"products": [{"product": "rhel-server-standard", "price_usd": 100}]})
    lic = summary_dict(res)["licensing"]
    assert lic["best_with_licences"] == lic["best_without_licences"] == "lo 2x6"
    assert not lic["licences_change_best"] and lic["break_even_multiplier"] is None
    assert lic["products"][0]["price_status"] == "given"
    rows = {r["candidate"]: r for r in lic["candidates"]}
    assert rows["lo 2x6"]["licences_usd_per_year"] == pytest.approx(1_600)


def test_per_vm_sql_licence_is_the_same_on_every_host_and_bad_names_fail():
    from densim.errors import InputError

    # SQL Server Enterprise per VM on vm0*: 10 VMs (vm00..vm09) x 4 cores = 40 cores x $7,561.5 / 4 years
    _, res = _flip_plan({"products": [{"product": "sqlserver-2022-enterprise-per-vm", "vms": "vm0*"}]})
    for r in res.results:
        row = r.tco["licences"][0]
        assert row["units"] == 40 and row["vms"] == 10
        assert row["usd_per_year"] == pytest.approx(40 * 15123 / 2 / 4)
    with pytest.raises(InputError, match=r"licensing.products\[0\].product.*no licensing_product named"):
        _flip_plan({"products": ["no-such-licence"]})
    with pytest.raises(InputError, match=r"licensing.products\[0\].vms.*matches no VM"):
        _flip_plan({"products": [{"product": "sqlserver-2022-standard-per-vm", "vms": "db*"}]})


def test_licensing_and_carbon_partials_render_the_summary():
    # the partials report.html includes ({% if licensing %} / {% if carbon %}) render the summary dicts
    import json

    from densim.reports import _env
    from densim.tools.plan.report import summary_dict

    _, res = _flip_plan({"products": ["vmware-vvf"], "what_if": [0.1, 1.0]},
                        carbon={"grid_gco2_per_kwh": 400, "embodied": {"hi 2x16": "dell-poweredge-r640", "lo 2x6": 1000}})
    s = json.loads(json.dumps(summary_dict(res)))  # as read back from summary.json
    html = _env().get_template("_licensing.html.j2").render(licensing=s["licensing"])
    assert "change the best host" in html and "lo 2x6" in html and "32 cores/host" in html
    assert "0.1389" in html  # break-even multiplier
    html = _env().get_template("_carbon.html.j2").render(carbon=s["carbon"])
    assert "Lowest total carbon per VM-year: <b>hi 2x16</b>" in html and "131.4" in html
