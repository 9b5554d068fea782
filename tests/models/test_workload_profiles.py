"""Workload profiles (catalog ``workload_profiles``): rates -> model inputs, by hand.

Each test works one profile's figures through the arithmetic the docs page states
(docs/background/workload-profiles.md) and checks the model inputs come out the same.
"""

from __future__ import annotations

import pytest

from densim.catalog.core import builtin_catalog, part_schemas
from densim.errors import InputError
from densim.models.numa import NumaSpec
from densim.models.requests import PathCosts, visit_cycles
from densim.models.virtualization import ExitCosts, IoPath, ShadowPaging, TlbSpec, shadow_sync_cycles_per_kinstr
from densim.catalog.profiles import expand_tile_visit as expand_visit, load_profile
from densim.models.workload_profiles import PROFILES, RATE_FIELDS

CLASSES = ("oltp-database", "web-app", "vdi", "analytics-batch", "mail", "file-server", "in-memory-cache")


def test_the_seven_classes_are_in_the_catalog_and_the_registry():
    assert set(CLASSES) <= set(builtin_catalog().names("workload_profiles"))
    assert set(CLASSES) <= set(PROFILES.names())  # what `densim models` lists
    assert part_schemas()["workload_profiles"][0] == "workload profile"


@pytest.mark.parametrize("name", CLASSES)
def test_every_figure_of_every_profile_has_a_source(name):
    p = load_profile(name)
    for f in RATE_FIELDS:
        assert p.sources[f].strip(), (name, f)


def test_oltp_rates_turn_into_the_visit_as_the_arithmetic_says():
    # oltp-database: 3.8 M instructions, 4 I/Os, 4 packets, 4,000 bytes per transaction.
    # Two transactions per visit: 7.6 M instructions (instructions_m 7.6), 8 disk I/Os, 8 packets,
    # 8,000 bytes; per-1,000-instruction rates and CPI are rates, copied unchanged.
    v = load_profile("oltp-database").visit("db", requests=2)
    assert v.vm == "db"
    assert v.instructions_m == pytest.approx(7.6)
    assert (v.disk_ios, v.packets, v.net_bytes) == pytest.approx((8.0, 8.0, 8000.0))
    assert (v.cpi_core, v.llc_mpki, v.tlb_mpki_4k) == (1.0, 10.0, 3.0)
    assert (v.pt_updates_per_kinstr, v.context_switches_per_kinstr) == (0.1, 0.0037)
    assert v.disk_read_fraction == 0.7 and v.guest_large_fraction == 0.6


def test_oltp_page_table_intensity_reaches_the_shadow_paging_cycles():
    # Under shadow paging visit_cycles adds the sync cost S (cycles per 1,000 instructions) to the
    # CPI: vCPU cycles grow by instructions x S / 1000. With pt updates and switches at 0 the sync
    # cost is 0, so the difference of the two runs is exactly 3.8e6 x S / 1000.
    cat = builtin_catalog()
    exits = cat.get("virt_exit_costs", "kvm-westmere", ExitCosts)
    shadow = cat.get("virt_shadow_paging", "kvm-shadow", ShadowPaging)
    native = cat.get("virt_io_paths", "native", IoPath)
    tlb = TlbSpec(name="t", entries_4k=512, entries_2m=32, leaf_ref_cycles=40, upper_ref_cycles=5)
    numa = NumaSpec(local_cycles=190, remote_cycles=310, stall_fraction=0.5)
    costs = PathCosts(exits=exits, network=native, storage=native, tlb=tlb, numa=numa, paging="shadow",
                      host_hugepages=False, guest_large_pages=True, shadow=shadow)
    p = load_profile("oltp-database")
    with_sync, _ = visit_cycles(p.visit("db"), costs, 0.0, vcpus=2, vms_on_host=1)
    quiet = p.visit("db").model_copy(update={"pt_updates_per_kinstr": 0.0, "context_switches_per_kinstr": 0.0})
    without, _ = visit_cycles(quiet, costs, 0.0, vcpus=2, vms_on_host=1)
    s = float(shadow_sync_cycles_per_kinstr(0.1, 0.0037, exits, shadow, vcpus=2, vms_on_host=1))
    assert s > 0
    assert with_sync - without == pytest.approx(3.8e6 * s / 1000.0)


def test_oltp_rates_follow_from_the_cited_hammerdb_run():
    # The profile's instructions, switches and dirty rate are derived (sources text) from Callaghan's
    # HammerDB TPROC-C run on Postgres 18.1, 2000 warehouses, 40 users, 48-core EPYC 9454P:
    # NOPM 303,403; vmstat us+sy 28.3 %, cs 166,257/s; iostat 1267.8 MB/s written.
    # HammerDB runs New-Order for 10 of 23 transactions: 303,403 x 2.3 / 60 = 11,630 transactions/s.
    # Busy cores 0.283 x 48 = 13.584; at 3.275 GHz and IPC 1.0: 4.449e10 instructions/s
    # -> 3.83e6 per transaction; 166,257 / 4.449e10 x 1000 = 0.00374 switches per 1,000 instructions;
    # 1267.8 MB/s / 13.584 busy cores = 93.3 MB/s per busy vCPU.
    p = load_profile("oltp-database")
    tps = 303_403 * 23 / 10 / 60
    ips = 0.283 * 48 * 3.275e9 * 1.0
    assert tps == pytest.approx(11_630, abs=1)
    assert p.instructions_per_request == pytest.approx(ips / tps, rel=0.01)
    assert p.context_switches_per_kinstr == pytest.approx(166_257 / ips * 1000, rel=0.02)
    assert p.cpi_core == 1.0  # the IPC the conversion used
    assert float(p.dirty_rate_per_vcpu) == pytest.approx(1267.8e6 / (0.283 * 48), rel=0.01)


def test_io_dirty_rate_and_memory_shares_by_hand():
    p = load_profile("oltp-database")
    # 100 transactions/s x 4 I/Os = 400 IOPS; x 8 KiB = 3,276,800 B/s
    assert float(p.iops(100)) == pytest.approx(400.0)
    assert float(p.io_bytes_per_s(100)) == pytest.approx(400 * 8192)
    # 1.5 busy vCPUs x 93 MB/s = 139.5 MB/s dirtied (pre-copy migration's dirty_rate_bps)
    assert float(p.dirty_rate_bps(1.5)) == pytest.approx(139.5e6)
    # 8 GiB VM: 0.9 active = 7.2 GiB; 0.05 identical = 0.4 GiB
    gib = 1024.0**3
    assert float(p.active_bytes(8 * gib)) == pytest.approx(7.2 * gib)
    assert float(p.identical_bytes(8 * gib)) == pytest.approx(0.4 * gib)


def test_mail_ios_per_message_is_the_sourced_iops_per_mailbox_over_the_day():
    # 0.18 IOPS per mailbox (150 messages/day) x 28,800 s / 150 messages = 34.56 I/Os per message;
    # a mailbox sending+receiving 150 messages in 8 hours (150 / 28,800 per s) gives back 0.18 IOPS
    p = load_profile("mail")
    assert p.ios_per_request == pytest.approx(0.18 * 28800 / 150)
    assert float(p.iops(150 / 28800)) == pytest.approx(0.18)


def test_a_tile_visit_naming_a_profile_is_filled_and_explicit_fields_win():
    v = expand_visit({"vm": "db", "profile": "oltp-database", "requests": 2, "disk_ios": 1.0})
    assert v["instructions_m"] == pytest.approx(7.6) and v["disk_ios"] == 1.0 and v["cpi_core"] == 1.0
    assert "profile" not in v and "requests" not in v
    plain = {"vm": "db", "instructions_m": 9.6}
    assert expand_visit(plain) is plain


def test_the_builtin_tile_is_unchanged_by_the_hook():
    from densim.tools.tiles.core import builtin_tile

    db = [v for c in builtin_tile().classes for v in c.visits if v.vm == "db"][0]
    assert (db.instructions_m, db.llc_mpki, db.pt_updates_per_kinstr) == (9.6, 12.0, 0.02)


def _layered(**change):
    cat = builtin_catalog()
    raw = dict(cat.raw("workload_profiles", "mail"))
    raw["sources"] = dict(raw["sources"])
    raw["name"] = "bad"
    for k, v in change.items():
        if k == "drop_source":
            raw["sources"].pop(v)
        elif k == "extra_source":
            raw["sources"][v] = "x"
        else:
            raw[k] = v
    return cat.layered({"workload_profiles": [raw]})


def test_a_figure_without_a_source_is_refused_in_one_line_naming_it():
    with pytest.raises(InputError, match=r"^catalog:workload_profiles\.bad: sources\.llc_mpki is missing") as e:
        load_profile("bad", _layered(drop_source="llc_mpki"))
    assert "\n" not in str(e.value)


def test_a_bad_figure_is_refused_naming_the_field():
    with pytest.raises(InputError, match=r"workload_profiles\.bad\.cpi_core: Input should be greater than 0"):
        load_profile("bad", _layered(cpi_core=-1))
    with pytest.raises(InputError, match=r"workload_profiles\.bad\.io_read_fraction"):
        load_profile("bad", _layered(io_read_fraction=1.5))


def test_a_source_for_no_figure_and_an_unknown_profile_are_refused():
    with pytest.raises(InputError, match=r"sources\.cpi names no figure"):
        load_profile("bad", _layered(extra_source="cpi"))
    with pytest.raises(InputError, match=r"no workload_profile named 'nope'.*oltp-database"):
        load_profile("nope")


def test_the_oltp_profile_moves_the_npt_what_if_the_way_its_rates_say():
    # The profile's transaction writes page tables 5x as often per instruction as the catalog db
    # visit (0.1 against 0.02, (E)), switches about as often (0.0037 measured against 0.005), and
    # does 4 I/Os per 3.8 M instructions instead of 1 per 9.6 M: shadow paging and emulated I/O
    # weigh more, so NPT over shadow and NPT+PV over the fully virtualized guest both rise above
    # the db visit's (the study's own rows are not changed: what-if only).
    from densim.tools.studies import val_npt_oltp as s

    base = {k: 1.0 / s.cycles(k)["total_cycles"] for k in s.CONFIGS}
    fv, npt = base["fully virtualized (shadow, emulated I/O)"], base["nested paging, emulated I/O"]
    r = s.profile_ratios("oltp-database")
    assert r["npt_over_shadow"] > npt / fv
    assert r["npt_pv_over_fv"] > base["nested paging + PV drivers"] / fv


def test_densim_models_lists_the_profiles_in_a_fresh_process():
    # `densim models` imports the catalog profiles itself (a fresh interpreter, nothing else imported)
    import json
    import subprocess
    import sys

    code = "import sys; from densim.cli.main import main; sys.argv = ['densim', 'models', '--json']; main()"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    rows = [r for r in json.loads(out.stdout) if r["kind"] == "workload-profile"]
    assert {r["name"] for r in rows} == set(CLASSES)
    assert all("figures cited" in r["source"] for r in rows)
