"""Study ``val-npt-oltp``: nested paging and paravirtual drivers for an OLTP guest (Red Hat 2007).

Source (measured): S. Rao, *Red Hat Enterprise Linux 5.1 utilizes nested paging on AMD Barcelona
Processor to improve performance of virtualized guests*, Red Hat Magazine, 2007-11-20. Set-up as
the readable text gives it: an Oracle 10gR2 OLTP workload ("uses both memory and I/O
sub-systems", "many page modifications", "I/O intensive") in a fully virtualized RHEL 5.1 (Xen)
guest on an AMD quad-core Opteron "Barcelona" host, against the same workload on bare metal.
Measured, in the article's prose (its table was not readable as text):

* nested paging (NPT) "almost doubles the performance" of the fully virtualized guest (shadow page
  tables, emulated I/O) -> 2.0 (read as 2.0; "almost" means a little under);
* nested paging plus PV drivers: "75 % of bare metal";
* nested paging plus PV drivers: "3.5 times the performance on a fully virtualized guest".

Model (``densim.models.requests.visit_cycles``: ``instructions x CPI(page walks) + I/O path
cycles``, the same per-visit cost the tile benchmark uses): one transaction of the catalog's
database visit (``tile.yaml`` class ``japp``, VM ``db``: 9.6 M instructions, CPI_core 1.0, 12 LLC
misses and 2.5 TLB misses (4 KB) per 1,000 instructions, 1 disk I/O and 20 packets; those miss
rates were fitted to the kvm-tuning steps, a different source, and nothing here was tuned). The
box is taken as CPU-bound (E): throughput ~ 1 / (guest + host-side cycles per transaction).
Four configurations: bare metal (native walks, no I/O path cost), fully virtualized (shadow
paging, emulated disk and NIC), NPT with emulated I/O, NPT with paravirtual disk and NIC (the
catalog's virtio-blk / virtio-net paths stand in for Xen's blkfront/netfront (E)).

Platform: AMD Family 10h data TLB as recalled from AMD's software optimization guide, not re-checked
against it here (E): 48-entry L1 (4 KB and 2 MB) + 512-entry L2 for 4 KB and 128 for 2 MB pages; walk-reference cycles, memory latency and
exit costs are the catalog's Westmere/KVM values (E: no Barcelona/Xen entry exists; Xen's exits
to qemu-dm in dom0 are probably dearer than KVM's exits to QEMU). Shadow paging uses the catalog's
``xen-3.1-shadow`` entry (:func:`densim.models.virtualization.shadow_sync_cycles_per_kinstr`): the
source says its hypervisor refreshes the shadow tables on every context switch, so each CR3 load
rebuilds (64 hidden faults, (E)); page-table write and switch rates are the visit's defaults
(0.02 and 0.005 per 1,000 instructions, (E)); the guest has the catalog db VM's 2 vCPUs (E: the
article does not give its width) and is alone on its host.

Tolerances (a priori): +/-25 % on each ratio.

Expected weak spots, written before the first run: (1) densim charges shadow paging a fixed cost per
instruction (two exit rates), independent of how often an OLTP database rewrites page tables and
switches processes, so it may well put NPT below shadow for a workload with many TLB misses and
4 KB host pages (the nested walk is dearer); the source says the opposite by 2x. (2) The catalog
database visit does one disk I/O per 9.6 M instructions, far less I/O-bound than an "I/O
intensive" OLTP run, so the PV-driver gain will come out small.

Result of the first run (nothing changed): NPT/shadow 0.89 (measured ~2.0) and NPT+PV over the fully
virtualized guest 0.91 (measured 3.5) missed; NPT+PV at 76 % of bare metal was within tolerance, but
for the wrong reason: the model's whole gap to bare metal is the nested page walk (4 KB host pages),
while the source's gap is mostly I/O emulation.

Result after issue 15 made shadow synchronisation grow with vCPUs and VMs per host and refresh on
context switches where the hypervisor does (rates (E), set before the run, nothing tuned to these
figures): NPT/shadow 1.05 and NPT+PV over the fully virtualized guest 1.08, still misses; 76 % of
bare metal unchanged (no shadow paging in either configuration). Missing mechanisms: an OLTP
database's own page-table write and process-switch rates (the visit keeps generic rates) and its
I/O intensity (I/Os and interrupts per transaction), plus Xen's dearer emulated I/O path.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from densim.catalog.core import builtin_catalog
from densim.models.numa import NumaSpec
from densim.models.requests import PathCosts, visit_cycles
from densim.models.virtualization import ExitCosts, IoPath, ShadowPaging, TlbSpec
from densim.tools.studies.base import Study, headline

ESTIMATES = (
    "Barcelona data-TLB sizes (recalled, not re-checked)",
    "walk-reference cycles, memory latency and exit costs: the catalog's Westmere/KVM values standing in for Barcelona/Xen",
    "virtio-blk / virtio-net I/O paths standing in for Xen blkfront/netfront",
)
SHADOW_ESTIMATES = ESTIMATES + (
    "shadow page-table write and context-switch rates, remote-flush share and hidden faults per refresh (catalog xen-3.1-shadow, E)",
    "guest width: 2 vCPUs (the catalog db VM)",
)  # for the figures with the shadow-paged guest in them

SOURCE = ("S. Rao, 'Red Hat Enterprise Linux 5.1 utilizes nested paging on AMD Barcelona Processor to improve "
          "performance of virtualized guests', Red Hat Magazine, 2007-11-20 (Oracle 10gR2 OLTP, prose figures)")
MEASURED = {"npt_over_shadow": 2.0, "npt_pv_over_bare": 0.75, "npt_pv_over_fv": 3.5}
TOLERANCE = 0.25

BARCELONA_TLB = TlbSpec(
    name="amd-family-10h", entries_4k=48 + 512, entries_2m=48 + 128, leaf_ref_cycles=40, upper_ref_cycles=5,
    source=("AMD Family 10h software optimization guide (R): L1 DTLB 48 entries (4 KB/2 MB), L2 DTLB 512 (4 KB) + "
            "128 (2 MB); walk-reference cycles as the catalog's Westmere entry (E)"))
EXITS = "kvm-westmere"  # (E) proxy: no Xen/Barcelona exit-cost set in the catalog
SHADOW = "xen-3.1-shadow"  # the source's hypervisor refreshes shadow tables on every context switch (its own text)
GUEST_VCPUS = 2  # (E) the article does not give the guest's width: the catalog db VM's 2 vCPUs
VMS_ON_HOST = 1  # one guest on the host
PLATFORM = "ibm-x3650-m3-x5680"  # (E) proxy for the memory latency (NUMA local cycles, stall share)

CONFIGS = {
    # name: (paging, disk path, network path)
    "bare metal": ("native", "native", "native"),
    "fully virtualized (shadow, emulated I/O)": ("shadow", "emulated-ide", "emulated-e1000"),
    "nested paging, emulated I/O": ("ept", "emulated-ide", "emulated-e1000"),
    "nested paging + PV drivers": ("ept", "virtio-blk", "virtio-net"),
}


def db_visit():
    """The catalog tile's database visit (class ``japp``, VM ``db``)."""
    from densim.tools.tiles.core import builtin_tile

    for c in builtin_tile().classes:
        for v in c.visits:
            if v.vm == "db":
                return v
    raise LookupError("the built-in tile has no 'db' visit")


def cycles(config: str, visit=None) -> dict[str, float]:
    """Guest (vCPU) and host-side cycles of one transaction in ``config`` (``visit``: default the catalog db visit)."""
    from densim.tools.tiles.core import PlatformSpec

    cat = builtin_catalog()
    paging, disk, net = CONFIGS[config]
    numa: NumaSpec = cat.get("virt_platforms", PLATFORM, PlatformSpec).numa
    costs = PathCosts(exits=cat.get("virt_exit_costs", EXITS, ExitCosts), network=cat.get("virt_io_paths", net, IoPath),
                      storage=cat.get("virt_io_paths", disk, IoPath), tlb=BARCELONA_TLB, numa=numa, paging=paging,
                      host_hugepages=False, guest_large_pages=True,
                      shadow=cat.get("virt_shadow_paging", SHADOW, ShadowPaging) if paging == "shadow" else None)
    vcpu, host = visit_cycles(visit if visit is not None else db_visit(), costs, 0.0, vcpus=GUEST_VCPUS, vms_on_host=VMS_ON_HOST)
    return {"vcpu_cycles": vcpu, "host_cycles": host, "total_cycles": vcpu + host}


def profile_ratios(profile: str) -> dict[str, float]:
    """What-if, not a validation row: the three ratios with a catalog workload profile's transaction
    (``workload_profiles``, e.g. ``oltp-database``) in place of the tile's db visit. The study's own
    rows keep the db visit: the profile's page-table and I/O rates are estimates (E), so a row built
    on them would not be a prediction (docs/background/workload-profiles.md)."""
    from densim.catalog.profiles import load_profile

    v = load_profile(profile).visit("db")
    x = {k: 1.0 / cycles(k, v)["total_cycles"] for k in CONFIGS}
    fv, npt, pv, bare = (x[k] for k in ("fully virtualized (shadow, emulated I/O)", "nested paging, emulated I/O",
                                        "nested paging + PV drivers", "bare metal"))
    return {"npt_over_shadow": npt / fv, "npt_pv_over_bare": pv / bare, "npt_pv_over_fv": pv / fv}


def run(out_dir: Path, seed: int) -> dict[str, Any]:
    del out_dir
    cyc = {k: cycles(k) for k in CONFIGS}
    x = {k: 1.0 / v["total_cycles"] for k, v in cyc.items()}
    fv, npt, pv, bare = (x[k] for k in ("fully virtualized (shadow, emulated I/O)", "nested paging, emulated I/O",
                                        "nested paging + PV drivers", "bare metal"))
    heads = [
        headline("nested paging over shadow paging, emulated I/O ('almost doubles')", MEASURED["npt_over_shadow"], npt / fv,
                 tolerance=TOLERANCE, relative=True, source=SOURCE, unit="x", role="prediction",
                 estimated_inputs=SHADOW_ESTIMATES),
        headline("nested paging + PV drivers, share of bare metal", MEASURED["npt_pv_over_bare"], pv / bare,
                 tolerance=TOLERANCE, relative=True, source=SOURCE, unit="of bare metal", role="prediction",
                 estimated_inputs=ESTIMATES),
        headline("nested paging + PV drivers over the fully virtualized guest", MEASURED["npt_pv_over_fv"], pv / fv,
                 tolerance=TOLERANCE, relative=True, source=SOURCE, unit="x", role="prediction",
                 estimated_inputs=SHADOW_ESTIMATES),
    ]
    names = list(CONFIGS)
    fig = {"data": [{"type": "bar", "name": "model", "x": names, "y": [x[k] / bare for k in names]},
                    {"type": "scatter", "mode": "markers", "name": "Red Hat 2007 (prose)",
                     "x": names, "y": [1.0, 0.75 / 3.5, 2.0 * 0.75 / 3.5, 0.75]}],
           "layout": {"title": {"text": "Oracle OLTP guest: throughput relative to bare metal"},
                      "yaxis": {"title": {"text": "share of bare metal"}}}}
    return {"study": "val-npt-oltp", "seed": seed, "headline": heads, "figures": [fig],
            "runs": {k: {**cyc[k], "throughput_vs_bare": x[k] / bare} for k in names}}


STUDY = Study(
    name="val-npt-oltp",
    description="Validation: nested paging and PV drivers for an Oracle OLTP guest on AMD Barcelona (Red Hat 2007)",
    run=run,
    source=SOURCE,
    tags=("validation", "virtualization", "no-queueing"),
    area="cpu-virtualization",
)
