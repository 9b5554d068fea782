"""Hyper-converged (HCI) storage: a cluster-wide datastore built from every host's disks (vSAN-, Nutanix-style).

Each host gives ``disks_per_host`` drives and one storage network adapter. A VM's objects are spread
over the hosts by a *storage policy* (:data:`POLICIES`), which sets

* the capacity overhead (raw bytes per byte stored) and the fewest hosts the policy can place on,
* what one front-end write costs: back-end reads and writes (*write amplification*) and the bytes it
  puts on the network, and what a read costs (local or across the network),
* what a host failure or a host in maintenance leaves to *resync* (rebuild) to restore compliance.

Policies (sources on each entry; ``(E)`` marks an engineering estimate):

==========================  ======  ==========  =========  ===================================
policy                      FTT     layout      min hosts  small write: back-end (reads, writes)
==========================  ======  ==========  =========  ===================================
vsan-raid1-ftt1/2/3         1/2/3   2/3/4 copies 3/5/7     (0, FTT + 1): every copy written
vsan-raid5 (OSA)            1       3+1         4          (2, 2): read-modify-write of data + parity
vsan-raid6 (OSA)            2       4+2         6          (3, 3)
vsan-esa-raid5 / -raid5-2p1 1       4+1 / 2+1   6 / 3      ESA log-structured: a 2-copy performance
vsan-esa-raid6              2       4+2         6          leg (FTT + 1 writes) then a full-stripe
                                                           write ((d + p) / d per byte), no reads
nutanix-rf2 / rf3           1 / 2   2 / 3 copies 3 / 5     (0, RF); first copy local (data locality)
nutanix-rf2-ecx / rf3-ecx   1 / 2   RF hot, EC   4 / 6     as RF (EC-X is post-process on write-cold
                                    d/p cold               data: strip d = min(4, hosts - 2p))
==========================  ======  ==========  =========  ===================================

**Capacity** (:func:`capacity`): ``raw = hosts x disks x capacity``; the host-rebuild reserve keeps
``rebuild_reserve_hosts`` hosts' raw free (room to re-protect a failed host's data), the slack /
operations reserve a share of what is left::

    available raw = (hosts - reserve_hosts) x raw per host x (1 - slack)
    usable (logical) = available raw / overhead x dedupe_compression

Hosts needed: the fewest hosts whose available raw holds every VM group's data at its policy's
overhead, and at least the policy's minimum plus the rebuild reserve (after losing that many hosts
the survivors must still place every component, or compliance cannot be restored). The larger of
the two names the limiting factor.

**Network** (:func:`write_costs`): on vSAN each component is on some host, the VM's own with
probability ``1 / hosts`` (no data locality), so ``(1 - 1/n)`` of every back-end I/O's bytes cross the
network; Nutanix writes its first copy on the VM's host (data locality) and reads locally, so an RF
write sends ``RF - 1`` copies and a read sends nothing.

**Resync** (:func:`resync_rate_Bps`): a rebuilt byte costs ``k`` bytes read on other hosts and sent over
the network (:func:`rebuild_reads`: 1 for a mirror copy, ``d`` for a ``d + p`` erasure code, which rebuilds a
lost piece from ``d`` survivors of its stripe) and one byte written. Spread over the hosts up, one host
accounts for at most ``min(adapter / k, 1 / (k/disk read + 1/disk write))`` rebuilt bytes/s
(:func:`host_resync_Bps`); the resync gets ``share`` of that on every host up, less what the foreground I/O
keeps busy: ``r(t) = share x hosts_up x per-host x (1 - u(t))`` (the array rebuild of
:mod:`densim.engine.storage_faults`, now across hosts). Time to compliance of ``B`` bytes at no foreground
load: ``B / (share x hosts_up x per-host)``. The bytes pass through the hosts' storage stacks
(:func:`resync_stack_bytes`: ``k`` read, ``k`` sent, ``k`` received, 1 written per rebuilt byte), which costs
CPU: ``cycles_per_byte x stack bytes``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

TIB = float(2**40)


@dataclass(frozen=True)
class HciPolicy:
    """One storage policy: layout, failures tolerated, minimum hosts, and where its figures come from."""

    name: str
    flavour: Literal["vsan", "nutanix"]
    kind: Literal["mirror", "ec", "esa-ec", "rf-ecx"]
    ftt: int  # host failures tolerated
    copies: int = 1  # mirror / RF: full copies
    data: int = 1  # EC: data components of a stripe (rf-ecx: the largest strip's data)
    parity: int = 0  # EC: parity components
    min_hosts: int = 3
    witness: bool = False  # RAID-1 keeps witness components for quorum: 2 FTT + 1 hosts, not FTT + 1
    locality: bool = False  # Nutanix: the first copy on the VM's host, reads local
    source: str = ""

    def strip(self, hosts: int) -> tuple[int, int]:
        """(data, parity) of an EC stripe on ``hosts`` hosts: fixed for vSAN; Nutanix EC-X ``d = min(4, hosts - 2 p)``
        (``p`` hosts beyond the strip's ``d + p`` kept out for rebuild: 2/1 on 4 nodes, 3/1 on 5, 4/1 from 6; 2/2 on 6,
        3/2 on 7, 4/2 from 8, the cited strip table)."""
        if self.kind == "rf-ecx":
            return max(min(self.data, hosts - 2 * self.parity), 2), self.parity
        return self.data, self.parity

    def overhead(self, hosts: int, cold_fraction: float = 0.0) -> float:
        """Raw bytes per byte stored: copies (mirror, RF), (d + p) / d (EC); EC-X: the write-cold share at the strip's
        overhead, the rest at RF."""
        if self.kind == "mirror":
            return float(self.copies)
        d, p = self.strip(hosts)
        ec = (d + p) / d
        if self.kind == "rf-ecx":
            return cold_fraction * ec + (1.0 - cold_fraction) * self.copies
        return ec


_VMW_POLICY = ("VMware vSAN 8 'Using vSAN Policies' / 'RAID 5 or RAID 6 Erasure Coding' (docs.vmware.com, vsan-administration): "
               "RAID-1 FTT=n needs 2n+1 hosts (n+1 replicas and n witnesses), RAID-5 3+1 needs 4 hosts, RAID-6 4+2 needs 6; "
               "vSphere API FTTFTMType FTT1_RAID1/FTT1_RAID5/FTT2_RAID1/FTT2_RAID6 (developer.broadcom.com vmware-cloud-sizer-api)")
_VMW_ESA = ("VMware vSAN 8 ESA: RAID-5 adapts 2+1 (3 to 5 hosts) and 4+1 (6 hosts or more), RAID-6 4+2 (6 hosts); writes go to a "
            "mirrored performance leg and are written as full stripes to the capacity leg (core.vmware.com 'RAID-5/6 with the "
            "performance of RAID-1 using the vSAN Express Storage Architecture'); the leg's write counts are (E)")
_NTNX_RF = ("The Nutanix Bible, 'Data Resilience and HA' (nutanixbible.com): RF2/RF3 keep 2/3 copies, the first on the local "
            "OpLog, replicated before the ack; RF3 needs at least 5 nodes (metadata RF5); RF2 3 nodes")
_NTNX_ECX = ("Nutanix EC-X strip sizes by node count (M. Andersson, 'Nutanix Erasure Coding (EC-X) how it works', magander.se, "
             "2020, after the Nutanix EC-X tech note): RF2 2/1 on 4 nodes, 3/1 on 5, 4/1 from 6; RF3 2/2 on 6, 3/2 on 7, 4/2 "
             "from 8; EC-X applies to write-cold data only (whatmatrix.com Nutanix ECP 5.19 data availability)")

POLICIES: dict[str, HciPolicy] = {p.name: p for p in (
    HciPolicy("vsan-raid1-ftt1", "vsan", "mirror", 1, copies=2, min_hosts=3, witness=True, source=_VMW_POLICY),
    HciPolicy("vsan-raid1-ftt2", "vsan", "mirror", 2, copies=3, min_hosts=5, witness=True, source=_VMW_POLICY),
    HciPolicy("vsan-raid1-ftt3", "vsan", "mirror", 3, copies=4, min_hosts=7, witness=True, source=_VMW_POLICY),
    HciPolicy("vsan-raid5", "vsan", "ec", 1, data=3, parity=1, min_hosts=4, source=_VMW_POLICY),
    HciPolicy("vsan-raid6", "vsan", "ec", 2, data=4, parity=2, min_hosts=6, source=_VMW_POLICY),
    HciPolicy("vsan-esa-raid5", "vsan", "esa-ec", 1, copies=2, data=4, parity=1, min_hosts=6, source=_VMW_ESA),
    HciPolicy("vsan-esa-raid5-2p1", "vsan", "esa-ec", 1, copies=2, data=2, parity=1, min_hosts=3, source=_VMW_ESA),
    HciPolicy("vsan-esa-raid6", "vsan", "esa-ec", 2, copies=3, data=4, parity=2, min_hosts=6, source=_VMW_ESA),
    HciPolicy("nutanix-rf2", "nutanix", "mirror", 1, copies=2, min_hosts=3, locality=True, source=_NTNX_RF),
    HciPolicy("nutanix-rf3", "nutanix", "mirror", 2, copies=3, min_hosts=5, locality=True, source=_NTNX_RF),
    HciPolicy("nutanix-rf2-ecx", "nutanix", "rf-ecx", 1, copies=2, data=4, parity=1, min_hosts=4, locality=True,
              source=_NTNX_RF + "; " + _NTNX_ECX),
    HciPolicy("nutanix-rf3-ecx", "nutanix", "rf-ecx", 2, copies=3, data=4, parity=2, min_hosts=6, locality=True,
              source=_NTNX_RF + "; " + _NTNX_ECX),
)}


def policy(name: str) -> HciPolicy:
    if name not in POLICIES:
        raise KeyError(f"unknown HCI storage policy {name!r}; known: {', '.join(POLICIES)}")
    return POLICIES[name]


# ------------------------------------------------------------------------------------------------ per-I/O costs


@dataclass(frozen=True)
class IoCosts:
    """What one front-end I/O of a policy costs on ``hosts`` hosts (bytes in units of the I/O's size)."""

    write_reads: float  # back-end reads per front-end write
    write_writes: float  # back-end writes per front-end write
    write_net: float  # network transfers (of one I/O's bytes) per front-end write
    read_reads: float  # back-end reads per front-end read
    read_net: float  # network transfers per front-end read
    write_phases: tuple[int, ...]  # fork-join widths of a write's phases (a mirror: (copies,); RAID-5 RMW: (2, 2))
    read_remote: float  # probability a read crosses the network

    @property
    def write_amplification(self) -> float:
        """Back-end I/Os per front-end write."""
        return self.write_reads + self.write_writes


def io_costs(p: HciPolicy, hosts: int, absent: float = 0) -> IoCosts:
    """Back-end I/Os and network transfers of one small front-end read and write under policy ``p``.

    ``absent`` hosts down or in maintenance (not yet re-protected; a failed disk counts as ``1 / disks per
    host`` of one): an EC read whose component is on one (``absent / hosts`` of them) is rebuilt from ``d``
    others of its stripe (degraded read)."""
    n = max(int(hosts), 1)
    remote = 0.0 if p.locality else 1.0 - 1.0 / n  # vSAN: any component is on the VM's host with 1/n
    q = min(absent / n, 1.0)
    if p.kind in ("mirror", "rf-ecx"):  # EC-X: writes land as RF copies (post-process on cold data)
        c = p.copies
        net_w = (c - 1.0) if p.locality else c * remote
        return IoCosts(0.0, float(c), net_w, 1.0, remote, (c,), remote)
    d, par = p.strip(n)
    rd = (1.0 - q) + q * d  # degraded: a missing component is rebuilt from d others
    if p.kind == "ec":  # read-modify-write: read old data and parities, write new ones
        k = 1 + par
        return IoCosts(float(k), float(k), 2.0 * k * remote, rd, rd * remote, (k, k), remote)
    # ESA: performance leg (FTT + 1 copies) then the full stripe ((d + p) / d per byte)
    w = p.copies + (d + par) / d
    return IoCosts(0.0, w, w * remote, rd, rd * remote, (p.copies,), remote)


def network_Bps(p: HciPolicy, hosts: int, read_iops, write_iops, block_bytes: float, absent: int = 0):
    """Bytes/s the VMs' I/O puts on the storage network (summed over hosts, one direction)."""
    c = io_costs(p, hosts, absent)
    return (np.asarray(read_iops, float) * c.read_net + np.asarray(write_iops, float) * c.write_net) * block_bytes


# ------------------------------------------------------------------------------------------------ capacity


@dataclass(frozen=True)
class GroupData:
    """Data a VM group stores on the HCI datastore under one policy."""

    name: str
    policy: str
    bytes_stored: float  # logical bytes (VMs x disk), before dedupe/compression
    cold_fraction: float = 0.0  # EC-X: the write-cold share


@dataclass(frozen=True)
class CapacityAnswer:
    hosts: int
    raw_bytes: float
    available_raw_bytes: float  # after the rebuild reserve and the slack
    usable_bytes: float  # logical bytes the available raw holds at the groups' mean overhead, x dedupe/compression
    used_raw_bytes: float  # raw the groups' data takes
    hosts_needed: int
    hosts_for_capacity: int
    hosts_for_policy: int
    limiting: str  # "capacity" or "policy <name>"
    fits: bool

    def as_dict(self) -> dict:
        t = TIB
        return {"hosts": self.hosts, "raw_tib": self.raw_bytes / t, "available_raw_tib": self.available_raw_bytes / t,
                "usable_tib": self.usable_bytes / t, "used_raw_tib": self.used_raw_bytes / t,
                "hosts_needed": self.hosts_needed, "hosts_for_capacity": self.hosts_for_capacity,
                "hosts_for_policy": self.hosts_for_policy, "limiting": self.limiting, "fits": self.fits}


def available_raw(hosts: int, raw_per_host: float, slack: float, reserve_hosts: int) -> float:
    """``(hosts - reserve) x raw per host x (1 - slack)`` (never negative)."""
    return max(hosts - reserve_hosts, 0) * raw_per_host * (1.0 - slack)


def used_raw(groups: list[GroupData], hosts: int, dedupe_compression: float) -> float:
    """Raw bytes the groups' data takes: ``sum bytes x overhead(policy, hosts) / dedupe_compression``."""
    return float(sum(g.bytes_stored * policy(g.policy).overhead(hosts, g.cold_fraction) for g in groups)) / dedupe_compression


def capacity(groups: list[GroupData], hosts: int, raw_per_host: float, *, slack: float, reserve_hosts: int,
             dedupe_compression: float = 1.0, max_hosts: int = 100_000) -> CapacityAnswer:
    """The capacity answer for ``hosts`` hosts of ``raw_per_host`` raw bytes (see the module docstring)."""
    if not 0.0 <= slack < 1.0:
        raise ValueError("slack must be in [0, 1)")
    if dedupe_compression < 1.0:
        raise ValueError("dedupe_compression is a reduction factor >= 1")
    pols = [policy(g.policy) for g in groups]
    need_pol = max((p.min_hosts for p in pols), default=3) + reserve_hosts
    worst = max(pols, key=lambda p: p.min_hosts) if pols else None
    # capacity: the fewest n with used_raw(n) <= available_raw(n); EC-X strips widen with n, so search upward
    n_cap = None
    per = raw_per_host * (1.0 - slack)
    if per > 0:
        lo = max(reserve_hosts + 1, 1)
        est = reserve_hosts + math.ceil(used_raw(groups, max(need_pol, lo), dedupe_compression) / per - 1e-9) if groups else lo
        n = max(lo, min(est, max_hosts))
        while n > lo and used_raw(groups, n - 1, dedupe_compression) <= available_raw(n - 1, raw_per_host, slack, reserve_hosts):
            n -= 1
        while n <= max_hosts and used_raw(groups, n, dedupe_compression) > available_raw(n, raw_per_host, slack, reserve_hosts):
            n += 1
        n_cap = n if n <= max_hosts else None
    n_cap_v = n_cap if n_cap is not None else max_hosts + 1
    needed = max(n_cap_v, need_pol)
    limiting = "capacity" if n_cap_v > need_pol else (f"policy {worst.name}" if worst else "policy")
    avail = available_raw(hosts, raw_per_host, slack, reserve_hosts)
    used = used_raw(groups, hosts, dedupe_compression)
    stored = sum(g.bytes_stored for g in groups)
    mean_oh = (used * dedupe_compression / stored) if stored > 0 else (pols[0].overhead(hosts) if pols else 1.0)
    usable = avail / mean_oh * dedupe_compression
    return CapacityAnswer(hosts, hosts * raw_per_host, avail, usable, used, needed, n_cap_v, need_pol, limiting,
                          fits=hosts >= needed)


# ------------------------------------------------------------------------------------------------ resync


def rebuild_reads(p: HciPolicy, hosts: int, cold_fraction: float = 0.0) -> float:
    """Pieces read per piece rebuilt (``k``): a mirror (RAID-1, RF) copies a surviving copy (1); a ``d + p`` erasure
    code rebuilds a lost piece from ``d`` surviving pieces of its stripe, each on another host (the definition of
    erasure coding); EC-X: its write-cold share (by raw bytes) is coded, the rest RF copies."""
    if p.kind == "mirror":
        return 1.0
    d, par = p.strip(hosts)
    if p.kind == "rf-ecx":
        ec_raw = cold_fraction * (d + par) / d
        rf_raw = (1.0 - cold_fraction) * p.copies
        return (ec_raw * d + rf_raw * 1.0) / (ec_raw + rf_raw)
    return float(d)


def mean_rebuild_reads(groups: list[GroupData], hosts: int) -> float:
    """Pieces read per piece rebuilt over the data of ``groups``, weighted by the raw bytes each stores (a host's
    share of the raw data holds every group's components in proportion); 1 without data."""
    raw = [g.bytes_stored * policy(g.policy).overhead(hosts, g.cold_fraction) for g in groups]
    tot = float(sum(raw))
    if tot <= 0:
        return 1.0
    return float(sum(r * rebuild_reads(policy(g.policy), hosts, g.cold_fraction) for r, g in zip(raw, groups)) / tot)


def host_resync_Bps(disks: int, seq_read_Bps: float, seq_write_Bps: float, nic_Bps: float, reads: float = 1.0) -> float:
    """Bytes/s of rebuilt data one host can account for when every rebuilt byte costs ``reads`` bytes read (from
    other hosts, over the network) and one byte written: spread evenly, each host reads ``k`` and writes 1 per byte
    it accounts for, and sends and receives ``k`` on its adapter (each direction at ``nic_Bps``)::

        per host = min(nic / k, 1 / (k / (disks x read) + 1 / (disks x write)))

    (``k = 1``, a mirror copy: ``min(nic, 1 / (1/(disks x read) + 1/(disks x write)))``)."""
    k = float(reads)
    if k < 1.0:
        raise ValueError("a rebuilt byte reads at least one byte")
    disk = 1.0 / (k / (disks * seq_read_Bps) + 1.0 / (disks * seq_write_Bps))
    return float(min(nic_Bps / k, disk))


def resync_stack_bytes(reads: float) -> float:
    """Bytes the hosts' storage stacks handle per rebuilt byte: ``k`` read from disks, ``k`` sent and ``k`` received
    on the storage network, 1 written: ``3 k + 1`` (4 for a mirror copy)."""
    return 3.0 * float(reads) + 1.0


def resync_rate_Bps(hosts_up, per_host_Bps: float, share: float, foreground_util=0.0):
    """Cluster resync rate ``share x hosts_up x per-host x (1 - u)`` (u: the foreground's utilisation)."""
    u = np.clip(np.asarray(foreground_util, float), 0.0, 1.0)
    return share * np.asarray(hosts_up, float) * per_host_Bps * (1.0 - u)


def resync_time_s(bytes_: float, hosts_up: int, per_host_Bps: float, share: float, foreground_util: float = 0.0) -> float:
    """Seconds to resync ``bytes_`` at a constant foreground utilisation (inf when the rate is 0)."""
    r = float(resync_rate_Bps(hosts_up, per_host_Bps, share, foreground_util))
    return bytes_ / r if r > 0 else math.inf


# ------------------------------------------------------------------------------------------------ licensing


def vsan_entitlement(licensed_cores: int, raw_bytes: float, tib_per_core: float) -> dict:
    """vSAN capacity a per-core subscription includes (VCF: ``tib_per_core`` TiB of raw claimed capacity per
    licensed core) against the raw the cluster claims; the rest is add-on TiB (rounded up)."""
    included = licensed_cores * tib_per_core
    raw_tib = raw_bytes / TIB
    return {"licensed_cores": int(licensed_cores), "tib_per_core": tib_per_core, "included_tib": included,
            "raw_tib": raw_tib, "addon_tib": int(max(math.ceil(raw_tib - included - 1e-9), 0))}


__all__ = ["POLICIES", "HciPolicy", "IoCosts", "GroupData", "CapacityAnswer", "policy", "io_costs", "network_Bps",
           "capacity", "available_raw", "used_raw", "rebuild_reads", "mean_rebuild_reads", "host_resync_Bps",
           "resync_stack_bytes", "resync_rate_Bps", "resync_time_s", "vsan_entitlement", "TIB"]
