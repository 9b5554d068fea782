"""HCI storage in the plan: the hosts a candidate needs for its datastore, and whether storage limits the answer.

With a ``hci`` section (:class:`densim.spec.storage.HciPlanSpec`) every VM stores ``disk`` bytes on a
hyper-converged datastore of the candidate's hosts (``disks_per_host`` x ``device``) under ``policy``.
:func:`hci_answer` gives, for the hosts compute needs:

* the capacity answer (:func:`densim.models.storage.hci.capacity`): usable TiB, the hosts storage needs
  (capacity, or the policy's minimum plus the rebuild reserve) and which of the two binds;
* the storage network: the inventory's disk reads and writes at the policy's network transfers
  (:func:`~densim.models.storage.hci.network_Bps`), per host at the busiest step, against the adapter;
* the time to re-protect one host's share of the data at ``rebuild_share`` (no foreground load);
* vSAN TiB included by a licensed product with ``vsan_tib_per_core`` and the add-on TiB beyond it.

When storage needs more hosts than compute, the plan buys them and its answer is *storage-bound*
(``answer.limiting == "storage"``).
"""

from __future__ import annotations

import numpy as np

from densim.catalog.core import builtin_catalog
from densim.models.devices import DeviceSpec
from densim.models.fabric import NicSpec
from densim.models.storage.hci import (TIB, GroupData, capacity, host_resync_Bps, io_costs, policy, rebuild_reads,
                                       resync_time_s)


def hci_answer(spec, inv, n_hosts: int, licensed_cores_per_host: int | None = None, tib_per_core: float | None = None,
               min_cores_per_order: int = 0) -> dict:
    """The storage answer for ``n_hosts`` hosts (what compute needs); ``hosts_needed`` may be more. The vSAN TiB
    included are those of the cores the fleet licenses: ``max(cores per host x hosts, min_cores_per_order)``, as
    :func:`densim.models.licensing.fleet_licences` counts them."""
    h = spec.hci
    cat = builtin_catalog()
    dev = cat.get("devices", h.device, DeviceSpec)
    nic = cat.get("nics", h.nic, NicSpec)
    raw_host = h.disks_per_host * dev.capacity("HCI plan")
    groups = [GroupData("inventory", h.policy, inv.n_vms * h.disk_bytes, h.cold_fraction or 0.0)]
    cap = capacity(groups, n_hosts, raw_host, slack=h.slack, reserve_hosts=h.rebuild_reserve_hosts,
                   dedupe_compression=h.dedupe_compression)
    n = max(n_hosts, cap.hosts_needed)
    final = capacity(groups, n, raw_host, slack=h.slack, reserve_hosts=h.rebuild_reserve_hosts,
                     dedupe_compression=h.dedupe_compression)
    p = policy(h.policy)
    c = io_costs(p, n)
    out = {"policy": h.policy, "ftt": p.ftt, "min_hosts": p.min_hosts, "compute_hosts": int(n_hosts),
           "hosts_needed": int(cap.hosts_needed), "binds": cap.hosts_needed > n_hosts,
           "storage_limit": cap.limiting, "hosts_for_capacity": cap.hosts_for_capacity,
           "hosts_for_policy": cap.hosts_for_policy, "raw_tib": final.raw_bytes / TIB, "usable_tib": final.usable_bytes / TIB,
           "used_raw_tib": final.used_raw_bytes / TIB, "data_tib": inv.n_vms * h.disk_bytes / TIB,
           "write_amplification": c.write_amplification, "network_transfers_per_write": c.write_net,
           "network_transfers_per_read": c.read_net, "source": p.source}
    if inv.disk_read_Bps is not None and inv.disk_write_Bps is not None:
        rd = np.asarray(inv.disk_read_Bps, dtype=np.float64).sum(axis=1)
        wr = np.asarray(inv.disk_write_Bps, dtype=np.float64).sum(axis=1)
        net = (rd * c.read_net + wr * c.write_net) / n  # bytes/s per host, each direction
        out |= {"network_peak_Bps_per_host": float(net.max(initial=0.0)), "network_peak_util": float(net.max(initial=0.0)) / nic.bandwidth_bps}
    k = rebuild_reads(p, n, h.cold_fraction or 0.0)  # pieces read per piece rebuilt (1 mirror, d for a d+p code)
    per = host_resync_Bps(h.disks_per_host, dev.seq_bps(False, "HCI plan"), dev.seq_bps(True, "HCI plan"), nic.bandwidth_bps,
                          reads=k)
    share = final.used_raw_bytes / n
    out |= {"host_share_tib": share / TIB, "resync_s_one_host": resync_time_s(share, n - 1, per, h.rebuild_share),
            "rebuild_share": h.rebuild_share, "rebuild_reads_per_byte": k}
    if licensed_cores_per_host is not None and tib_per_core is not None:
        from densim.models.storage.hci import vsan_entitlement

        out["vsan_licence"] = vsan_entitlement(max(licensed_cores_per_host * n, int(min_cores_per_order)), final.raw_bytes,
                                               tib_per_core)
    return out


def hci_plan_issues(spec) -> list[tuple[str, str]]:
    """Catalog problems of the plan's ``hci`` section, with field paths."""
    from densim.catalog.core import CatalogError
    from densim.errors import PartError

    h = spec.hci
    if h is None:
        return []
    issues = []
    cat = builtin_catalog()
    try:
        dev = cat.get("devices", h.device, DeviceSpec)
        dev.capacity("HCI plan")
        dev.seq_bps(False, "HCI plan (resync)")
        dev.seq_bps(True, "HCI plan (resync)")
    except CatalogError as exc:
        issues.append(("hci.device", str(exc.args[0]).strip("'\"")))
    except PartError as exc:
        issues.append(("hci.device", exc.problem))
    try:
        cat.get("nics", h.nic, NicSpec)
    except CatalogError as exc:
        issues.append(("hci.nic", str(exc.args[0]).strip("'\"")))
    return issues
