"""Sizing solver: the cheapest drives x count x RAID x controllers x cores that meet a target.

Targets (``densim size FILE``):

* **IOPS at <= a latency**: an open workload of ``iops`` arrivals must see mean (or p99) latency
  ``<= max_latency`` with every station below saturation, and the usable capacity must reach
  ``capacity``.
* **users at <= a response time**: ``users`` each offer ``iops_per_user`` I/Os and
  ``requests_per_user_per_s`` requests; a request needs ``cpu_per_request`` of CPU on one core and
  ``ios_per_request`` I/Os in series. Response = M/M/c CPU response at the host's total CPU load
  (requests + the I/O stack) + ``ios_per_request`` x mean I/O latency, ``<= max_response``.

Search: for every (device, RAID level, controller model, cores) the smallest drive count that
meets the target is found by a scan upward from the count that merely avoids saturation (cost
rises with the count, so the smallest feasible count is the cheapest for that combination); the
controller count is the fewest whose ports/devices limit covers the drives, plus up to
``extra_controllers``. Cost = drives + controllers + enclosures beyond the server's bays + server
base + cores; power = drives at their utilisation + controllers + enclosures + server base + cores;
rack units = server + enclosures. Results are ranked by cost (then power).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from densim.models.devices import DeviceSpec, block_service
from densim.models.queueing import mmc_response_s
from densim.models.storage import (
    RAID_MIN_DRIVES,
    RAID_WRITE_IOS,
    ArrayUnit,
    ControllerSpec,
    EnclosureSpec,
    HostCpuIo,
    IoPattern,
    IoResult,
    arrays_power_w,
    build_stations,
    host_ios_per_io,
    part_price_usd,
    raid_usable_bytes,
    solve_open,
)


@dataclass
class Target:
    iops: float | None = None
    max_latency_s: float | None = None
    latency_metric: str = "mean"
    capacity_bytes: float = 0.0
    users: int | None = None
    iops_per_user: float = 0.0
    requests_per_user_s: float = 0.0
    ios_per_request: float = 1.0
    cpu_per_request_s: float = 0.0
    max_response_s: float | None = None
    max_cpu_utilisation: float = 1.0

    @property
    def offered_iops(self) -> float:
        return float(self.iops) if self.iops is not None else float(self.users * self.iops_per_user)


@dataclass
class Costs:
    server_base_usd: float = 4000.0
    per_core_usd: float = 100.0
    server_rack_units: float = 2.0
    server_bays: int = 24
    server_power_w: float = 150.0
    per_core_power_w: float = 5.0


@dataclass
class Candidate:
    device: str
    drives: int
    raid: str
    controller: str
    controllers: int
    cores: int
    enclosures: int
    cost_usd: float
    power_w: float
    rack_units: float
    usable_bytes: float
    mean_latency_s: float
    p99_latency_s: float
    response_s: float | None
    cpu_utilisation: float
    max_iops: float
    bottleneck: str
    bottleneck_utilisation: float
    bound: str = ""  # the resource that caps the configuration's IOPS (storage.bound_text)
    breakdown: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def cpu_response_s(cpu_s: float, cores: int, utilisation: float) -> float:
    """M/M/c response of a request needing ``cpu_s`` on one of ``cores`` at total ``utilisation``."""
    if cpu_s <= 0:
        return 0.0
    if utilisation >= 1.0:
        return math.inf
    lam = utilisation * cores / cpu_s
    return float(mmc_response_s(lam, cpu_s, cores))


def evaluate(
    device: DeviceSpec,
    drives: int,
    raid: str,
    controller: ControllerSpec | None,
    controllers: int,
    cores: int,
    clock_hz: float,
    cycles_per_io: float,
    pattern: IoPattern,
    target: Target,
    costs: Costs,
    enclosure: EnclosureSpec | None,
) -> tuple[bool, Candidate | None]:
    """Whether one configuration meets ``target``, and its figures."""
    usable = raid_usable_bytes(raid, drives, device.capacity("storage sizing model"))
    if usable < target.capacity_bytes:
        return False, None
    extra = max(0, drives - costs.server_bays)
    n_encl = 0
    if extra:
        if enclosure is None:
            return False, None
        n_encl = math.ceil(extra / enclosure.bays)
    arr = ArrayUnit("array", device, drives, raid, controller, controllers)
    cpu = HostCpuIo(cores, clock_hz, cycles_per_io) if cycles_per_io > 0 else None
    stations = build_stations([arr], cpu, pattern)
    iops = target.offered_iops
    res: IoResult = solve_open(stations, iops, pattern)
    if res.saturated:
        return False, None
    io_cpu_util = iops * host_ios_per_io([arr], pattern.read_fraction) * cycles_per_io / (cores * clock_hz)
    cpu_util = io_cpu_util
    response = None
    if target.users is not None:
        req_rate = target.users * target.requests_per_user_s
        cpu_util += req_rate * target.cpu_per_request_s / cores
        if cpu_util >= target.max_cpu_utilisation:
            return False, None
        response = cpu_response_s(target.cpu_per_request_s, cores, cpu_util) + target.ios_per_request * res.mean_latency_s
        ok = response <= target.max_response_s
    else:
        if cpu_util >= target.max_cpu_utilisation:
            return False, None
        lat = res.mean_latency_s if target.latency_metric == "mean" else res.p99_latency_s
        ok = lat <= target.max_latency_s
    worst = max(res.stations, key=lambda s: s.utilisation)
    dev_cost = drives * part_price_usd(device, "device")
    ctl_cost = controllers * part_price_usd(controller, "controller") if controller else 0.0
    encl_cost = n_encl * part_price_usd(enclosure, "enclosure") if n_encl else 0.0
    srv_cost = costs.server_base_usd + cores * costs.per_core_usd
    power = (arrays_power_w([arr], res) + (n_encl * enclosure.power_w if n_encl else 0.0)
             + costs.server_power_w + cores * costs.per_core_power_w)
    cand = Candidate(
        device=device.name,
        drives=drives,
        raid=raid,
        controller=controller.name if controller else "direct",
        controllers=controllers if controller else 0,
        cores=cores,
        enclosures=n_encl,
        cost_usd=dev_cost + ctl_cost + encl_cost + srv_cost,
        power_w=power,
        rack_units=costs.server_rack_units + (n_encl * enclosure.rack_units if n_encl else 0.0),
        usable_bytes=usable,
        mean_latency_s=res.mean_latency_s,
        p99_latency_s=res.p99_latency_s,
        response_s=response,
        cpu_utilisation=cpu_util,
        max_iops=res.max_iops,
        bottleneck=f"{worst.kind}:{worst.name.split('/')[-1]}" if worst.kind != "device" else f"device:{device.name}",
        bottleneck_utilisation=worst.utilisation,
        bound=res.bound,
        breakdown={"drives_usd": dev_cost, "controllers_usd": ctl_cost, "enclosures_usd": encl_cost, "server_usd": srv_cost},
    )
    return ok, cand


def _counts(raid: str, lo: int, hi: int):
    n = max(lo, RAID_MIN_DRIVES[raid])
    step = 2 if raid in ("raid1", "raid10") else 1
    if step == 2 and n % 2:
        n += 1
    if raid == "raid1":
        return [2] if n <= 2 <= hi else []
    return list(range(n, hi + 1, step))


def search(
    devices: list[DeviceSpec],
    raids: list[str],
    controllers: list[ControllerSpec],
    cores_list: list[int],
    clock_hz: float,
    cycles_per_io: float,
    pattern: IoPattern,
    target: Target,
    costs: Costs,
    drives_min: int = 1,
    drives_max: int = 96,
    extra_controllers: int = 1,
    enclosure: EnclosureSpec | None = None,
) -> tuple[list[Candidate], int]:
    """Every combination's cheapest feasible configuration, ranked by cost; and how many were tried."""
    found: list[Candidate] = []
    tried = 0
    iops = target.offered_iops
    for dev in devices:
        ctl_options: list[ControllerSpec | None] = [None] if (dev.kind == "nvme_ssd" or not controllers) else list(controllers)
        for raid in raids:
            counts = _counts(raid, drives_min, drives_max)
            if not counts:
                continue
            # drives needed just to stay below saturation: n > iops * backend I/Os * S / c
            wr, ww = RAID_WRITE_IOS[raid]
            r = pattern.read_fraction
            be = r + (1 - r) * (wr + ww)
            _, cap, _ = block_service(dev, pattern.block_bytes, (r + (1 - r) * wr) / be, pattern.sequential)
            n_floor = iops * be / cap
            counts = [n for n in counts if n > n_floor] or []
            for ctl in ctl_options:
                for cores in sorted(cores_list):
                    probe = ArrayUnit("array", dev, counts[0], raid, ctl, 1) if counts else None
                    if probe is not None and cycles_per_io > 0:
                        cpu_floor = iops * host_ios_per_io([probe], r) * cycles_per_io / (cores * clock_hz)
                        if target.users is not None:
                            cpu_floor += target.users * target.requests_per_user_s * target.cpu_per_request_s / cores
                        if cpu_floor >= target.max_cpu_utilisation:
                            continue
                    best: Candidate | None = None
                    for n in counts:
                        base = math.ceil(n / ctl.devices_limit) if ctl else 1
                        hit = None
                        for k in range(base, base + (extra_controllers + 1 if ctl else 1)):
                            tried += 1
                            ok, cand = evaluate(dev, n, raid, ctl, k, cores, clock_hz, cycles_per_io, pattern, target,
                                                costs, enclosure)
                            if ok and cand is not None:
                                hit = cand
                                break
                        if hit is not None:
                            best = hit
                            break
                    if best is not None:
                        found.append(best)
    found.sort(key=lambda c: (c.cost_usd, c.power_w, c.rack_units))
    return found, tried


def distinct(cands: list[Candidate], top: int) -> list[Candidate]:
    """The ``top`` cheapest, one per (device, RAID, controller) so runners-up are real alternatives."""
    seen: set[tuple[str, str, str]] = set()
    out = []
    for c in cands:
        key = (c.device, c.raid, c.controller)
        if key in seen:
            continue
        seen.add(key)
        out.append(c)
        if len(out) >= top:
            break
    return out

