"""Per-VM I/O on shared datastores, vectorised over (time steps x datastores).

Each datastore is an array (drives x RAID) behind optional controllers. Its stations are
symmetric, so a datastore is described by a few station *classes* (drives, controllers), each
with a multiplicity. For a front-end load ``lambda`` (steps x datastores) with read fraction ``r``
the mean I/O latency is

``R = sum_class m_class * v_class * (S_class + W_class)``,  ``W`` from Allen-Cunneen G/G/c
(Erlang C times the burstiness factor ``(ca^2 + cs^2)/2``), except that the drives' write phases
are fork-joins: a RAID 1/10 write waits ``g_2 (S + W)`` for its mirror pair, not ``2 (S + W)``
(:func:`densim.models.queueing.max_iid_factors`; ``g_2 = 1.5`` for exponential responses),

exactly the open network of :func:`densim.models.storage.solve_open` (drives, controllers' I/O
processors with their firmware delay, their PCIe slots), evaluated for every step at once (``cs^2``
of the drives' responses is taken equal to the burstiness, i.e. ``ca^2 = cs^2``). A step counts as
saturated when any of them is. VMs on one datastore share ``lambda``, so they slow each other; swap traffic from the
memory model adds to the same ``lambda`` (:func:`add_swap_io`), and :class:`SwapQueues` gives the
memory model the same latency as a function of its swap load, for its fault-cost fixed point.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from densim.models.devices import REF_BLOCK_BYTES, DeviceSpec, block_service
from densim.models.queueing import erlang_c, ggc_wait_s, max_iid_factors
from densim.models.storage import RAID_WRITE_IOS, ControllerSpec, raid_write_phases

#: utilisation at which a step counts as saturated; latency is evaluated at this load instead
SATURATION = 0.995


@dataclass(frozen=True)
class DatastoreModel:
    """Vectorisable description of one datastore."""

    name: str
    drives: int
    raid: str
    t1_read_s: float
    t1_write_s: float
    cap_read_iops: float
    cap_write_iops: float
    parallelism: float | None
    controller_service_s: float = 0.0  # per back-end I/O, on one controller's I/O processor
    controllers: int = 0
    plain_hba: bool = True  # the host does the RAID work: back-end I/Os cross the PCIe slot
    controller_delay_s: float = 0.0  # firmware path per back-end I/O (a delay, no occupancy)
    link_service_s: float = 0.0  # one I/O on one controller's PCIe slot

    @classmethod
    def build(cls, name: str, device: DeviceSpec, drives: int, raid: str, controller: ControllerSpec | None,
              controllers: int, block_bytes: float = REF_BLOCK_BYTES) -> "DatastoreModel":
        from densim.models.storage import controller_service

        tr, cr, _ = block_service(device, block_bytes, 1.0)
        tw, cw, _ = block_service(device, block_bytes, 0.0)
        s_ctl = delay = s_link = 0.0
        if controller is not None:
            s_ctl = controller_service(controller, block_bytes)[0]
            delay = controller.latency_s
            s_link = block_bytes / controller.link_bps
        return cls(name, drives, raid, tr, tw, cr, cw, device.parallelism, s_ctl, controllers if controller else 0,
                   controller is None or controller.kind != "raid", delay, s_link)


def datastore_latency_s(ds: DatastoreModel, iops, read_fraction, burstiness: float = 1.0):
    """Mean front-end I/O latency (s), utilisation of the busiest station, and a saturation flag.

    ``iops`` and ``read_fraction`` broadcast together (e.g. steps x 1). Saturated steps are
    evaluated at :data:`SATURATION` utilisation so the latency stays finite (and flagged).
    """
    return datastore_operating_point(ds, iops, read_fraction, burstiness)[:3]


def datastore_operating_point(ds: DatastoreModel, iops, read_fraction, burstiness: float = 1.0):
    """:func:`datastore_latency_s`'s (latency, busiest utilisation, saturated) and the drives' own busy
    share (0-1, what their power follows: idle + (active - idle) x busy)."""
    lat_d, lat_c, util, sat, u_dev = _latency_parts(ds, iops, read_fraction, burstiness)
    return _plus(lat_d, lat_c), util, sat, u_dev


def _latency_parts(ds: DatastoreModel, iops, read_fraction, burstiness: float = 1.0, read_ios=None, rebuilt=None,
                   drive_share=None):
    """(drive latency, controller latency, busiest utilisation, saturated, drives' utilisation) of
    :func:`datastore_latency_s`. Degraded arrays (:func:`degraded_latency_s`) pass ``read_ios`` (back-end
    reads per front-end read), ``rebuilt = (q, m)`` (a share ``q`` of the reads is reconstructed: a
    fork-join of ``m`` reads) and ``drive_share`` (the share of each drive's time left to foreground I/O
    while a rebuild runs); left at None, the healthy array's figures are computed unchanged."""
    lam = np.asarray(iops, dtype=np.float64)
    r = np.clip(np.asarray(read_fraction, dtype=np.float64), 0.0, 1.0)
    wr, ww = RAID_WRITE_IOS[ds.raid]
    br = (r if read_ios is None else r * read_ios) + (1.0 - r) * wr  # back-end reads per front-end I/O
    bw = (1.0 - r) * ww  # back-end writes
    be = br + bw
    p = br / be
    t1 = p * ds.t1_read_s + (1.0 - p) * ds.t1_write_s
    cap = 1.0 / (p / ds.cap_read_iops + (1.0 - p) / ds.cap_write_iops)
    c = np.maximum(1.0, cap * t1) if ds.parallelism is None else np.full_like(t1, ds.parallelism)
    if drive_share is not None:  # a rebuild takes the rest of every drive's time
        cap = cap * drive_share
    s = c / cap
    v = be / ds.drives
    util_dev = lam * v * s / c
    util = util_dev
    if ds.controllers:
        v_ctl = be / ds.controllers  # back-end I/Os through each I/O processor
        v_link = (be if ds.plain_hba else np.ones_like(be)) / ds.controllers  # I/Os crossing each PCIe slot
        util = np.maximum(util, lam * v_ctl * ds.controller_service_s)
        util = np.maximum(util, lam * v_link * ds.link_service_s)
    sat = util >= SATURATION
    scale = np.where(sat, SATURATION / np.maximum(util, 1e-300), 1.0)
    lam_eff = lam * scale
    lam_dev = lam_eff * v
    a_dev = lam_dev * s
    pw = erlang_c(c, a_dev)
    with np.errstate(divide="ignore", invalid="ignore"):
        w_dev = np.where(a_dev < c, pw * s / (c - a_dev), np.inf) * burstiness  # = ggc_wait_s
        var_w = np.where(pw > 0, 2.0 * w_dev * w_dev / pw - w_dev * w_dev, 0.0)
    r_dev = s + w_dev
    # read: one member; each write phase of width m: the slowest of m members (fork-join)
    shape = np.divide(r_dev * r_dev, burstiness * s * s + var_w, out=np.full(r_dev.shape, np.inf),
                      where=(burstiness * s * s + var_w) > 0)
    if rebuilt is None:
        fj = r
    else:  # a reconstructed read waits for the slowest of the m reads of its stripe
        q, m = rebuilt
        fj = r * ((1.0 - q) + q * max_iid_factors(m, shape)[0])
    for m in raid_write_phases(ds.raid):
        fj = fj + (1.0 - r) * (max_iid_factors(m, shape)[0] if m > 1 else 1.0)
    lat = fj * r_dev
    lat_c = ()  # controller terms, added one by one in this order (the healthy figures stay bit-identical)
    if ds.controllers:
        sc, sl = ds.controller_service_s, ds.link_service_s
        lat_c = (ds.controllers * v_ctl * (sc + ggc_wait_s(lam_eff * v_ctl, sc, 1.0, burstiness, burstiness)
                                           + ds.controller_delay_s),
                 ds.controllers * v_link * (sl + ggc_wait_s(lam_eff * v_link, sl, 1.0, burstiness, burstiness)))
    return lat, lat_c, util, sat, util_dev


def _plus(lat, terms):
    for x in terms:
        lat = lat + x
    return lat


#: redundancy of each RAID level: drives that may fail without losing data (RAID 1/10: one per mirror pair)
RAID_PARITY = {"jbod": 0, "raid0": 0, "raid1": 1, "raid10": 1, "raid5": 1, "raid6": 2}


def degraded_latency_s(ds: DatastoreModel, iops, read_fraction, failed: int, failed_controllers: int = 0,
                       drive_share=None, burstiness: float = 1.0):
    """(latency, busiest utilisation, saturated, drives' utilisation) of a datastore with ``failed`` drives
    down (or rebuilding) and ``failed_controllers`` of its controllers down; the array must still hold its
    data (:func:`array_lost`) and keep a controller.

    * RAID 5/6 with ``f`` of ``n`` drives down: a read of a lost drive's block is rebuilt from the ``n - p``
      others of its stripe (``p`` = 1, 2 parity drives), so a front-end read costs
      ``(1 - f/n) + (f/n)(n - p)`` back-end reads, spread over the ``n - f`` survivors, and the rebuilt
      share ``f/n`` of the reads waits for the slowest of ``n - p`` (fork-join). RAID 5, n = 4, f = 1:
      1.5 reads per front-end read, 0.5 per survivor against 0.25 per drive healthy (x2). Writes keep
      their healthy back-end count, spread over the survivors (estimate).
    * RAID 1/10 with ``f`` mirror pairs broken: the share ``2f/n`` of the I/O that lands on them is
      served by the pairs' survivors alone (each carries its pair's reads and one copy of its writes,
      ``lambda 2/n`` I/Os); the rest sees the healthy pairs.
    * Controllers: the survivors carry every I/O (a pair with one down: each I/O processor and PCIe slot
      sees twice the load).
    """
    import dataclasses

    n = ds.drives
    ctl = ds.controllers - failed_controllers if ds.controllers else 0
    base = dataclasses.replace(ds, controllers=ctl)
    lam = np.asarray(iops, dtype=np.float64)
    if failed == 0:
        lat_d, lat_c, util, sat, u_dev = _latency_parts(base, lam, read_fraction, burstiness, drive_share=drive_share)
        return _plus(lat_d, lat_c), util, sat, u_dev
    if ds.raid in ("raid5", "raid6"):
        p = RAID_PARITY[ds.raid]
        q = failed / n
        sub = dataclasses.replace(base, drives=n - failed)
        lat_d, lat_c, util, sat, u_dev = _latency_parts(sub, lam, read_fraction, burstiness, read_ios=(1.0 - q) + q * (n - p),
                                                        rebuilt=(q, n - p), drive_share=drive_share)
        return _plus(lat_d, lat_c), util, sat, u_dev
    if ds.raid in ("raid1", "raid10"):
        q = 2.0 * failed / n
        lat_d, lat_c, util, sat, _ = _latency_parts(base, lam, read_fraction, burstiness)
        hot = dataclasses.replace(base, drives=1, raid="jbod", controllers=0)
        lat_h, _, util_h, sat_h, u_dev = _latency_parts(hot, lam * (2.0 / n), read_fraction, burstiness, drive_share=drive_share)
        return _plus((1.0 - q) * lat_d + q * lat_h, lat_c), np.maximum(util, util_h), sat | sat_h, u_dev
    raise ValueError(f"a {ds.raid} array loses its data when a drive fails")


def array_lost(raid: str, failed_drives) -> bool:
    """Whether an array at ``raid`` with the drives ``failed_drives`` (indices) down has lost data: JBOD/RAID 0
    any drive, RAID 5 two, RAID 6 three, RAID 1/10 both drives of a mirror pair (drives 2k and 2k+1)."""
    f = list(failed_drives)
    if raid in ("raid1", "raid10"):
        pairs = [d // 2 for d in f]
        return len(set(pairs)) < len(pairs)
    return len(f) > RAID_PARITY[raid]


def add_swap_io(chunk, read_iops, write_iops) -> None:
    """Add swap traffic (steps x VMs) to the datastore queues for this chunk.

    The memory stage calls it from its ``after_cpu`` (the storage stage declares
    ``after=("memory",)``, so it runs later in the same chunk). The storage stage adds
    ``chunk.vm["swap_read_iops"]`` and ``chunk.vm["swap_write_iops"]`` to the datastore each VM's
    swap lives on (``memory.swap_datastore``; the VM's own datastore otherwise) before solving the
    queues, and counts it in the VM's ``io_iops``.
    """
    for key, val in (("swap_read_iops", read_iops), ("swap_write_iops", write_iops)):
        arr = np.asarray(val, dtype=np.float32)
        if key in chunk.vm:
            chunk.vm[key] = chunk.vm[key] + arr
        else:
            chunk.vm[key] = arr.copy()


class SwapQueues:
    """The datastores swap traffic lands on, for one block of steps: latency as a function of swap load.

    ``base_total`` / ``base_read`` (steps x slots) are the IOPS the VMs' own I/O puts on each
    datastore slot (a shared datastore is one slot, a per-host one a slot per host); ``slot_ds``
    names each slot's :class:`DatastoreModel`. A *store segment* is ``step * n_slots + slot``.
    :meth:`bind` returns ``lat(lambda)``: the mean front-end latency of each given segment with
    ``lambda`` swap IOPS (read share ``p_read``) on top of the other I/O, by
    :func:`datastore_latency_s`, the same function the storage stage reports latency with. A loop
    over datastore *models* only (a handful); everything else is vectorised.
    """

    def __init__(self, models, slot_ds, base_total, base_read, burstiness: float = 1.0) -> None:
        self.models = list(models)
        self.slot_ds = np.asarray(slot_ds, dtype=np.int64)
        self.base_total = np.asarray(base_total, dtype=float)
        self.base_read = np.asarray(base_read, dtype=float)
        self.burstiness = float(burstiness)
        self.n_slots = self.slot_ds.size

    def bind(self, useg, p_read: float):
        useg = np.asarray(useg, dtype=np.int64)
        t, s = np.divmod(useg, max(self.n_slots, 1))
        bt = self.base_total[t, s]
        br = self.base_read[t, s]
        ds = self.slot_ds[s]
        groups = [(d, np.flatnonzero(ds == d)) for d in np.unique(ds)]

        def lat(lam):
            tot = bt + lam
            rf = np.divide(br + lam * p_read, tot, out=np.full(tot.shape, p_read), where=tot > 0)
            out = np.empty(tot.shape)
            for d, sel in groups:
                out[sel] = datastore_latency_s(self.models[d], tot[sel], rf[sel], self.burstiness)[0]
            return out

        return lat
