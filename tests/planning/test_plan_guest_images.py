"""densim plan with page sharing by guest image (``guest_images``): the memory check frees what the VMs' image
shares, as the engine's memory stage does (one arithmetic: densim.models.page_sharing.element_fractions), and the
chosen scenario carries each VM group's image."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from densim.errors import InputError
from densim.spec.plan import PlanSpec
from densim.tools.plan.capacity import plan
from densim.workloads.inventory import build_inventory

GIB = 2**30
N = 96


def _inventory():
    # 96 VMs of 1 vCPU at 2,000 MHz and 4 GiB, half busy, 12 hourly samples
    return build_inventory([f"vdi-{i:02d}" for i in range(N)], [1] * N, [2000.0] * N, [4 * GIB] * N,
                           cpu_mhz=np.full((12, N), 1000.0), step_s=3600.0, start_s=1_800_000_000.0)


def _spec(images: bool, **memory):
    # 2-socket hosts of 16 cores and 64 GiB, 4 vCPUs per core (64 VMs by CPU), memory over-commit up to 2 (32 VMs by
    # memory), the memory model with the tpch-hammerdb profile (85 % of guest memory active), slowdown bound 1.2
    d = {"qos": {"vcpus_per_core": 4, "memory_overcommit": 2.0, "memory_slowdown": 1.2},
         "memory": {"model": "vsphere-like", "inter_vm_sharing": True, "workload": "tpch-hammerdb", **memory},
         "cost": {"years": 4},
         "candidates": [{"name": "2s", "cpu": {"sockets": 2, "cores_per_socket": 8, "threads_per_core": 1,
                                               "base_clock": "2 GHz"},
                         "memory": "64 GiB", "hypervisor_memory": "0 GiB", "price_usd": 10000,
                         "power": {"model": "linear", "idle": "100 W", "peak": "300 W"}}]}
    if images:
        d["guest_images"] = [{"vms": "vdi-*", "image": "windows-desktop-idle"}]
    return PlanSpec.model_validate(d)


def test_one_image_lets_the_plan_buy_fewer_hosts():
    # Without images each VM shares 5 % of its idle memory (memory.zero_page_fraction): the slowdown bound needs 6
    # hosts (16 VMs each). Booting one image, a VM also shares its zero and self-shared pages (0.42 x 4 GiB, capped
    # at its 0.6 GiB idle) and 0.20 x (n - 2)/n of its memory with the other VMs of the image on its host (two NUMA
    # nodes): 5 hosts of 19-20 VMs stay within the bound.
    without = plan(_inventory(), _spec(False)).ranked()[0]
    with_img = plan(_inventory(), _spec(True)).ranked()[0]
    assert (without.n_hosts, with_img.n_hosts) == (6, 5)
    assert with_img.row()["mem_slowdown_worst"] <= 1.2 + 1e-9
    # salting (inter-VM sharing off): the image's common pages are not shared, only the idle zero pages
    salted = plan(_inventory(), _spec(True, inter_vm_sharing=False)).ranked()[0]
    assert salted.n_hosts == 6


def test_the_chosen_scenario_names_the_image():
    from densim.tools.plan import replay

    res = plan(_inventory(), _spec(True))
    sc, _ = replay.chosen_scenario(res, "inventory.csv", "generic", given=False)
    assert {g.get("workload", {}).get("guest_image") for g in sc["vms"]} == {"windows-desktop-idle"}
    assert sc["memory"]["inter_vm_sharing"] is True
    # the engine runs it with the same sharing: every VM on a host short of memory shares (the engine places by its
    # own first-fit, so which hosts are short is its own)
    from densim.engine import simulate
    from densim.plant import resolve
    from densim.spec.loader import scenario_from_dict

    run = simulate(resolve(scenario_from_dict(yaml.safe_load(yaml.safe_dump(sc)), source="chosen-scenario.yaml")))
    short = run.host_acc.sum["mem_deficit_gib"] > 0
    on_short = short[run.ctx.vms.host]
    assert run.summary["vms_placed"] == N and on_short.any()
    assert (run.vm_acc.sum["mem_shared_gib"][on_short] > 0).all()


@pytest.mark.parametrize("rules, where, problem", [
    ([{"vms": "vdi-*", "image": "no-such-image"}], "guest_images[0].image", "no-such-image"),
    ([{"vms": "web-*", "image": "linux-server-stack"}], "guest_images[0].vms", "matches no VM"),
    ([{"vms": "vdi-*", "image": "linux-server-stack"}, {"vms": "vdi-0*", "image": "diverse-server"}],
     "guest_images[1].vms", "also matched by guest_images[0]"),
])
def test_bad_image_rules_are_one_line_naming_the_field(rules, where, problem):
    spec = _spec(False).model_copy(update={"guest_images": PlanSpec.model_validate(
        {"candidates": _spec(False).model_dump(by_alias=True, mode="json")["candidates"],
         "memory": {"model": "vsphere-like"}, "guest_images": rules}).guest_images})
    with pytest.raises(InputError) as exc:
        plan(_inventory(), spec)
    assert exc.value.where == where and problem in exc.value.problem


def test_images_without_the_memory_model_are_refused():
    with pytest.raises(ValueError, match="guest_images: page sharing by guest image is part of the memory check"):
        PlanSpec.model_validate({"candidates": _spec(False).model_dump(by_alias=True, mode="json")["candidates"],
                                 "guest_images": [{"vms": "*", "image": "linux-server-stack"}]})


def test_the_tiered_check_shares_by_image_too():
    # 60 of the VMs (240 GiB) on one 64 GiB host with a 1:1 NVMe tier (128 GiB before reclamation): 112 GiB and the
    # overheads must be reclaimed beyond the tier, more than the VMs' idle memory (60 x 0.6 GiB), so active memory
    # goes too. Sharing comes first; booting one image the VMs also share 0.2 x 58/60 x 4 GiB each of active
    # memory with each other (two NUMA nodes), so less active memory is swapped than with 5 % of idle memory shared.
    from densim.catalog.core import builtin_catalog
    from densim.tools.plan.memcheck import plan_images
    from densim.tools.plan.qos import memory_check

    inv = _inventory()
    n = 60
    cat = builtin_catalog()
    out = {}
    for im in (False, True):
        spec = _spec(im, tiering={"device": "intel-dc-p4600-1.6tb", "ratio": "1:1"})
        images = plan_images(spec, inv.names, cat)
        mc = memory_check(np.zeros(n, np.int64), 1, 64.0 * GIB, np.full(n, 4.0 * GIB), np.full(n, 2000.0),
                          np.asarray(inv.cpu_mhz)[:, :n], None, spec.memory, cat, sockets=2,
                          images=None if images is None else type(images)(images.of_vm[:n], images.names,
                                                                          images.zero_self, images.shared, images.unique))
        out[im] = (float(mc.swapped_gib_peak[0]), float(mc.slowdown_worst[0]))
    # measured: 39.0 -> 26.9 GiB swapped at the peak, worst slowdown 15.4 -> 10.7
    (sw0, sd0), (sw1, sd1) = out[False], out[True]
    assert sw0 > 0 and sw1 < sw0 and sd1 < sd0


# ---------------------------------------------------------------- rules by guest OS (RVTools 'OS according to ...')

WIN10 = "Microsoft Windows 10 (64-bit)"


def _inventory_with_os(os_values):
    inv = _inventory()
    return build_inventory(inv.names, inv.vcpus, inv.vcpu_mhz, inv.mem_bytes, cpu_mhz=inv.cpu_mhz, step_s=inv.step_s,
                           start_s=inv.start_s, tags={"os": os_values})


def test_a_rule_by_guest_os_gives_the_plan_a_name_rule_gives():
    # the 96 desktops all run Windows 10: {os: "*windows 10*"} (case-insensitive) picks the same VMs as vms: "vdi-*",
    # so the plan is the same: 5 hosts instead of 6
    inv = _inventory_with_os([WIN10] * N)
    by_os = _spec(False).model_copy(update={"guest_images": PlanSpec.model_validate(
        {**_spec(True).model_dump(by_alias=True, mode="json", exclude={"guest_images"}),
         "guest_images": [{"os": "*windows 10*", "image": "windows-desktop-idle"}]}).guest_images})
    assert plan(inv, by_os).ranked()[0].n_hosts == plan(inv, _spec(True)).ranked()[0].n_hosts == 5
    from densim.catalog.core import builtin_catalog
    from densim.tools.plan.memcheck import plan_images

    a, b = (plan_images(sp, inv.names, builtin_catalog(), inv.tags) for sp in (by_os, _spec(True)))
    assert a.names == b.names and np.array_equal(a.of_vm, b.of_vm)


def test_rules_by_os_split_an_inventory_of_two_systems():
    from densim.catalog.core import builtin_catalog
    from densim.tools.plan.memcheck import plan_images

    os_values = [WIN10 if i % 2 == 0 else "Ubuntu Linux (64-bit)" for i in range(N)]
    spec = PlanSpec.model_validate({**_spec(False).model_dump(by_alias=True, mode="json"), "guest_images": [
        {"os": "Microsoft Windows*", "image": "windows-desktop-idle"}, {"os": "*linux*", "image": "linux-server-stack"}]})
    im = plan_images(spec, _inventory().names, builtin_catalog(), {"os": np.asarray(os_values, dtype=object)})
    assert im.names == ["windows-desktop-idle", "linux-server-stack"]
    assert (im.of_vm[0::2] == 0).all() and (im.of_vm[1::2] == 1).all()


@pytest.mark.parametrize("rule, inv_os, where, problem", [
    ({"os": "*Windows*", "image": "windows-desktop-idle"}, None, "guest_images[0].os", "gives no guest OS"),
    ({"os": "*Solaris*", "image": "linux-server-stack"}, [WIN10] * N, "guest_images[0].os",
     f"matches no VM of the inventory (its os values include: {WIN10!r})"),
])
def test_bad_os_rules_are_one_line_naming_the_field(rule, inv_os, where, problem):
    spec = PlanSpec.model_validate({**_spec(False).model_dump(by_alias=True, mode="json"), "guest_images": [rule]})
    inv = _inventory() if inv_os is None else _inventory_with_os(inv_os)
    with pytest.raises(InputError) as exc:
        plan(inv, spec)
    assert exc.value.where == where and problem in exc.value.problem


@pytest.mark.parametrize("rule", [{"image": "linux-server-stack"},
                                  {"vms": "*", "os": "*", "image": "linux-server-stack"}])
def test_a_rule_names_vms_or_os(rule):
    with pytest.raises(ValueError, match="give the VMs by name \\(vms\\) or by guest OS \\(os\\), one of the two"):
        PlanSpec.model_validate({**_spec(False).model_dump(by_alias=True, mode="json"), "guest_images": [rule]})


def test_rvtools_gives_each_vm_its_guest_os(tmp_path):
    # vInfo 'OS according to the configuration file', and where it is blank 'OS according to the VMware Tools'
    from densim.workloads.readers.rvtools import read_rvtools

    from .fixtures import rvtools_tables, save_tables_xlsx, small_workload

    tables = rvtools_tables(small_workload(n_vms=3))
    header, rows = tables["vInfo"]
    c = header.index("OS according to the configuration file")
    header = header + ["OS according to the VMware Tools"]
    rows = [r + ["Ubuntu Linux (64-bit)"] for r in rows]
    rows[0][c] = WIN10  # configuration file given: it wins
    rows[1][c] = ""  # blank: the Tools' report
    tables["vInfo"] = (header, rows)
    inv = read_rvtools(save_tables_xlsx(tmp_path / "e.xlsx", tables))
    assert list(inv.tags["os"]) == [WIN10, "Ubuntu Linux (64-bit)", "Linux"]
    assert not any("OS according" in h for h in inv.facts.get("vinfo_columns_unread", []))
