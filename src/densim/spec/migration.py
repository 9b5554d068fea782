"""Live migration: maintenance evacuations and a DRS-style balancer (scenario section ``migration``).

``model: none`` (the default) switches the mechanism off; ``model: precopy`` moves VMs during the
run with the pre-copy model of :mod:`densim.models.migration`. Example::

    migration:
      model: precopy
      bandwidth: 10 Gbit/s          # each host's migration link
      storage_share: 0.3            # converged fabric: share of that link busy with storage traffic
      dirty_rate: 200 MB/s          # page dirtying of a VM at 100 % CPU (scaled by its CPU use)
      wws_fraction: 0.1             # writable working set, share of the VM's memory
      zero_fraction: 0.0            # share of the VM's memory never touched (zero pages, sent as flags)
      zero_scan_rate: 19.9 GB/s     # one migration thread reading pages to find the zero ones
      downtime_target: 300 ms
      max_rounds: 30
      maintenance:
        - {host: "hosts0#3", at: 2 h}   # evacuate this host at 2 h; it takes no VM afterwards
      balance:
        threshold: 0.1               # stdev of host CPU utilisation that triggers the balancer
        interval: 5 min
        budget_per_interval: 4       # migrations at most per interval
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from densim.units import BytesPerSecond, PosSeconds, Seconds

# One thread's memory read rate (checking pages for zero): single-thread STREAM Triad of a Xeon E5-2690 v3
# (Haswell-EP), 19.9 GB/s (J. McCalpin, Intel community forum, "single core bandwidth: haswell vs. broadwell vs.
# skylake", community.intel.com/t5/Software-Tuning-Performance/single-core-bandwidth-haswell-vs-broadwell-vs-skylake/
# td-p/1126086)
ZERO_SCAN_BPS = 19.9e9

_CFG = ConfigDict(defer_build=True, allow_inf_nan=False, frozen=True, extra="forbid", populate_by_name=True)


class MaintenanceSpec(BaseModel):
    """One host put into maintenance mode: its VMs are evacuated at ``at``."""

    model_config = _CFG
    host: str = Field(description="host name as in hosts.parquet (e.g. 'hosts0#3')")
    at_s: Seconds = Field(alias="at", description="when the evacuation starts, from the start of the run")


class BalanceSpec(BaseModel):
    """A DRS-style load balancer: looks every ``interval`` at the last interval's host CPU utilisation."""

    model_config = _CFG
    threshold: float = Field(default=0.1, gt=0, le=1,
                             description="act when the stdev of powered-on hosts' CPU utilisation exceeds this")
    interval_s: PosSeconds = Field(default=300.0, alias="interval", description="how often the balancer looks (vSphere DRS: 5 min)")
    budget_per_interval: int = Field(default=4, ge=0, description="migrations at most per interval")
    min_gain: float = Field(default=0.0, ge=0, description="a move must lower the stdev by at least this much")
    benefit_horizon_s: PosSeconds | None = Field(
        default=None, alias="benefit_horizon",
        description="how long a move's benefit is counted in the cost-benefit test (default: interval)")


class MigrationSettings(BaseModel):
    """Pre-copy migrations (memory copied while the VM runs; see docs/background/live-migration.md)."""

    model_config = _CFG
    model: Literal["none", "precopy"] = "none"
    bandwidth_bps: BytesPerSecond = Field(default=1.25e9, alias="bandwidth", gt=0,
                                          description="each host's migration link (estimate: one 10 GbE port)")
    storage_share: float = Field(default=0.0, ge=0, lt=1,
                                 description="converged fabric: share of the link used by storage traffic")
    dirty_rate_bps: BytesPerSecond = Field(default=100e6, alias="dirty_rate",
                                           description="page dirtying of a VM at 100 % CPU, scaled by its CPU use (estimate)")
    wws_fraction: float = Field(default=0.1, gt=0, le=1,
                                description="writable working set as a share of the VM's memory (estimate)")
    zero_fraction: float = Field(default=0.0, ge=0, lt=1,
                                 description="share of each VM's memory never touched (zero pages): pre-copy's first round "
                                 "sends it as a few-byte flag per page (QEMU, vMotion, Xen); 0: every page sent")
    zero_scan_bps: BytesPerSecond = Field(default=ZERO_SCAN_BPS, alias="zero_scan_rate", gt=0,
                                          description="read rate of the one migration thread checking pages for zero "
                                          "(single-thread memory read bandwidth)")
    downtime_target_s: PosSeconds = Field(default=0.3, alias="downtime_target",
                                          description="stop-and-copy when the remainder fits this (QEMU default 300 ms)")
    max_rounds: int = Field(default=30, ge=1, description="live pre-copy rounds at most")
    resume_s: Seconds = Field(default=0.02, alias="resume", description="VM start-up on the destination (estimate)")
    max_concurrent: int = Field(default=8, ge=1, description="migrations at once per host (vCenter: 8 on 10 GbE, 4 on 1 GbE)")
    cpu_cores_per_gbps: float = Field(default=0.1, ge=0,
                                      description="cores busy on each host per Gbit/s of link (vMotion: 10 % of a core per GbE)")
    cpu_cores_min: float = Field(default=0.3, ge=0, description="at least this many cores busy on a host while it migrates (vMotion: 30 %)")
    slowdown: float = Field(default=0.1, ge=0, le=1,
                            description="share of a migrating VM's CPU work lost while pre-copy runs (CloudSim: 10 %)")
    maintenance: list[MaintenanceSpec] = Field(default_factory=list, description="hosts to evacuate, and when")
    balance: BalanceSpec | None = Field(default=None, description="DRS-style balancer (off when absent)")

    @model_validator(mode="after")
    def _wws_in_touched(self):
        check_zero_share(self.zero_fraction, self.wws_fraction)
        return self


def check_zero_share(zero_fraction: float, wws_fraction: float) -> None:
    """The writable working set is touched memory: it must fit in the share that is not zero."""
    if zero_fraction + wws_fraction > 1.0 + 1e-12:
        raise ValueError(f"zero_fraction ({zero_fraction:g}) + wws_fraction ({wws_fraction:g}) > 1: the writable working "
                         "set is touched memory, it cannot overlap the never-touched (zero) share")
