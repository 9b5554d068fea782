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
    # at $350 per core-year: 32 x 350 = $11,200 per host-year
    row = fleet_licences(vcf, n_hosts=1, sockets=2, cores_per_socket=12, vm_vcpus=[], years=4)
    assert row["units"] == 32 and row["usd_per_year"] == 32 * 350 == 11_200
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
