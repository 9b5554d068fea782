"""Failures and HA: which parts fail when, and how the cluster restarts what they ran.

Example::

    failures:
      domains:                           # failure domains over hosts (a rack, a PDU, a blade chassis)
        - {name: rack-a, kind: rack, hosts: [big-0, small-1, small-2]}
        - {name: rack-b, kind: rack, hosts: [small-3, small-4]}
      events:                            # a failure trace inline: one row per failure
        - {time: 1 d, target: big-0, duration: 4 h}
      trace: failures.csv                # or a file with columns time, target, duration
      random:                            # or failures drawn per part (seeded)
        host: {mtbf: 5 y, mttr: 8 h}     # or {afr: 0.02, mttr: 8 h}
        domains: {rack: {mtbf: 50 y, mttr: 2 h}}
      ha:
        admission: n_plus_k              # off | n_plus_k | percent
        host_failures: 1                 # k of N+k
        percent: 25                      # with admission: percent
        per_domain: rack                 # also reserve for the loss of the largest domain of this kind
        detection: 30 s                  # failure -> restart attempt
        boot_delay: 2 min                # placed -> up again
        restart_priority: {db: high}     # VM group -> high | medium | low (default medium)

Times in a trace are seconds (or unit strings) from the start of the run. A target is a host name
(``<group>-<index>`` as in hosts.parquet), a domain name, or (storage model on) a drive or controller of a
datastore: ``datastore:<name>/drive:<i>``, ``datastore:<name>/controller:<i>`` (``i`` from 0), for a
``per-host`` datastore ``datastore:<name>@<host>/drive:<i>``. A drive failure's duration is the time
until it is replaced; the array then rebuilds (``rebuild``). A capacity disk of an HCI datastore
(``storage.hci``) is ``datastore:<hci name>@<host>/drive:<i>`` (``i`` below ``disks_per_host``): its data is
rebuilt across the cluster from the failure on (docs/background/hci.md).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from densim.units import BytesPerSecond, PosSeconds, Seconds

_CFG = ConfigDict(defer_build=True, allow_inf_nan=False, frozen=True, extra="forbid", populate_by_name=True)

PRIORITIES = {"high": 2, "medium": 1, "low": 0}


class FailureDomain(BaseModel):
    """A set of hosts that fail together (one rack, one PDU, one blade chassis)."""

    model_config = _CFG

    name: str
    kind: str = Field(default="domain", description="rack, pdu, chassis, ...: the kind random failures and per_domain name")
    hosts: list[str] = Field(min_length=1, description="host names (hosts.parquet) or host group names (every host of the group)")


class FailureEvent(BaseModel):
    """One failure: ``target`` (host or domain) is down over ``[time, time + duration)``."""

    model_config = _CFG

    time_s: Seconds = Field(alias="time", description="from the start of the run")
    target: str
    duration_s: PosSeconds = Field(alias="duration")


class FailureRate(BaseModel):
    """Time to failure exponential with mean ``mtbf`` (or from an annual failure rate), repair time exponential with mean ``mttr``."""

    model_config = _CFG

    mtbf_s: PosSeconds | None = Field(default=None, alias="mtbf", description="mean time between failures")
    afr: float | None = Field(default=None, gt=0, lt=1, description="annual failure rate (0-1): MTBF = -1 y / ln(1 - AFR)")
    mttr_s: PosSeconds = Field(alias="mttr", description="mean time to repair")

    @model_validator(mode="after")
    def _one(self) -> "FailureRate":
        if (self.mtbf_s is None) == (self.afr is None):
            raise ValueError("give one of mtbf and afr")
        return self


class DriveFailureRate(BaseModel):
    """Like :class:`FailureRate`, but ``mtbf``/``afr`` may come from the catalog device (its ``mtbf`` or ``afr``);
    ``mttr`` is the time until the failed drive is replaced (then the array rebuilds)."""

    model_config = _CFG

    mtbf_s: PosSeconds | None = Field(default=None, alias="mtbf", description="default: the catalog device's mtbf (or afr)")
    afr: float | None = Field(default=None, gt=0, lt=1, description="annual failure rate (0-1)")
    mttr_s: PosSeconds = Field(alias="mttr", description="mean time to replace the drive (a hot spare: minutes)")

    @model_validator(mode="after")
    def _at_most_one(self) -> "DriveFailureRate":
        if self.mtbf_s is not None and self.afr is not None:
            raise ValueError("give at most one of mtbf and afr")
        return self


class RandomFailures(BaseModel):
    model_config = _CFG

    host: FailureRate | None = Field(default=None, description="every host fails independently at this rate")
    domains: dict[str, FailureRate] = Field(default_factory=dict, description="per domain kind: every domain of the kind")
    drive: DriveFailureRate | None = Field(default=None, description="every drive of every datastore array (storage model)")
    controller: FailureRate | None = Field(default=None, description="every controller of every datastore that has one")


class RebuildSettings(BaseModel):
    """How fast a replaced drive is rebuilt (storage model)."""

    model_config = _CFG

    share: float = Field(default=0.3, gt=0, le=1, description="share of the drive time the rebuild takes of what foreground "
                                                              "I/O leaves (estimate; PERC/MegaRAID 'rebuild rate' setting)")
    rate_Bps: BytesPerSecond | None = Field(default=None, alias="rate", description="rebuild rate on an idle array (default: "
                                                                                   "share x the drive's sequential write rate)")


class HaSettings(BaseModel):
    """Admission control and restarts (vSphere HA's model)."""

    model_config = _CFG

    admission: Literal["off", "n_plus_k", "percent"] = Field(
        default="off", description="off; n_plus_k: keep the capacity of the k largest hosts free; percent: keep a share "
                                   "of the cluster's capacity free. A VM whose power-on would eat into it is refused "
                                   "(waits, or is not placed in a run without lifetimes); restarts are never refused")
    host_failures: int = Field(default=1, ge=0, strict=True, description="k of N+k")
    percent: float = Field(default=0.0, ge=0, lt=100, description="CPU and memory kept free (admission: percent)")
    per_domain: str | None = Field(default=None, description="also keep free the capacity of the largest failure domain of this kind")
    detection_s: Seconds = Field(default=30.0, alias="detection", description="failure to restart attempt (estimate: vSphere HA declares a host dead after about 15-30 s)")
    boot_delay_s: Seconds = Field(default=120.0, alias="boot_delay", description="a restarted VM is placed, then up this long after (estimate: guest boot 1-3 min)")
    boot_read_Bps: BytesPerSecond = Field(default=0.0, ge=0, alias="boot_read", description="disk read bytes/s of a restarted VM while it boots, on its datastore (needs storage: {model: queueing})")
    restart_priority: dict[str, Literal["high", "medium", "low"]] = Field(
        default_factory=dict, description="VM group name -> restart priority (default medium); ties restart in VM order")
    restart_policy: str | None = Field(default=None, description="placement of restarts (default: the placement policy's online form)")


class FailureSettings(BaseModel):
    """``failures:``: host and domain failures from a trace or from rates, and HA."""

    model_config = _CFG

    domains: list[FailureDomain] = Field(default_factory=list)
    events: list[FailureEvent] = Field(default_factory=list)
    trace: str | None = Field(default=None, description="CSV with columns time, target, duration (relative to the scenario file)")
    random: RandomFailures | None = None
    ha: HaSettings = Field(default_factory=HaSettings)
    rebuild: RebuildSettings = Field(default_factory=RebuildSettings)

    @model_validator(mode="after")
    def _names(self) -> "FailureSettings":
        seen: set[str] = set()
        for d in self.domains:
            if d.name in seen:
                raise ValueError(f"failure domain {d.name!r} named twice")
            seen.add(d.name)
        return self
