"""Study ``kvm-tuning``: KVM on a 2-socket Xeon X5680 consolidation benchmark, default to hand-tuned.

Published (seeds/003, A. Theurer, IBM LTC, August 2010; modelling guide §3.6.2): SPECvirt_sc2010 on
an IBM x3650 M3 (2 x Xeon X5680, 6 cores per socket at 3.33 GHz), RHEL 5.5 host and guests: 1169 @
72 VMs (12 tiles) with hugepages, SR-IOV and NUMA node binding; +54 % score from the default
configuration to the fully tuned one, the three tunings added in turn. The author asked for
automatic node binding instead of manual tuning.

The model runs densim's tile benchmark (:mod:`densim.tools.tiles.core`) on the catalog host for each
step. Manual binding is a tuner's plan: VMs pinned in start order to the node with the least
load *as studied beforehand*; automatic binding (numad-style) only sees VM sizes at start and the
observed use afterwards. The score gain, the tile count and each step's contribution come out of
the overhead, NUMA and queueing models; the tile's per-request work was fitted to 12 tuned tiles
and the virtio-net host cost and TLB miss rates to the step sizes (notes in the catalog files).

Role of each headline: the tuned tile count is a **calibration** (the tile's ``instructions_m`` were
scaled so the tuned host carries 12 tiles); the default-to-tuned gain is a **calibration** too: the
TLB/LLC miss rates and the virtio-net host cycles were fitted so the three steps land near the
modelling guide's illustrative split (1.20 x 1.15 x 1.12), whose product *is* the published +54 %
(guide §3.6.2 calls the split "a calibration target"). The automatic-binding share is a **target**:
issue 6's acceptance bound (>= 0.8 of the manual gain), not a published figure. None of the three is
a prediction. Node utilisation of every run is checked for saturation: the benchmark searches the
largest tile count whose QoS holds, so its nodes run close to full by construction.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from densim.atomic import write_json_atomic
from densim.tools.studies.base import Study, busy_check, headline

SERVER = "ibm-x3650-m3-x5680"
SOURCE = "seeds/003 (Theurer, IBM LTC, 2010): SPECvirt_sc2010 KVM 1169 @ 72 VMs; +54 % default to tuned"
MAX_TILES_PINNED = 40


def _host(name: str, hugepages: bool, network: str, numa: str, seed: int, pinning: dict[str, int] | None = None):
    from densim.spec.tiles import BenchHost
    from densim.spec.virtualization import VirtualizationSettings

    v = VirtualizationSettings.model_validate({
        "model": "kvm",
        "hypervisor": {"paging": "ept", "host_hugepages": hugepages, "network": network, "storage": "virtio"},
        "numa": {"policy": numa, "pinning": pinning or {}},
    })
    return BenchHost.model_validate({"name": name, "server": SERVER, "virtualization": v, "run": {"seed": seed}})


def tuner_pinning(seed: int, *, tile=None, catalog=None) -> dict[str, int]:
    """The hand-tuner's plan: each VM's mean CPU use studied beforehand, VMs pinned in start order
    to the least-loaded node (:func:`densim.placement.numa.pin_balanced`). ``tile`` and ``catalog``
    (default: the built-in ones) let the cross-validation re-fit the tile's parameters."""
    from densim.tools.tiles.core import Bench
    from densim.placement.numa import pin_balanced

    b = Bench(_host("probe", True, "sriov", "manual", seed), catalog, tile)
    load = np.zeros(len(b.roles))
    for c, rc in enumerate(b.tile.classes):
        for j, vz in enumerate(rc.visits):
            load[b.role_index[vz.vm]] += rc.users / rc.think_s * sum(b.cycles(c, j, 0.0))
    nodes = pin_balanced(np.tile(load, MAX_TILES_PINNED), np.tile(b.role_mem, MAX_TILES_PINNED), b.sockets, b.memory_per_node)
    return {name: int(n) for name, n in zip(b.vm_names(MAX_TILES_PINNED), nodes, strict=True)}


#: the tuning steps in order: (key, hugepages, network, NUMA policy)
STEPS = (("default", False, "virtio", "none"), ("+hugepages", True, "virtio", "none"),
         ("+SR-IOV", True, "sriov", "none"), ("+node binding (manual)", True, "sriov", "manual"))


def step_scores(seed: int, *, tile=None, catalog=None, keys: tuple[str, ...] | None = None) -> dict[str, float]:
    """Benchmark score of each tuning step (or of ``keys`` only) with a given tile and catalog.

    The same hosts as :func:`run_tuning_steps`; used by the leave-one-out cross-validation
    (:mod:`densim.tools.studies.crossval`), which re-fits the tile's TLB and LLC miss rates and the
    virtio-net host cycles.
    """
    from densim.tools.tiles.core import Bench

    wanted = [s for s in STEPS if keys is None or s[0] in keys]
    pins = tuner_pinning(seed, tile=tile, catalog=catalog) if any(s[3] == "manual" for s in wanted) else None
    names = {"default": "default", "+hugepages": "hugepages", "+SR-IOV": "sriov", "+node binding (manual)": "tuned"}
    return {key: float(Bench(_host(names[key], hp, net, numa, seed, pins if numa == "manual" else None), catalog, tile).run()["result"]["score"])
            for key, hp, net, numa in wanted}


def run_tuning_steps(out_dir: Path | None, seed: int, include_newer: bool = True) -> dict[str, Any]:
    from densim.tools.tiles.core import Bench, validate_document

    pins = tuner_pinning(seed)
    steps = [
        ("default", "RHEL 5.5 default: 4 KB pages, virtio-net in QEMU, no binding", _host("default", False, "virtio", "none", seed)),
        ("+hugepages", "+ hugepages backing guest memory", _host("hugepages", True, "virtio", "none", seed)),
        ("+SR-IOV", "+ SR-IOV virtual functions for the network", _host("sriov", True, "sriov", "none", seed)),
        ("+node binding (manual)", "+ NUMA node binding by hand (tuned)", _host("tuned", True, "sriov", "manual", seed, pins)),
    ]
    alternatives = [("auto node binding", "hugepages + SR-IOV + automatic node binding (numad-style)", _host("auto", True, "sriov", "auto", seed))]
    if include_newer:
        alternatives.append(("THP + vhost-net + auto binding", "newer code path the author proposed: no manual tuning",
                             _host("newer", True, "vhost", "auto", seed)))
    docs: dict[str, dict[str, Any]] = {}
    for key, _label, host in steps + alternatives:
        doc = Bench(host).run()
        validate_document(doc)
        docs[key] = doc
        if out_dir is not None:
            write_json_atomic(Path(out_dir) / f"bench-{host.name}.json", doc)

    def score(k: str) -> float:
        return float(docs[k]["result"]["score"])

    base = score("default")
    total_log = math.log(score("+node binding (manual)") / base)
    rows = []
    prev = base
    for key, label, _h in steps:
        s = score(key)
        r = docs[key]["result"]
        rows.append({
            "step": key, "description": label, "tiles": r["tiles"], "tiles_fractional": r["tiles_fractional"], "vms": r["vms"],
            "score": s, "gain_vs_previous": s / prev, "gain_vs_default": s / base,
            "share_of_total_gain": math.log(s / prev) / total_log if total_log > 0 else 0.0,
            "limiting_workload": r["limiting_workload"], "numa_moves": r["numa_moves"],
        })
        prev = s
    for key, label, _h in alternatives:
        r = docs[key]["result"]
        rows.append({"step": key, "description": label, "tiles": r["tiles"], "tiles_fractional": r["tiles_fractional"], "vms": r["vms"],
                     "score": score(key), "gain_vs_previous": score(key) / score("+SR-IOV"), "gain_vs_default": score(key) / base,
                     "share_of_total_gain": None, "limiting_workload": r["limiting_workload"], "numa_moves": r["numa_moves"]})
    tuned = docs["+node binding (manual)"]["result"]
    manual_gain = score("+node binding (manual)") - score("+SR-IOV")
    auto_gain = score("auto node binding") - score("+SR-IOV")
    auto_share = auto_gain / manual_gain if manual_gain > 0 else float("nan")
    tuned_run = "+node binding (manual)"
    heads = [
        headline("tiles, fully tuned (hugepages + SR-IOV + node binding)", 12, tuned["tiles"], tolerance=1, source=SOURCE, lower=11, upper=13,
                 unit="tiles", role="calibration", fitted="tile.yaml instructions_m (one common scale, to 12 tuned tiles)",
                 rests_on=(tuned_run,)),
        headline("score gain, default to fully tuned", 1.54, score(tuned_run) / base, tolerance=0.15, source=SOURCE, unit="x",
                 role="calibration",
                 fitted="tile.yaml tlb_mpki_4k, llc_mpki; virtio-net host_cycles (catalog/virtualization.yaml): fitted to the "
                        "guide's step split 1.20 x 1.15 x 1.12, whose product is the published +54 %",
                 rests_on=("default", tuned_run)),
        headline("automatic node binding: share of the manual binding gain", 0.8, auto_share, tolerance=0.0, lower=0.8,
                 source="issue 6 acceptance: automatic binding recovers >= 80 % of manual binding's gain", unit="share",
                 role="target", rests_on=("+SR-IOV", tuned_run, "auto node binding")),
    ]
    busy = []
    for key, _label, host in steps + alternatives:
        doc = docs[key]
        util = np.asarray(doc["result"]["node_utilisation"], dtype=float)
        warm = int(doc["configuration"]["run"]["warmup_intervals"])
        util = util[warm:] if util.ndim == 2 and util.shape[0] > warm else util
        if util.size:
            nodes = util.shape[-1]
            names = [f"NUMA node {j}" for j in range(nodes)] if nodes > 1 else ["host CPU (unbound: one pool)"]
            busy.append(busy_check(key, names, util, kind="host CPU node",
                                   step_s=float(doc["configuration"]["run"]["interval"])))
    fig = {
        "data": [{"type": "bar", "x": [r["step"] for r in rows], "y": [r["score"] for r in rows],
                  "text": [f"{r['tiles_fractional']:.1f} tiles" for r in rows], "name": "score"}],
        "layout": {"title": {"text": "Tile benchmark score on 2 x Xeon X5680, KVM: tuning steps"}, "yaxis": {"title": {"text": "score"}}},
    }
    return {
        "study": "kvm-tuning",
        "seed": seed,
        "server": SERVER,
        "headline": heads,
        "steps": rows,
        "auto_vs_manual": {"manual_gain": manual_gain, "auto_gain": auto_gain, "auto_share": auto_share,
                           "auto_moves": docs["auto node binding"]["result"]["numa_moves"]},
        "figures": [fig],
        "busy": busy,
    }


def _run(out_dir: Path, seed: int) -> dict[str, Any]:
    return run_tuning_steps(out_dir, seed)


STUDY = Study(
    name="kvm-tuning",
    description="KVM consolidation on 2 x Xeon X5680: default vs hugepages, SR-IOV and NUMA node binding (manual and automatic)",
    run=_run,
    source=SOURCE,
    tags=("virtualization", "numa", "benchmark"),
    area="cpu-virtualization",
)
