"""Block devices (SSD, HDD, SAN LUN) behind one interface, for swap and for storage.

A device is a multi-server station (modelling guide §4.1): QD1 latency ``t1`` per request and a
saturated rate ``IOPS_max``; by Little's law at saturation its internal parallelism is
``c = IOPS_max * t1``. Reads and writes mix harmonically. Response time under an offered open
load comes from M/M/c (Erlang C). The storage model extends this module (HDD mechanics, power,
RAID); the memory model reads it for swap devices.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from densim.models.queueing import mmc_response_s
from densim.units import Bytes, BytesPerSecond, PerSecond, PosSeconds, Watts

DeviceKind = Literal["hdd", "sata_ssd", "sas_ssd", "nvme_ssd", "san_lun", "dram", "other"]


class DeviceSpec(BaseModel):
    """Datasheet figures of one block device (4 KiB random I/O unless stated)."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    name: str
    kind: DeviceKind
    read_latency_s: PosSeconds = Field(alias="read_latency", description="random 4 KiB read latency at queue depth 1")
    write_latency_s: PosSeconds = Field(alias="write_latency", description="random 4 KiB write latency at queue depth 1")
    read_iops: PerSecond = Field(gt=0, description="random 4 KiB read IOPS at full depth (datasheet, QD32)")
    write_iops: PerSecond = Field(gt=0, description="random 4 KiB write IOPS at full depth")
    parallelism: float | None = Field(
        default=None, gt=0, description="internal parallel units; default IOPS x QD1 latency (Little's law)"
    )
    seq_read_bps: BytesPerSecond | None = Field(default=None, alias="seq_read")
    seq_write_bps: BytesPerSecond | None = Field(default=None, alias="seq_write")
    capacity_bytes: Bytes | None = Field(default=None, alias="capacity")
    idle_power_w: Watts | None = Field(default=None, alias="idle_power")
    active_power_w: Watts | None = Field(default=None, alias="active_power")
    price_usd: float | None = None
    price_date: str | None = None
    source: str = ""
    notes: str = ""

    def servers(self, read_fraction: float = 1.0) -> float:
        """Effective number of parallel servers for a read/write mix."""
        if self.parallelism is not None:
            return float(self.parallelism)
        s = mix_service_s(self.read_latency_s, self.write_latency_s, read_fraction)
        return max(1.0, float(mix_iops(self.read_iops, self.write_iops, read_fraction) * s))


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
