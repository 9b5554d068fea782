"""Block devices (SSD, HDD, SAN LUN) behind one interface, for swap and for storage.

A device is a multi-server station (modelling guide §4.1): QD1 latency ``t1`` per request and a
saturated rate ``IOPS_max``; by Little's law at saturation its internal parallelism is
``c = IOPS_max * t1``. Reads and writes mix harmonically. Response time under an offered open
load comes from M/M/c (Erlang C). The storage model (:mod:`densim.models.storage`) builds arrays,
controllers and host paths on top of this module; the memory model reads it for swap devices.

HDDs may be given by their mechanics instead of latencies: ``t1 = seek + 60/(2 rpm) + B/media +
overhead`` per random request, and the command-queue (NCQ/TCQ) reordering gain ``G`` at depth 32
sets the saturated rate ``IOPS_max = G / t1``; the multi-server form then gives ``c = G``, so an
HDD is a station whose throughput rises from ``1/t1`` at depth 1 toward ``G/t1`` at depth
(:func:`ncq_gain` gives the depth curve used for closed single-device runs).

SSDs: datasheet random 4 KiB IOPS at QD32, latency at QD1, sequential bandwidth. Other block
sizes add transfer time at the sequential rate (:func:`block_service`).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from densim.errors import PartError
from densim.models.queueing import mmc_response_s
from densim.units import Bytes, BytesPerSecond, PerSecond, PosSeconds, Seconds, Watts

DeviceKind = Literal["hdd", "sata_ssd", "sas_ssd", "nvme_ssd", "san_lun", "dram", "other"]

REF_BLOCK_BYTES = 4096.0  # datasheet IOPS and latencies are for 4 KiB random I/O


class DeviceSpec(BaseModel):
    """Datasheet figures of one block device (4 KiB random I/O unless stated).

    Either give ``read_latency``/``write_latency``/``read_iops``/``write_iops`` directly, or (for
    ``kind: hdd``) the mechanics ``rpm``, ``seek_read``, ``seek_write``, ``media_rate`` and
    ``ncq_gain`` from which they (and the sequential rates) are computed by the validator. Optional
    figures a model needs (``seq_read``/``seq_write`` for transfers larger than 4 KiB, power for the
    power model) are read through :meth:`seq_bps` / :meth:`power_figures`, which raise an error
    naming the part and the field when they are missing.
    """

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid", populate_by_name=True)

    name: str
    kind: DeviceKind
    read_latency_s: PosSeconds | None = Field(
        default=None, alias="read_latency", description="random 4 KiB read latency at queue depth 1"
    )
    write_latency_s: PosSeconds | None = Field(
        default=None, alias="write_latency", description="random 4 KiB write latency at queue depth 1"
    )
    read_iops: PerSecond | None = Field(default=None, gt=0, description="random 4 KiB read IOPS at full depth (datasheet, QD32)")
    write_iops: PerSecond | None = Field(default=None, gt=0, description="random 4 KiB write IOPS at full depth")
    seq_read_latency_s: PosSeconds | None = Field(
        default=None, alias="seq_read_latency",
        description="sequential 4 KiB read latency at QD1 (what many NVMe datasheets print as 'latency'); sequential access only")
    seq_write_latency_s: PosSeconds | None = Field(
        default=None, alias="seq_write_latency", description="sequential 4 KiB write latency at QD1; sequential access only")
    iops_queue_depth: int | None = Field(
        default=None, gt=0,
        description="queue depth at which read_iops/write_iops are rated (datasheet footnote, e.g. 4 workers x QD32 = 128)")
    parallelism: float | None = Field(
        default=None, gt=0, description="internal parallel units; default IOPS x QD1 latency (Little's law)"
    )
    seq_read_bps: BytesPerSecond | None = Field(
        default=None, alias="seq_read", description="sequential read bandwidth; an HDD's defaults to its media_rate"
    )
    seq_write_bps: BytesPerSecond | None = Field(
        default=None, alias="seq_write", description="sequential write bandwidth; an HDD's defaults to its media_rate"
    )
    capacity_bytes: Bytes | None = Field(default=None, alias="capacity")
    idle_power_w: Watts | None = Field(default=None, alias="idle_power")
    active_power_w: Watts | None = Field(default=None, alias="active_power")
    price_usd: float | None = Field(default=None, ge=0)
    price_date: str | None = None
    # HDD mechanics (modelling guide §4.1)
    rpm: float | None = Field(default=None, gt=0, description="spindle speed (HDD)")
    seek_read_s: PosSeconds | None = Field(default=None, alias="seek_read", description="average read seek (HDD)")
    seek_write_s: PosSeconds | None = Field(default=None, alias="seek_write", description="average write seek (HDD)")
    media_bps: BytesPerSecond | None = Field(default=None, alias="media_rate", description="sustained media transfer rate (HDD)")
    overhead_s: Seconds = Field(default=0.0, alias="overhead", description="controller/command overhead per request")
    ncq_gain: float | None = Field(
        default=None, ge=1.0,
        description="HDD throughput at queue depth 32 relative to depth 1 (NCQ/TCQ reordering; guide §4.5: 1.5-2x)"
    )
    max_queue_depth: int = Field(default=32, gt=0, description="device command queue depth (NCQ 32, SAS TCQ 64+, NVMe 64K)")
    # endurance and packaging
    endurance_bytes: Bytes | None = Field(default=None, alias="endurance", description="rated total bytes written (TBW/PBW)")
    dwpd: float | None = Field(default=None, gt=0, description="rated drive writes per day over the warranty")
    warranty_years: float | None = Field(default=None, gt=0)
    mtbf_s: PosSeconds | None = Field(default=None, alias="mtbf", description="datasheet mean time between failures (failures.random.drive)")
    afr: float | None = Field(default=None, gt=0, lt=1, description="annual failure rate (0-1), e.g. a fleet's observed AFR; used when mtbf is not given")
    form_factor: Literal["2.5in", "3.5in", "1.8in", "m.2", "u.2", "aic", "external"] | None = None
    interface: str | None = Field(default=None, description="e.g. sata-3g, sata-6g, sas-6g, nvme-pcie3-x4, fc-8g")
    source: str = ""
    notes: str = ""

    @model_validator(mode="after")
    def _complete(self) -> "DeviceSpec":
        """Derive every quantity a model reads, once, here (models never guess a missing figure).

        * HDD mechanics (``rpm``, ``seek_read``, ``seek_write``, ``media_rate``, ``ncq_gain``, all
          required together): QD1 latency ``t1 = seek + 30/rpm + 4096/media + overhead`` and
          saturated IOPS ``ncq_gain / t1``, unless given.
        * HDD sequential rates: ``seq_read = seq_write = media_rate`` unless given (the head streams
          at the media rate once positioned).
        """
        who = f"device {self.name!r}"
        fill: dict[str, float] = {}
        mech = {"rpm": self.rpm, "seek_read": self.seek_read_s, "seek_write": self.seek_write_s,
                "media_rate": self.media_bps, "ncq_gain": self.ncq_gain}
        if self.rpm is not None or self.seek_read_s is not None:
            for alias, v in mech.items():
                if v is None:
                    raise ValueError(f"{who}: {alias} is required for a drive given by its mechanics "
                                     f"(give rpm, seek_read, seek_write, media_rate and ncq_gain)")
            rot = 30.0 / self.rpm  # half a revolution on average
            xfer = REF_BLOCK_BYTES / self.media_bps
            t_r = self.seek_read_s + rot + xfer + self.overhead_s
            t_w = self.seek_write_s + rot + xfer + self.overhead_s
            if self.read_latency_s is None:
                fill["read_latency_s"] = t_r
            if self.write_latency_s is None:
                fill["write_latency_s"] = t_w
            if self.read_iops is None:
                fill["read_iops"] = self.ncq_gain / t_r
            if self.write_iops is None:
                fill["write_iops"] = self.ncq_gain / t_w
        if self.kind == "hdd" and self.media_bps is not None:
            if self.seq_read_bps is None:
                fill["seq_read_bps"] = self.media_bps
            if self.seq_write_bps is None:
                fill["seq_write_bps"] = self.media_bps
        for k, v in fill.items():
            object.__setattr__(self, k, float(v))
        for kind, f, seq in (("read", "read_latency_s", self.seq_read_latency_s),
                             ("write", "write_latency_s", self.seq_write_latency_s)):
            if getattr(self, f) is None and seq is not None:  # the datasheet's only latency is a sequential one
                raise ValueError(f"{who}: {kind}_latency (random 4 KiB {kind} at QD1) is required; seq_{kind}_latency "
                                 f"{seq * 1e6:g} us is a sequential figure and is not used for random I/O (a random "
                                 f"{kind} pays the media access: give the random QD1 latency, marked if estimated)")
        for alias, f in (("read_latency", "read_latency_s"), ("write_latency", "write_latency_s"),
                         ("read_iops", "read_iops"), ("write_iops", "write_iops")):
            if getattr(self, f) is None:
                raise ValueError(f"{who}: {alias} is required (give it, or for an HDD its mechanics: "
                                 f"rpm, seek_read, seek_write, media_rate, ncq_gain)")
        if self.iops_queue_depth is not None:  # Little's law at the rated point: in flight = IOPS x latency <= depth
            for kind, iops, lat in (("read", self.read_iops, self.read_latency_s), ("write", self.write_iops, self.write_latency_s)):
                if iops * lat > self.iops_queue_depth * (1 + 1e-9):
                    raise ValueError(
                        f"{who}: {kind}_iops {iops:g} with {kind}_latency {lat * 1e6:g} us needs {iops * lat:.3g} requests "
                        f"in flight, more than the iops_queue_depth {self.iops_queue_depth} the figure is rated at: the "
                        f"latency and the IOPS are not the same I/O (is one sequential, or rated at another depth?)")
        if (self.idle_power_w is None) != (self.active_power_w is None):
            missing = "idle_power" if self.idle_power_w is None else "active_power"
            raise ValueError(f"{who}: {missing} is required when the other power figure is given")
        if self.idle_power_w is not None and self.active_power_w < self.idle_power_w:
            raise ValueError(f"{who}: active_power must be >= idle_power")
        return self

    def seq_bps(self, write: bool, model: str) -> float:
        """Sequential bandwidth (B/s) for reads or writes; an error naming the part when not given."""
        bw = self.seq_write_bps if write else self.seq_read_bps
        if bw is None:
            f = "seq_write" if write else "seq_read"
            raise PartError(f"device {self.name!r}: {f} is required by the {model} (give {f}, or media_rate for an HDD)")
        return float(bw)

    def capacity(self, model: str) -> float:
        """Capacity in bytes; an error naming the part when not given."""
        if self.capacity_bytes is None:
            raise PartError(f"device {self.name!r}: capacity is required by the {model}")
        return float(self.capacity_bytes)

    def power_figures(self, model: str) -> tuple[float, float]:
        """``(idle_w, active_w)``; an error naming the part when the datasheet power is not given."""
        if self.idle_power_w is None:
            raise PartError(f"device {self.name!r}: idle_power and active_power are required by the {model}")
        return float(self.idle_power_w), float(self.active_power_w)

    def servers(self, read_fraction: float = 1.0) -> float:
        """Effective number of parallel servers for a read/write mix."""
        if self.parallelism is not None:
            return float(self.parallelism)
        s = mix_service_s(self.read_latency_s, self.write_latency_s, read_fraction)
        return max(1.0, float(mix_iops(self.read_iops, self.write_iops, read_fraction) * s))

    @property
    def rotation_s(self) -> float | None:
        """Average rotational latency ``60 / (2 rpm)`` (HDD)."""
        return None if self.rpm is None else 30.0 / self.rpm

    def endurance_total_bytes(self) -> float | None:
        """Rated bytes written: the TBW figure, else ``DWPD x capacity x 365 x warranty years``."""
        if self.endurance_bytes is not None:
            return float(self.endurance_bytes)
        if self.dwpd is not None and self.capacity_bytes and self.warranty_years:
            return float(self.dwpd * self.capacity_bytes * 365.0 * self.warranty_years)
        return None


def mix_service_s(read_latency_s, write_latency_s, read_fraction):
    """Mean QD1 service time of a read/write mix."""
    p = np.asarray(read_fraction, dtype=float)
    return p * np.asarray(read_latency_s) + (1.0 - p) * np.asarray(write_latency_s)


def mix_iops(read_iops, write_iops, read_fraction):
    """Saturated IOPS of a mix: ``1/IOPS = p/IOPS_r + (1-p)/IOPS_w`` (harmonic)."""
    p = np.asarray(read_fraction, dtype=float)
    return 1.0 / (p / np.asarray(read_iops, dtype=float) + (1.0 - p) / np.asarray(write_iops, dtype=float))


def device_response_s(dev: DeviceSpec, iops, read_fraction=1.0):
    """Mean response time (s) of ``dev`` under an open load of ``iops`` (vectorised, inf if saturated).

    M/M/c with ``c`` = effective parallelism and per-server service time chosen so that
    ``c / S`` equals the mix's saturated IOPS and an unloaded request takes the QD1 latency.
    """
    s = mix_service_s(dev.read_latency_s, dev.write_latency_s, read_fraction)
    cap = mix_iops(dev.read_iops, dev.write_iops, read_fraction)
    c = np.maximum(1.0, cap * s) if dev.parallelism is None else np.full_like(np.asarray(s, float), dev.parallelism)
    s_eff = c / cap  # service time per server consistent with the saturated rate
    return mmc_response_s(iops, s_eff, c)


def device_utilisation(dev: DeviceSpec, iops, read_fraction=1.0):
    """Busy share of the device's saturated rate (may exceed 1 when over-driven)."""
    return np.asarray(iops, dtype=float) / mix_iops(dev.read_iops, dev.write_iops, read_fraction)


# --------------------------------------------------------------------------------------------
# HDD mechanics and block-size scaling


def hdd_service_s(seek_s, rpm, block_bytes, media_bps, overhead_s=0.0):
    """Random-request service time of an HDD: ``seek + 60/(2 rpm) + B/media + overhead`` (vectorised)."""
    return (np.asarray(seek_s, float) + 30.0 / np.asarray(rpm, float)
            + np.asarray(block_bytes, float) / np.asarray(media_bps, float) + np.asarray(overhead_s, float))


def ncq_gain(queue_depth, gain_at_32, max_depth=32):
    """Command-queue reordering gain at ``queue_depth`` outstanding requests (vectorised).

    ``g(q) = 1 + (G - 1) * log2(q) / 5`` for ``1 <= q <= 32`` (so ``g(1) = 1``, ``g(32) = G``) and
    flat beyond the device queue. Reordering shortens the expected positioning time roughly
    logarithmically in the number of requests to choose from (E: shape is an engineering
    assumption; only the QD32 end point is tied to the modelling guide's 1.5-2x, §4.5).
    """
    q = np.clip(np.asarray(queue_depth, float), 1.0, float(min(max_depth, 32)))
    return 1.0 + (np.asarray(gain_at_32, float) - 1.0) * np.log2(q) / 5.0


def block_service(dev: DeviceSpec, block_bytes: float = REF_BLOCK_BYTES, read_fraction: float = 1.0,
                  sequential: bool = False) -> tuple[float, float, float]:
    """``(t1_s, cap_iops, servers)`` of ``dev`` for requests of ``block_bytes`` and a read/write mix.

    * Latency at depth 1 grows by the transfer time of the extra bytes at the sequential rate.
    * The saturated rate combines the 4 KiB IOPS and the bandwidth harmonically:
      ``1/cap(B) = 1/IOPS_4K + (B - 4K)/BW`` (so ``cap -> BW/B`` for large blocks).
    * Sequential access on an HDD skips seek and rotation: ``t1 = B/media + overhead`` and the
      device streams at its media rate. Sequential SSD access is rate-limited by ``BW/B`` only.
    * ``servers = cap * t1`` (Little's law at saturation), at least 1, or the datasheet parallelism.
    """
    p = float(read_fraction)
    extra = max(float(block_bytes) - REF_BLOCK_BYTES, 0.0)
    needs_bw = sequential or extra > 0.0  # 4 KiB random I/O is the datasheet point itself

    def per_op(lat: float, iops: float, write: bool) -> tuple[float, float]:
        if not needs_bw:
            return lat, iops
        bw = dev.seq_bps(write, "block-device model")
        if sequential:
            if dev.kind == "hdd":
                t = float(block_bytes) / bw + dev.overhead_s
                return t, 1.0 / t
            return lat + extra / bw, bw / float(block_bytes)
        return lat + extra / bw, 1.0 / (1.0 / iops + extra / bw)

    # sequential SSD access starts from the datasheet's sequential QD1 latency when it gives one
    seq_ssd = sequential and dev.kind != "hdd"
    tr, cr = per_op(dev.seq_read_latency_s if seq_ssd and dev.seq_read_latency_s is not None else dev.read_latency_s,
                    dev.read_iops, False)
    tw, cw = per_op(dev.seq_write_latency_s if seq_ssd and dev.seq_write_latency_s is not None else dev.write_latency_s,
                    dev.write_iops, True)
    t1 = float(mix_service_s(tr, tw, p))
    cap = float(mix_iops(cr, cw, p))
    servers = float(dev.parallelism) if dev.parallelism is not None else max(1.0, cap * t1)
    return t1, cap, servers


def device_power_w(dev: DeviceSpec, utilisation):
    """Linear power between idle and active by busy share (vectorised; the part must give both)."""
    u = np.clip(np.asarray(utilisation, float), 0.0, 1.0)
    idle, active = dev.power_figures("device power model")
    return idle + (active - idle) * u


def endurance_years(dev: DeviceSpec, write_bytes_per_s):
    """Years until the rated endurance is used up at a steady host write rate (inf if unrated/no writes)."""
    total = dev.endurance_total_bytes()
    w = np.asarray(write_bytes_per_s, float)
    if total is None:
        return np.full_like(w, np.inf)
    with np.errstate(divide="ignore"):
        return np.where(w > 0, total / (w * 365.0 * 86400.0), np.inf)
