"""Study ``val-hci-rebuild``: how long a Nutanix cluster takes to re-protect data, against the HCI resync model.

Sources (J. Odgers, Nutanix, on joshodgers.com, 2018, measured on the same lab cluster):

* *Nutanix Resiliency - Part 2 - Converting from RF2 to RF3* (2018-05-31): a 12-node cluster with about
  50 TB in its storage pool at RF2; the container set to RF3, Curator creates the third replicas, about
  25 TB, in "less than 3 hours, so approx 8.3 TB per hour" (measured: 25 / 8.3 = 3.0 h).
* *Nutanix Resiliency - Part 3 - Node failure rebuild performance with RF3* (2018): the same 12-node
  cluster at RF3; a node with 5 TB of data powered off ("Power Off - Immediate" over IPMI); its data was
  re-protected "in approx 30 mins". The author notes the cluster was unbalanced (some nodes held little
  data and could not contribute reads), so this is slower than a balanced cluster would be.

Inputs, each fixed from another source before the model was run:

* nodes: the lab described in *Part 8* of the same series (2018-06-19): NX-6050 and NX-3050 nodes, Ivy
  Bridge CPUs, "6 x SATA-SSDs ranging in size and 2 x 10GB network connectivity"; Parts 2 and 3 give no
  hardware, so the same lab is assumed (E). SSD: Intel DC S3700 sequential figures, 500 MB/s read, 460 MB/s
  write (catalog validation.yaml ``intel-dc-s3700-1.6tb``, (E) for the model); adapter 2 x 10 GbE
  (catalog ``x710-da2-2x10g``: 2.5 GB/s each direction).
* rebuild share 0.25: Nutanix admission control splits each node's I/O queue 75/25 between VM I/O and
  maintenance tasks (Nutanix, *Nutanix Disk Self-Healing: Laser Surgery vs The Scalpel*, nutanix.com blog,
  2014-03-03); repair delay 60 s ("Nutanix Node Failure = Recovery is started in 60 seconds", same post).
* no VM load during the tests (none is reported): the foreground utilisation is 0.

Model (:mod:`densim.models.storage.hci`, docs/background/hci.md): each node moves at most
``min(adapter, 1 / (1/(6 x 500 MB/s) + 1/(6 x 460 MB/s)))`` bytes/s, the resync gets 0.25 of every node up.
Part 3 is run through the engine: 12 hosts, RF3 (``nutanix-rf3``), idle VMs holding 5 TB x 12 raw, host 1
failed at 10 min for the rest of the run, time to compliance from the failure. Part 2 has no failure (a
policy change: every node both sends and receives the new replicas): the model's rate on 12 nodes.

Tolerance, written before the model was run: +/-50 % (relative), as val-live-migration's for a mechanism
whose hardware details are partly assumed. Disclosure: while the inputs were being fixed from the sources
a rough hand estimate of the Part 2 figure (about 1.6 h) was made; the tolerance was set by the precedent,
not from it. Nothing was fitted to either figure.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from densim.tools.studies.base import Study, busy_check, headline

SOURCE_P2 = "J. Odgers, 'Nutanix Resiliency - Part 2 - Converting from RF2 to RF3', joshodgers.com, 2018-05-31"
SOURCE_P3 = "J. Odgers, 'Nutanix Resiliency - Part 3 - Node failure rebuild performance with RF3', joshodgers.com, 2018"
NODES = 12
SSD = "intel-dc-s3700-1.6tb"
SSDS_PER_NODE = 6
NIC = "x710-da2-2x10g"
SHARE = 0.25
REPAIR_DELAY_S = 60.0
P2_BYTES = 25e12  # third replicas created
P2_HOURS = 25.0 / 8.3  # measured: 8.3 TB per hour
P3_NODE_BYTES = 5e12  # data on the failed node
P3_MINUTES = 30.0
TOLERANCE = 0.5


def scenario(node_bytes: float) -> dict[str, Any]:
    """12 nodes at RF3 whose VMs hold ``node_bytes`` of raw data per node; node 1 fails at 10 min for good."""
    vms = 120
    data = node_bytes * NODES / 3.0  # logical: RF3 keeps three copies
    return {
        "name": "val-hci-rebuild",
        "cluster": {"hosts": [{"name": "ntnx", "count": NODES, "server": "dual-platinum-8180-768g"}]},
        "vms": [{"name": "vms", "count": vms, "vcpus": 2, "memory": "4 GiB", "profile": {"kind": "constant", "mean": 0.05},
                 "datastore": "ctr"}],
        "placement": {"policy": "first-fit"},
        "simulation": {"step": "1 min", "horizon": "2 h", "seed": 1},
        "storage": {"model": "queueing", "hci": {
            "name": "ctr", "device": SSD, "disks_per_host": SSDS_PER_NODE, "nic": NIC,
            "policies": [{"vms": "vms", "policy": "nutanix-rf3", "disk": data / vms}],
            "rebuild_share": SHARE, "repair_delay": REPAIR_DELAY_S, "rebuild_reserve_hosts": 0, "slack": 0.0}},
        "failures": {"events": [{"time": "10 min", "target": "ntnx-1", "duration": "200 min"}]},
    }


def run(out_dir: Path, seed: int) -> dict[str, Any]:
    del out_dir
    from densim.catalog.core import builtin_catalog
    from densim.engine import simulate
    from densim.models.devices import DeviceSpec
    from densim.models.fabric import NicSpec
    from densim.models.storage.hci import host_resync_Bps, resync_time_s
    from densim.plant import resolve
    from densim.spec.loader import scenario_from_dict

    cat = builtin_catalog()
    dev = cat.get("devices", SSD, DeviceSpec)
    nic = cat.get("nics", NIC, NicSpec)
    per = host_resync_Bps(SSDS_PER_NODE, dev.seq_bps(False, "study"), dev.seq_bps(True, "study"), nic.bandwidth_bps)
    p2_h = resync_time_s(P2_BYTES, NODES, per, SHARE) / 3600.0
    r = simulate(resolve(scenario_from_dict(scenario(P3_NODE_BYTES))))
    h = r.summary["hci"]
    (rs,) = h["resyncs"]
    p3_min = rs["time_to_compliance_s"] / 60.0
    heads = [
        headline("Nutanix 12 nodes, RF2 -> RF3: time to create 25 TB of third replicas (h)", round(P2_HOURS, 2), p2_h,
                 tolerance=TOLERANCE, relative=True, source=SOURCE_P2, unit="h", role="arithmetic",
                 why="the model's figure (a closed-form rate, about 1.6 h) was worked out by hand before the +/-50 % "
                     "tolerance was written, which it then passes at -46 %: not a blind prediction",
                 estimated_inputs=["same lab as Part 8 (6 SATA SSDs, 2 x 10 GbE)", "S3700 sequential rates"]),
        headline("Nutanix 12 nodes, RF3: time to re-protect a failed node's 5 TB (min)", P3_MINUTES, p3_min,
                 tolerance=TOLERANCE, relative=True, source=SOURCE_P3, unit="min", role="prediction",
                 estimated_inputs=["same lab as Part 8 (6 SATA SSDs, 2 x 10 GbE)", "S3700 sequential rates"]),
    ]
    fig = {"data": [{"type": "bar", "name": "published", "x": ["RF2->RF3 (h)", "node rebuild (min / 10)"],
                     "y": [P2_HOURS, P3_MINUTES / 10]},
                    {"type": "bar", "name": "model", "x": ["RF2->RF3 (h)", "node rebuild (min / 10)"], "y": [p2_h, p3_min / 10]}],
           "layout": {"title": {"text": "Nutanix re-protection times: published vs the HCI resync model"}, "barmode": "group"}}
    rate = SHARE * (NODES - 1) * per
    return {"study": "val-hci-rebuild", "seed": seed, "headline": heads, "figures": [fig],
            "runs": {"per_node_Bps": per, "p2_hours": p2_h, "p3_minutes": p3_min, "p3_rate_Bps": rate,
                     "p3_resync": {k: v for k, v in rs.items() if k != "series"}},
            "busy": [busy_check("node rebuild", ["resync share of a node's disks"], [rate / (NODES - 1) / per],
                                kind="HCI node (resync)")]}


STUDY = Study(
    name="val-hci-rebuild",
    description="Validation: Nutanix RF2->RF3 conversion and RF3 node-rebuild times against the HCI resync model",
    run=run,
    source=SOURCE_P3,
    tags=("validation", "storage", "hci"),
    area="storage",
)
