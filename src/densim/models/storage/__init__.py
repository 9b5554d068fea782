"""Storage systems: arrays (JBOD, RAID 0/1/10/5/6), controllers, PCIe links, enclosures, host CPU.

A storage system is turned into a list of queueing *stations* (one per device, controller, link and
the host CPU), each with a number of visits per front-end I/O, a service time per visit and a number
of parallel servers (modelling guide §0.4, §4). Then

* **open** workloads (arrival rate) are solved station by station with M/M/c (Erlang C), or the
  Allen-Cunneen/Kingman G/G/c form when arrivals or service are bursty
  (:func:`densim.models.queueing.ggc_wait_s`);
* **closed** workloads (a fixed number of outstanding I/Os, e.g. workers x queue depth as Iometer
  or fio run them, plus optional think time) are solved with exact MVA with Seidmann multi-server
  stations (:func:`densim.models.queueing.mva`).

Both report throughput, mean and p99 latency, utilisation per component and the bottleneck (the
station with the largest demand per server, ``D_k / c_k``, which bounds throughput at
``X <= c_k / D_k``). :func:`bounds` lists every resource's own limit on the front-end IOPS, so an
array never scales linearly past its controllers: the drives (``n x`` their rate over the RAID
back-end I/Os), each controller's I/O processor (``max_iops``) or bandwidth cap, whichever is
slower per I/O, its PCIe slot (``lanes x`` the generation's lane rate) and the host CPU (``cores x
Hz / cycles_per_io`` over the I/Os that cross the host); the smallest is the binding one, named
with its part and limit (``IoResult.bound``).

Controllers: the service of one back-end I/O on the I/O processor is ``max(1 / max_iops,
B / bandwidth)``; the firmware path ``latency`` is a pure delay (it adds to every I/O's latency
but not to the processor's occupancy, so the IOPS cap stays ``max_iops``).

RAID (modelling guide §4.2, [S35]): a front-end read is one back-end read; a small front-end write
costs ``P_w`` back-end I/Os: JBOD/RAID 0: 1 write; RAID 1/10: 2 writes; RAID 5: 2 reads + 2 writes;
RAID 6: 3 reads + 3 writes. Back-end I/Os spread evenly over the set's drives, which sets every
station's load (throughput and utilisation).

Write latency is a **fork-join**: the sub-I/Os of one phase go to different drives at the same time
and the write completes when the slowest does. A RAID 1/10 write is one phase of 2 parallel writes
(the mirror pair); a RAID 5 small write is a read-modify-write, 2 parallel reads (old data, old
parity) then 2 parallel writes; RAID 6 is 3 + 3 (Chen et al., *RAID: high-performance, reliable
secondary storage*, ACM Computing Surveys 26(2), 1994, §3). A phase of width ``m`` takes the
expected maximum of ``m`` member responses, ``E[max] = g_m x R`` with ``R`` one member's mean
response (:func:`densim.models.queueing.max_iid_factors`: members independent, response times
gamma-distributed with the station's mean and variance; ``g_m = H_m``, 1.5 for a mirror, when the
response is exponential). Service is exponential unless the workload sets ``service_cv2`` (the same
assumption as every station's M/M/c wait and the p99), so an unloaded RAID 1 write takes 1.5 x one
drive's time, not 2 x as the serial-visit (product-form) treatment had it; independence makes it an
upper bound under load (Thomasian 2014, eq. (1)). Each :class:`Station` carries its visits split by
fork width (``forks``); the closed solver applies ``H_m / m`` per member in MVA's response time.

Host CPU (§4.4): ``cycles_per_io`` per I/O crossing the host's block stack; with a plain HBA the
host does the RAID work so every back-end I/O costs cycles, with a RAID controller only front-end
I/Os do.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator
from densim._distributions import gamma_ppf
from densim.errors import PartError
from densim.models.devices import REF_BLOCK_BYTES, DeviceSpec, block_service, device_power_w
from densim.models.queueing import erlang_c, ggc_wait_s, max_iid_factors, mva
from densim.units import BytesPerSecond, PerSecond, Seconds, Watts

_CFG = ConfigDict(defer_build=True, frozen=True, extra="forbid", populate_by_name=True)

RaidLevel = Literal["jbod", "raid0", "raid1", "raid10", "raid5", "raid6"]

#: back-end (reads, writes) caused by one small front-end write, per RAID level ([S35])
RAID_WRITE_IOS: dict[str, tuple[int, int]] = {
    "jbod": (0, 1),
    "raid0": (0, 1),
    "raid1": (0, 2),
    "raid10": (0, 2),
    "raid5": (2, 2),
    "raid6": (3, 3),
}
#: fewest drives a set of each level can have
RAID_MIN_DRIVES = {"jbod": 1, "raid0": 1, "raid1": 2, "raid10": 4, "raid5": 3, "raid6": 4}

#: usable PCIe bandwidth per lane and direction by generation, bytes/s (after line coding:
#: 8b/10b for 1.x/2.x, 128b/130b from 3.0) [S25b]
PCIE_LANE_BPS = {1: 250e6, 2: 500e6, 3: 984.6e6, 4: 1969.2e6, 5: 3938.5e6}


def raid_write_phases(level: str) -> tuple[int, ...]:
    """Widths of the fork-join phases of one small front-end write: (1,), (2,), (2, 2), (3, 3).

    Every phase's sub-I/Os go to different drives in parallel; the phases run one after the other
    (RAID 5/6 read old data and parity, then write the new ones).
    """
    return tuple(m for m in RAID_WRITE_IOS[level] if m > 0)


def raid_write_penalty(level: str) -> int:
    """Back-end I/Os per small front-end write ``P_w``: 1, 1, 2, 2, 4, 6."""
    r, w = RAID_WRITE_IOS[level]
    return r + w


def raid_check(level: str, drives: int) -> str | None:
    """The problem with a set of ``drives`` at ``level``, or None."""
    if level not in RAID_WRITE_IOS:
        return f"unknown RAID level {level!r}; valid: {', '.join(RAID_WRITE_IOS)}"
    n_min = RAID_MIN_DRIVES[level]
    if drives < n_min:
        return f"{level} needs at least {n_min} drives, got {drives}"
    if level in ("raid1", "raid10") and drives % 2:
        return f"{level} needs an even number of drives, got {drives}"
    return None


def raid_usable_bytes(level: str, drives: int, capacity_bytes: float) -> float:
    """Usable capacity: n C (JBOD, RAID 0), n C / 2 (RAID 1/10), (n-1) C, (n-2) C (RAID 5/6)."""
    n = drives
    factor = {"jbod": n, "raid0": n, "raid1": n / 2, "raid10": n / 2, "raid5": n - 1, "raid6": n - 2}[level]
    return float(factor * capacity_bytes)


def raid_functional_iops(level: str, raw_iops, read_fraction):
    """Front-end IOPS a set sustains from raw back-end IOPS: ``raw / (r + (1-r) P_w)``.

    Every front-end write costs ``P_w`` back-end I/Os (EMC's form, [S35]). The shorthand
    ``raw (r + (1-r)/P_w)`` quoted in [S35] is more optimistic (it scales IOPS instead of I/O
    time) and is not used.
    """
    r = np.asarray(read_fraction, float)
    return np.asarray(raw_iops, float) / (r + (1.0 - r) * raid_write_penalty(level))


def pcie_bandwidth_bps(gen: int, lanes: int) -> float:
    """Usable one-direction bandwidth of a PCIe link of generation ``gen`` and ``lanes`` width."""
    if gen not in PCIE_LANE_BPS:
        raise ValueError(f"PCIe generation must be one of {sorted(PCIE_LANE_BPS)}, got {gen}")
    return PCIE_LANE_BPS[gen] * lanes


# --------------------------------------------------------------------------------------------
# catalog parts


class ControllerSpec(BaseModel):
    """A storage controller or HBA: ports, IOPS and bandwidth caps, host link, power, price."""

    model_config = _CFG

    name: str
    kind: Literal["hba", "raid", "onboard", "nvme-direct"] = "hba"
    ports: int = Field(gt=0, description="drive-side lanes (SAS/SATA phys); a controller needs at least one")
    max_devices: int | None = Field(
        default=None, gt=0, description="drives it can address (more than ports behind expanders); default: ports"
    )
    max_iops: PerSecond = Field(gt=0, description="I/O processor cap, small random I/Os per second")
    bandwidth_bps: BytesPerSecond = Field(alias="bandwidth", gt=0, description="throughput cap")
    latency_s: Seconds = Field(default=0.0, alias="latency",
                               description="added per-I/O latency of the firmware path (a delay: it does not lower max_iops)")
    pcie_gen: int = Field(ge=1, le=5, description="PCIe generation of the host slot (bounds the host link)")
    pcie_lanes: int = Field(gt=0, description="PCIe lanes of the host slot")
    power_w: Watts = Field(default=0.0, alias="power")
    price_usd: float | None = Field(default=None, ge=0)
    price_date: str | None = None
    source: str = ""
    notes: str = ""

    @model_validator(mode="after")
    def _complete(self) -> "ControllerSpec":
        if self.max_devices is None:  # direct-attach: one drive per port
            object.__setattr__(self, "max_devices", self.ports)
        return self

    @property
    def devices_limit(self) -> int:
        return int(self.max_devices)

    @property
    def link_bps(self) -> float:
        return pcie_bandwidth_bps(self.pcie_gen, self.pcie_lanes)


class EnclosureSpec(BaseModel):
    """A drive enclosure: a JBOD shelf, or a server's internal drive cage (``rack_units: 0``)."""

    model_config = _CFG

    name: str
    bays: int = Field(gt=0)
    form_factor: Literal["2.5in", "3.5in", "u.2", "any"] = "any"
    rack_units: float = Field(default=0.0, ge=0)
    power_w: Watts = Field(default=0.0, alias="power", description="base power without drives (fans, PSUs, expanders)")
    price_usd: float | None = Field(default=None, ge=0)
    price_date: str | None = None
    source: str = ""
    notes: str = ""


class IoStack(BaseModel):
    """Host software cost per I/O (modelling guide §4.4)."""

    model_config = _CFG

    name: str
    cycles_per_io: float = Field(gt=0)
    source: str = ""
    notes: str = ""


# --------------------------------------------------------------------------------------------
# resolved system (built by densim.spec.storage from a scenario and the catalog)


@dataclass(frozen=True)
class ArrayUnit:
    """One RAID set / JBOD group of identical drives behind a controller group."""

    name: str
    device: DeviceSpec
    drives: int
    raid: str = "jbod"
    controller: ControllerSpec | None = None
    controllers: int = 1
    share: float = 1.0  # relative share of the workload's I/Os
    group: str | None = None  # controller group name; arrays naming the same group share its controllers

    def __post_init__(self) -> None:
        problem = raid_check(self.raid, self.drives)
        if problem:
            raise ValueError(problem)
        if self.controllers <= 0:
            raise ValueError("controllers must be > 0")
        if self.share < 0:
            raise ValueError("share must be >= 0")

    @property
    def group_key(self) -> str:
        return self.group or f"{self.name}:{self.controller.name if self.controller else 'direct'}"

    @property
    def usable_bytes(self) -> float:
        return raid_usable_bytes(self.raid, self.drives, self.device.capacity("storage model"))


@dataclass(frozen=True)
class HostCpuIo:
    """The host CPUs that run the I/O stack."""

    cores: int
    clock_hz: float
    cycles_per_io: float = 0.0

    def __post_init__(self) -> None:
        if self.cores <= 0:
            raise ValueError("cores must be > 0")
        if self.clock_hz <= 0:
            raise ValueError("clock must be > 0")


@dataclass(frozen=True)
class IoPattern:
    """What the I/Os look like."""

    read_fraction: float = 1.0
    block_bytes: float = REF_BLOCK_BYTES
    sequential: bool = False
    arrival_cv2: float = 1.0  # squared coefficient of variation of inter-arrival times (open)
    service_cv2: float = 1.0  # of service times


@dataclass(frozen=True)
class Station:
    """A queueing station: visits per front-end I/O, service per visit, parallel servers.

    ``forks`` splits the visits by fork-join width: ``((v1, 1), (v2, 2))`` says ``v1`` visits per
    front-end I/O are plain ones and ``v2`` are one member's share of 2-wide fork-joins (a mirror
    write: both drives at once, done when the slower is). Empty: every visit is plain.
    """

    name: str
    kind: str  # device, controller, link, cpu, delay
    component: str  # array or controller group or host it belongs to
    visits: float  # per front-end I/O
    service_s: float  # per visit, on one server
    servers: float
    forks: tuple[tuple[float, int], ...] = ()
    delay_s: float = 0.0  # fixed latency per visit that does not occupy a server (controller firmware path)
    part: str = ""  # catalog part (or "host") the station stands for
    limit: str = ""  # what limits one server, for the bound's description
    resource: str = ""  # how the bounds name it ("hba", "raid controller", "pcie slot"); default: kind

    @property
    def demand_s(self) -> float:
        return self.visits * self.service_s

    @property
    def parts(self) -> tuple[tuple[float, int], ...]:
        """``(visits, fork width)`` pairs; ``((visits, 1),)`` for a station without forks."""
        return self.forks or ((self.visits, 1),)


@dataclass
class StationResult:
    name: str
    kind: str
    component: str
    utilisation: float
    residence_s: float  # this station's share of the mean latency (visits x response; H_m / m of it per fork member)
    queue: float  # mean number of I/Os here


@dataclass
class IoResult:
    mode: str
    throughput_iops: float
    mean_latency_s: float
    p99_latency_s: float
    outstanding: float  # mean I/Os in the system (closed: the population)
    think_s: float
    bandwidth_bps: float
    max_iops: float  # asymptotic bound 1 / max(D_k / c_k)
    bottleneck: str
    saturated: bool
    stations: list[StationResult] = field(default_factory=list)
    bounds: list[dict] = field(default_factory=list)  # every resource's IOPS limit, binding first (:func:`bounds`)

    @property
    def bound(self) -> str:
        """The binding resource, e.g. ``hba lsi-9210-8i x5 (1,500,000 IOPS: I/O processor ...)``."""
        return bound_text(self.bounds[0]) if self.bounds else ""

    def little_residual(self) -> float:
        """``N - X (R + Z)``; zero by Little's law (closed results)."""
        return self.outstanding - self.throughput_iops * (self.mean_latency_s + self.think_s)

    def components(self) -> list[dict]:
        """Utilisation and residence per component (stations of one component merged: max util)."""
        out: dict[tuple[str, str], dict] = {}
        for s in self.stations:
            key = (s.kind, s.component)
            d = out.setdefault(key, {"component": s.component, "kind": s.kind, "stations": 0, "utilisation": 0.0,
                                     "residence_s": 0.0, "queue": 0.0})
            d["stations"] += 1
            d["utilisation"] = max(d["utilisation"], s.utilisation)
            d["residence_s"] += s.residence_s
            d["queue"] += s.queue
        return list(out.values())

    def as_dict(self) -> dict:
        return {
            "mode": self.mode,
            "throughput_iops": self.throughput_iops,
            "mean_latency_s": self.mean_latency_s,
            "p99_latency_s": self.p99_latency_s,
            "outstanding": self.outstanding,
            "bandwidth_bps": self.bandwidth_bps,
            "max_iops": self.max_iops,
            "bottleneck": self.bottleneck,
            "bound": self.bound,
            "bounds": self.bounds,
            "saturated": self.saturated,
            "components": self.components(),
        }


def build_stations(arrays: list[ArrayUnit], cpu: HostCpuIo | None, pattern: IoPattern) -> list[Station]:
    """The queueing stations of a storage system for one I/O pattern."""
    if not arrays:
        raise ValueError("a storage system needs at least one array")
    total_share = sum(a.share for a in arrays)
    if total_share <= 0:
        raise ValueError("array shares must add up to more than 0")
    r = pattern.read_fraction
    b = pattern.block_bytes
    stations: list[Station] = []
    host_ios = 0.0  # I/Os crossing the host block stack per front-end I/O
    # controllers shared by several arrays are keyed by name; their load adds up
    ctrl_load: dict[str, list] = {}
    for a in arrays:
        f = a.share / total_share
        wr, ww = RAID_WRITE_IOS[a.raid]
        be_reads = r + (1 - r) * wr
        be_writes = (1 - r) * ww
        be = be_reads + be_writes
        be_read_frac = be_reads / be if be > 0 else 1.0
        t1, cap, c = block_service(a.device, b, be_read_frac, pattern.sequential)
        # per-visit service on one of c servers such that c / s = cap and unloaded latency = t1
        s_dev = c / cap
        v_dev = f * be / a.drives
        forks = _device_forks(a, f, r)
        lim = f"{cap:,.0f} back-end IOPS each, {be:.2f} per I/O ({a.raid})"
        for i in range(a.drives):
            stations.append(Station(f"{a.name}/{a.device.name}#{i + 1}", "device", a.name, v_dev, s_dev, c, forks,
                                    part=a.device.name, limit=lim, resource="drives"))
        if a.controller is not None:
            ctl = a.controller
            through = be if ctl.kind in ("hba", "onboard", "nvme-direct") else 1.0
            entry = ctrl_load.setdefault(a.group_key, [ctl, a.controllers, 0.0, 0.0, 0])
            if entry[0] != ctl or entry[1] != a.controllers:
                raise ValueError(f"arrays sharing controller group {a.group_key!r} name different controllers")
            entry[2] += f * be  # back-end I/Os through the controller's I/O processor
            entry[3] += f * through  # I/Os whose data cross the host link
            entry[4] += a.drives
            host_ios += f * through
        else:
            host_ios += f * be  # direct attach (NVMe, onboard ports): the host does the RAID work
    for key, (ctl, n, be_ios, link_ios, drives) in ctrl_load.items():
        if drives > n * ctl.devices_limit:
            raise ValueError(
                f"controller group {key!r}: {drives} drives exceed {n} x {ctl.name} "
                f"({ctl.devices_limit} drives each; ports {ctl.ports})"
            )
        s_ctl, ctl_limit = controller_service(ctl, b)
        s_link = b / ctl.link_bps
        link_limit = f"PCIe {ctl.pcie_gen}.0 x{ctl.pcie_lanes}, {ctl.link_bps / 1e9:.3g} GB/s each"
        for j in range(n):
            stations.append(Station(f"{key}/{ctl.name}#{j + 1}", "controller", key, be_ios / n, s_ctl, 1.0,
                                    delay_s=ctl.latency_s, part=ctl.name, limit=ctl_limit,
                                    resource="hba" if ctl.kind == "hba" else f"{ctl.kind} controller"))
            stations.append(Station(f"{key}/pcie-gen{ctl.pcie_gen}x{ctl.pcie_lanes}#{j + 1}", "link", key,
                                    link_ios / n, s_link, 1.0, part=ctl.name, limit=link_limit,
                                    resource="pcie slot"))
    if cpu is not None and cpu.cycles_per_io > 0:
        stations.append(Station("host-cpu", "cpu", "host", host_ios, cpu.cycles_per_io / cpu.clock_hz, float(cpu.cores),
                                part="host", resource="cpu", limit=f"{cpu.cycles_per_io:,.0f} cycles per I/O on {cpu.cores} cores at "
                                                   f"{cpu.clock_hz / 1e9:.3g} GHz"))
    return stations


def controller_service(ctl: ControllerSpec, block_bytes: float) -> tuple[float, str]:
    """Occupancy of a controller's I/O processor per back-end I/O of ``block_bytes``, and which cap sets it.

    ``max(1 / max_iops, B / bandwidth)``: the I/O-processor cap for small blocks, the bandwidth
    cap for large ones (LSI 9210-8i: 300,000 IOPS and 2.5 GB/s cross at 8.3 kB). The firmware
    ``latency`` is not part of it (a delay, see the module docstring).
    """
    per_io = 1.0 / ctl.max_iops
    per_byte = block_bytes / ctl.bandwidth_bps
    if per_io >= per_byte:
        return per_io, f"I/O processor {ctl.max_iops:,.0f} IOPS each"
    return per_byte, f"bandwidth {ctl.bandwidth_bps / 1e9:.3g} GB/s each"


def bounds(stations: list[Station], block_bytes: float) -> list[dict]:
    """Every resource's limit on the front-end IOPS, the binding one first.

    A resource is a group of identical stations of one kind and component (the drives of an
    array, the controllers of a group and their PCIe slots, the host CPU). Its limit is
    ``min_k c_k / D_k`` over its stations (the busiest saturates first), ``D_k = visits x
    service``. Stations without demand (a PCIe slot no I/O crosses) set no limit.
    """
    groups: dict[tuple[str, str, str], list[Station]] = {}
    for st in stations:
        groups.setdefault((st.kind, st.component, st.part), []).append(st)
    out = []
    for (kind, comp, part), sts in groups.items():
        lim = [st.servers / st.demand_s for st in sts if st.demand_s > 0]
        if not lim:
            continue
        x = float(min(lim))
        out.append({"resource": sts[0].resource or kind, "component": comp, "part": part, "count": len(sts),
                    "limit": sts[0].limit, "max_iops": x, "max_bandwidth_bps": x * block_bytes})
    out.sort(key=lambda d: d["max_iops"])
    return out


def bound_text(b: dict) -> str:
    """``hba lsi-9210-8i x5 (1,500,000 IOPS: I/O processor 300,000 IOPS each)``."""
    count = f" x{b['count']}" if b["count"] > 1 else ""
    return f"{b['resource']} {b['part']}{count} ({b['max_iops']:,.0f} IOPS: {b['limit']})"


def _device_forks(a: ArrayUnit, f: float, r: float) -> tuple[tuple[float, int], ...]:
    """One drive's visits by fork width: reads are plain, each write phase of width ``m`` touches
    ``m`` of the ``n`` drives, so a drive takes ``f (1-r) m / n`` such visits per front-end I/O."""
    parts: dict[int, float] = {1: f * r / a.drives}
    for m in raid_write_phases(a.raid):
        parts[m] = parts.get(m, 0.0) + f * (1.0 - r) * m / a.drives
    return tuple((v, m) for m, v in sorted(parts.items()) if v > 0)


def _fork_parts(stations: list[Station], resp, var_resp):
    """Each station's fork parts as latency terms: visits, mean and variance of the part's response.

    A part ``(v, m)`` of station ``k`` counts ``v / m`` times per front-end I/O (the ``m`` members
    of a fork share one wait) with the moments of the maximum of ``m`` independent member
    responses (mean ``resp_k``, variance ``var_resp_k``, gamma-matched). Returns flat arrays
    ``(station index, visits, mean, variance)``; ``sum(visits * mean)`` over a station's parts is
    its contribution to the mean latency.
    """
    resp = np.asarray(resp, float)
    var_resp = np.asarray(var_resp, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        shape = np.where(var_resp > 0, resp * resp / var_resp, np.inf)
    idx, vis, mean, var = [], [], [], []
    for k, st in enumerate(stations):
        for v, m in st.parts:
            if m == 1:
                e1, e2 = 1.0, 1.0 + var_resp[k] / resp[k] ** 2 if resp[k] > 0 else 1.0
            else:
                e1, e2 = max_iid_factors(m, shape[k])
            idx.append(k)
            vis.append(v / m)
            mean.append(e1 * resp[k])
            var.append(max(e2 - e1 * e1, 0.0) * resp[k] ** 2)
    return np.array(idx, int), np.array(vis), np.array(mean), np.array(var)


def _latency_terms(stations: list[Station], idx, vis, mean, var):
    """The fork parts merged into the latency's independent terms, for the p99.

    The identical stations of one component (the drives of an array, the controllers of a group)
    are alternatives, not separate stops: a read visits one of the ``n`` drives, a mirror write
    one pair. Their parts with equal moments are merged into one term whose visits are the sum
    (``n x f r / n = f r`` for the reads), so a write on a 2-drive mirror is one visit of the
    maximum, not two half-probable ones (which would double its variance).
    """
    merged: dict[tuple, list[float]] = {}
    for i, v, m, s2 in zip(idx.tolist(), vis.tolist(), mean.tolist(), var.tolist()):
        st = stations[i]
        key = (st.component, st.kind, st.service_s, st.servers, m, s2)
        merged.setdefault(key, [0.0, m, s2])[0] += v
    terms = np.array(list(merged.values())) if merged else np.zeros((0, 3))
    return terms[:, 0], terms[:, 1], terms[:, 2]


def _latency_per_station(n: int, idx, vis, mean) -> np.ndarray:
    """Each station's contribution to the mean latency: ``sum over its parts of visits x mean``."""
    return np.bincount(idx, weights=vis * mean, minlength=n)


def _bound(stations: list[Station]) -> tuple[float, str]:
    per_server = np.array([s.demand_s / s.servers for s in stations])
    k = int(np.argmax(per_server))
    return (1.0 / per_server[k] if per_server[k] > 0 else math.inf), stations[k].name


def _p99(visits, resp, var_resp, q=0.99) -> float:
    """Quantile of the total latency: per-station residences summed, moments matched to a gamma.

    A station visited ``v <= 1`` times per I/O contributes a Bernoulli(v) visit, ``v > 1`` visits
    contribute ``v`` independent visits. Approximation: stations are treated as independent.
    """
    v = np.asarray(visits, float)
    m = np.asarray(resp, float)
    var = np.asarray(var_resp, float)
    second = var + m * m
    mean_k = v * m
    var_k = np.where(v <= 1.0, v * second - (v * m) ** 2, v * var)
    mean = float(mean_k.sum())
    tot_var = float(var_k.sum())
    if not math.isfinite(mean):
        return math.inf
    if tot_var <= 0 or mean <= 0:
        return mean
    shape = mean * mean / tot_var
    return float(gamma_ppf(q, shape, scale=tot_var / mean))


def solve_open(stations: list[Station], iops: float, pattern: IoPattern = IoPattern()) -> IoResult:
    """Open workload at ``iops`` arrivals per second: per-station M/M/c or G/G/c (Allen-Cunneen).

    Vectorised over stations: station ``k`` sees ``lambda_k = iops * visits_k`` arrivals with
    service ``S_k`` on ``c_k`` servers; its response per visit is ``R_k = S_k + W_k`` and the I/O's
    latency is ``sum_k visits_k R_k`` for plain visits, and ``g_m R_k`` once per ``m``-wide
    fork-join (module docstring).
    """
    if iops < 0:
        raise ValueError("iops must be >= 0")
    max_x, bottleneck = _bound(stations)
    v = np.array([s.visits for s in stations])
    svc = np.array([s.service_s for s in stations])
    c = np.array([s.servers for s in stations])
    lam = iops * v
    a = lam * svc
    util = a / c
    saturated = bool(np.any(util >= 1.0))
    ca2 = pattern.arrival_cv2
    cs2 = pattern.service_cv2
    w = np.asarray(ggc_wait_s(lam, svc, c, ca2, cs2), float)
    pw = np.asarray(erlang_c(c, a), float)
    with np.errstate(divide="ignore", invalid="ignore"):
        var_w = np.where(pw > 0, 2.0 * w * w / pw - w * w, 0.0)  # conditional wait ~ exponential
    r_visit = svc + w + np.array([s.delay_s for s in stations])
    if saturated:
        lat_k = v * r_visit
        p99 = math.inf
    else:
        idx, fv, fm, fvar = _fork_parts(stations, r_visit, cs2 * svc**2 + var_w)
        lat_k = _latency_per_station(len(stations), idx, fv, fm)
        p99 = _p99(*_latency_terms(stations, idx, fv, fm, fvar))
    res = [
        StationResult(s.name, s.kind, s.component, float(util[i]), float(lat_k[i]), float(lam[i] * r_visit[i]))
        for i, s in enumerate(stations)
    ]
    mean = float(np.sum(lat_k))
    return IoResult(
        mode="open",
        throughput_iops=float(iops) if not saturated else max_x,
        mean_latency_s=mean if not saturated else math.inf,
        p99_latency_s=p99,
        outstanding=float(iops * mean) if not saturated else math.inf,
        think_s=0.0,
        bandwidth_bps=float(min(iops, max_x) * pattern.block_bytes),
        max_iops=max_x,
        bottleneck=bottleneck,
        saturated=saturated,
        stations=res,
        bounds=bounds(stations, pattern.block_bytes),
    )


def solve_closed(stations: list[Station], outstanding: int, think_s: float = 0.0,
                 pattern: IoPattern = IoPattern()) -> IoResult:
    """Closed workload with ``outstanding`` I/Os (workers x queue depth) and think time, by exact MVA."""
    if outstanding <= 0:
        raise ValueError("outstanding I/Os must be > 0")
    # identical stations (the drives of a striped set, the HBAs of a group) form one MVA class:
    # exact, and the solve costs O(population x classes) instead of O(population x stations)
    keys = [(s.visits, s.service_s, s.servers, s.parts, s.delay_s) for s in stations]
    classes: dict[tuple, int] = {}
    cls_of = np.array([classes.setdefault(k, len(classes)) for k in keys])
    uniq = list(classes)
    d = np.array([k[0] * k[1] for k in uniq])
    c = np.array([k[2] for k in uniq])
    fixed = np.array([k[0] * k[4] for k in uniq])
    mult = np.bincount(cls_of, minlength=len(uniq)).astype(float)
    # MVA's residences are exponential-like (var = mean^2 per visit): an m-wide fork costs H_m
    # member residences, spread as H_m / m over its m members
    weight = np.array([sum(pv * max_iid_factors(pm, 1.0)[0] / pm for pv, pm in k[3]) / k[0] if k[0] > 0 else 1.0
                       for k in uniq])
    m = mva(d, int(outstanding), think_s=think_s, servers=c, multiplicity=mult, latency_weight=weight, fixed_s=fixed)
    x = m.throughput_per_s
    max_x, bottleneck = _bound(stations)
    visits = np.array([s.visits for s in stations])
    st_resp = m.station_response_s[cls_of]
    with np.errstate(divide="ignore", invalid="ignore"):
        per_visit = np.where(visits > 0, st_resp / visits, 0.0)
    res = [
        StationResult(s.name, s.kind, s.component, float(m.station_utilisation[cls_of[i]]),
                      float(st_resp[i] * weight[cls_of[i]]), float(m.station_queue[cls_of[i]]))
        for i, s in enumerate(stations)
    ]
    # p99: per-visit residence ~ exponential-like (variance = mean^2)
    p99 = _p99(*_latency_terms(stations, *_fork_parts(stations, per_visit, per_visit**2)))
    return IoResult(
        mode="closed",
        throughput_iops=x,
        mean_latency_s=m.response_s,
        p99_latency_s=max(p99, m.response_s),
        outstanding=float(outstanding),
        think_s=float(think_s),
        bandwidth_bps=x * pattern.block_bytes,
        max_iops=max_x,
        bottleneck=bottleneck,
        saturated=bool(x >= 0.98 * max_x),
        stations=res,
        bounds=bounds(stations, pattern.block_bytes),
    )


# --------------------------------------------------------------------------------------------
# power, space, cost


def arrays_power_w(arrays: list[ArrayUnit], result: IoResult | None) -> float:
    """Drive and controller power at the utilisations of ``result`` (idle when None)."""
    util: dict[str, float] = {}
    if result is not None:
        for s in result.stations:
            util[s.name] = s.utilisation
    total = 0.0
    seen_ctl: set[str] = set()
    for a in arrays:
        for i in range(a.drives):
            total += float(device_power_w(a.device, util.get(f"{a.name}/{a.device.name}#{i + 1}", 0.0)))
        if a.controller is not None:
            key = a.group_key
            if key not in seen_ctl:
                seen_ctl.add(key)
                total += a.controller.power_w * a.controllers
    return total


def server_power_w(points_w: list[float] | None, idle_w: float | None, peak_w: float | None, utilisation: float) -> float:
    """Server power at CPU ``utilisation``: SPECpower 11-point table interpolation, else linear.

    A server with neither a table nor idle and peak power is an error (no silent 0 W).
    """
    u = min(max(float(utilisation), 0.0), 1.0)
    if points_w:
        return float(np.interp(u, np.linspace(0, 1, len(points_w)), points_w))
    if idle_w is None or peak_w is None:
        raise PartError("server power: the storage model needs power 'points' or both 'idle' and 'peak'")
    return float(idle_w + (peak_w - idle_w) * u)


def part_price_usd(part, what: str) -> float:
    """``part.price_usd``; an error naming the part when the catalog entry has no price."""
    if part.price_usd is None:
        raise PartError(f"{what} {part.name!r}: price_usd is required by the storage sizing model")
    return float(part.price_usd)


def host_ios_per_io(arrays: list[ArrayUnit], read_fraction: float) -> float:
    """I/Os crossing the host block stack per front-end I/O (back-end I/Os behind plain HBAs)."""
    total_share = sum(a.share for a in arrays)
    out = 0.0
    for a in arrays:
        wr, ww = RAID_WRITE_IOS[a.raid]
        be = read_fraction + (1 - read_fraction) * (wr + ww)
        plain = a.controller is None or a.controller.kind in ("hba", "onboard", "nvme-direct")
        out += a.share / total_share * (be if plain else 1.0)
    return out


def endurance_check(arrays: list[ArrayUnit], front_iops: float, read_fraction: float, block_bytes: float) -> float:
    """Shortest rated life in years of any drive at a steady front-end write load."""
    years = math.inf
    total_share = sum(a.share for a in arrays)
    for a in arrays:
        wr, ww = RAID_WRITE_IOS[a.raid]
        wb = front_iops * a.share / total_share * (1 - read_fraction) * ww * block_bytes / a.drives
        tot = a.device.endurance_total_bytes()
        if tot is not None and wb > 0:
            years = min(years, tot / (wb * 365 * 86400))
    return years


__all__ = [
    "RAID_WRITE_IOS",
    "RAID_MIN_DRIVES",
    "PCIE_LANE_BPS",
    "ArrayUnit",
    "ControllerSpec",
    "EnclosureSpec",
    "HostCpuIo",
    "IoPattern",
    "IoResult",
    "IoStack",
    "Station",
    "StationResult",
    "build_stations",
    "bounds",
    "bound_text",
    "controller_service",
    "solve_open",
    "solve_closed",
    "raid_check",
    "raid_write_penalty",
    "raid_usable_bytes",
    "raid_functional_iops",
    "pcie_bandwidth_bps",
    "arrays_power_w",
    "server_power_w",
    "host_ios_per_io",
    "part_price_usd",
    "endurance_check",
]
