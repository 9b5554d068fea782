"""Catalog integrity: every catalog part through every model that accepts its kind.

Each part kind has one schema (``densim.catalog.core.part_schemas``); every quantity a model
reads is complete after validation, or the model raises an error naming the part and the field.
These tests run every built-in part through every model of its kind and check the results are
finite and positive, plus hand-computed values for a few parts (arithmetic in the comments).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from densim.errors import PartError
from densim.models.devices import (
    DeviceSpec,
    block_service,
    device_power_w,
    device_response_s,
    device_utilisation,
    endurance_years,
    mix_iops,
)
from densim.models.fabric import (
    Components,
    NicSpec,
    SwitchSpec,
    TargetSpec,
    TransportSpec,
    check_fabric_device,
    drive_s_per_byte,
    drive_service_s,
    local_path,
    pool_usable_bytes,
    remote_path,
)
from densim.models.power import POWER_MODELS
from densim.models.storage import (
    ArrayUnit,
    ControllerSpec,
    EnclosureSpec,
    HostCpuIo,
    IoPattern,
    arrays_power_w,
    build_stations,
    raid_check,
    solve_closed,
    solve_open,
)
from densim.models.storage.sizing import Costs, Target, evaluate
from densim.catalog.core import builtin_catalog, part_schemas
from densim.models.hardware import ServerSpec
from densim.plant import resolve_cpu

CAT = builtin_catalog()
MiB = 1024.0**2
DEVICES = CAT.all("devices", DeviceSpec)
CONTROLLERS = CAT.all("controllers", ControllerSpec)
ENCLOSURES = CAT.all("enclosures", EnclosureSpec)
NICS = CAT.all("nics", NicSpec)
TRANSPORTS = CAT.all("transports", TransportSpec)
TARGETS = CAT.all("storage_targets", TargetSpec)
SERVERS = CAT.all("servers", ServerSpec)


def _ids(parts):
    return [p.name for p in parts]


def finite_pos(*xs) -> bool:
    return all(np.all(np.isfinite(np.asarray(x, float))) and np.all(np.asarray(x, float) > 0) for x in xs)


# ---------------------------------------------------------------------------------------------
# every part validates with its one schema


@pytest.mark.parametrize("section", sorted(part_schemas()))
def test_every_catalog_part_validates_with_its_schema(section):
    _, model = part_schemas()[section]
    names = CAT.names(section)
    assert names, f"no {section} in the catalog"
    for name in names:
        CAT.get(section, name, model)  # raises on an incomplete part


# ---------------------------------------------------------------------------------------------
# devices: block-device model, fabric model, response, power


@pytest.mark.parametrize("dev", DEVICES, ids=_ids(DEVICES))
def test_every_device_through_every_device_model(dev):
    # the fields every model reads are complete after validation (HDD ones derived from mechanics)
    for f in ("read_latency_s", "write_latency_s", "read_iops", "write_iops", "seq_read_bps", "seq_write_bps"):
        assert finite_pos(getattr(dev, f)), f"{dev.name}.{f} = {getattr(dev, f)}"
    for block, seq in ((4096, False), (65536, False), (MiB, False), (MiB, True), (512, True)):
        for r in (0.0, 0.7, 1.0):
            t1, cap, c = block_service(dev, block, r, seq)
            assert finite_pos(t1, cap, c) and c >= 1.0, (dev.name, block, seq, r)
    for io in (4096.0, MiB):
        for write in (False, True):
            assert finite_pos(drive_s_per_byte(dev, io, write), drive_service_s(dev, io, write)), (dev.name, io, write)
    check_fabric_device(dev)
    half = 0.5 * mix_iops(dev.read_iops, dev.write_iops, 0.7)
    assert finite_pos(device_response_s(dev, half, 0.7), device_utilisation(dev, half, 0.7))
    assert np.isinf(device_response_s(dev, 2 * half * 1.01, 0.7))  # over-driven: saturated
    assert np.all(endurance_years(dev, np.array([1e6])) > 0)
    if dev.idle_power_w is not None:
        p = device_power_w(dev, np.array([0.0, 0.5, 1.0]))
        assert finite_pos(p) and p[0] <= p[1] <= p[2]
    else:
        # only a SAN LUN has no per-device power; the power model names it instead of drawing 0 W
        assert dev.kind == "san_lun"
        with pytest.raises(PartError, match=rf"device '{dev.name}': idle_power and active_power are required"):
            device_power_w(dev, 0.5)


def test_hdd_sequential_rate_comes_from_the_media_rate_sas_10k_900gb():
    d = CAT.get("devices", "sas-10k-900gb", DeviceSpec)
    # mechanics: 4.0 ms seek + 30/10000 s = 3.0 ms half rotation + 4096 B / 198e6 B/s = 0.0207 ms
    #            = 7.0207 ms QD1 read latency; IOPS at QD32 = 1.6 / 7.0207 ms = 227.9
    assert d.read_latency_s == pytest.approx(4.0e-3 + 3.0e-3 + 4096 / 198e6, rel=1e-9)
    assert d.read_latency_s == pytest.approx(7.0207e-3, rel=1e-4)
    assert d.read_iops == pytest.approx(227.9, rel=1e-3)
    # write: 4.4 + 3.0 + 0.0207 = 7.4207 ms
    assert d.write_latency_s == pytest.approx(7.4207e-3, rel=1e-4)
    # sequential rates = media rate (198 MB/s), not iops x 4096 = 0.93 MB/s
    assert d.seq_read_bps == d.seq_write_bps == 198e6
    # 1 MiB sequential on the block-device model: 1048576 / 198e6 = 5.296 ms (+ 0 overhead)
    t1, cap, _ = block_service(d, MiB, 1.0, sequential=True)
    assert t1 == pytest.approx(5.296e-3, rel=1e-3)
    assert cap == pytest.approx(1 / 5.296e-3, rel=1e-3)  # 188.8 I/Os per second
    # 1 MiB on the fabric model (one positioning + transfer): 7.0207 + 5.296 = 12.317 ms unloaded,
    # never the 1.128 s of the old iops x 4096 fallback
    assert drive_service_s(d, MiB, write=False) == pytest.approx(12.317e-3, rel=1e-3)
    # drive time per byte with interleaved streams: (1/227.9 + 5.296 ms) / 1 MiB
    #   = (4.388 + 5.296) ms / 1048576 B = 9.235e-9 s/B (108 MB/s per drive)
    assert drive_s_per_byte(d, MiB, write=False) == pytest.approx(9.235e-9, rel=1e-3)


def test_hand_computed_other_devices():
    p = CAT.get("devices", "intel-dc-p4600-1.6tb", DeviceSpec)
    # 1 MiB read: 85 us + 1048576 / 3.27e9 s = 85 + 320.67 = 405.67 us
    assert drive_service_s(p, MiB, write=False) == pytest.approx(405.67e-6, rel=1e-4)
    # drive time per byte: max(1/BW, 1/(IOPS B)) = max(1/3.27e9, 1/(559000 x 1048576)) = 1/3.27e9
    assert drive_s_per_byte(p, MiB, write=False) == pytest.approx(1 / 3.27e9, rel=1e-9)
    s = CAT.get("devices", "sata-7k2-2tb", DeviceSpec)
    # 8.5 ms seek + 30/7200 s = 4.1667 ms + 4096/180e6 = 0.0228 ms = 12.689 ms
    assert s.read_latency_s == pytest.approx(12.689e-3, rel=1e-4)
    assert s.seq_read_bps == 180e6
    ssd = CAT.get("devices", "intel-dc-s3700-400gb", DeviceSpec)
    # 64 KiB random read: t1 = 50 us + (65536 - 4096) / 500e6 = 50 + 122.88 = 172.88 us;
    # 1/cap = 1/75000 + 61440/500e6 = 13.333 + 122.88 us = 136.21 us -> 7341.5 IOPS
    t1, cap, _ = block_service(ssd, 65536, 1.0)
    assert t1 == pytest.approx(172.88e-6, rel=1e-4)
    assert cap == pytest.approx(1 / 136.213e-6, rel=1e-4)


def test_missing_figures_are_errors_naming_part_and_field():
    base = {"name": "foo", "kind": "sata_ssd", "read_latency": "50 us", "write_latency": "60 us",
            "read_iops": 1000, "write_iops": 1000}
    d = DeviceSpec.model_validate(base)
    msg = r"device 'foo': seq_read is required by the fabric model \(give seq_read, or media_rate for an HDD\)"
    with pytest.raises(PartError, match=msg):
        drive_s_per_byte(d, MiB, write=False)
    with pytest.raises(PartError, match=msg):
        drive_service_s(d, MiB, write=False)
    with pytest.raises(PartError, match="device 'foo': seq_read is required by the block-device model"):
        block_service(d, 65536, 1.0)
    assert block_service(d, 4096, 1.0)[0] == pytest.approx(50e-6)  # the datasheet point needs no rate
    with pytest.raises(PartError, match="device 'foo': capacity is required"):
        pool_usable_bytes(TARGETS[0].sized_for(4), d)
    with pytest.raises(ValueError, match="device 'foo': read_latency is required"):
        DeviceSpec.model_validate({k: v for k, v in base.items() if k != "read_latency"})
    hdd = {"name": "h", "kind": "hdd", "rpm": 7200, "seek_read": "8 ms", "seek_write": "9 ms", "ncq_gain": 1.5}
    with pytest.raises(ValueError, match="device 'h': media_rate is required"):
        DeviceSpec.model_validate(hdd)


# ---------------------------------------------------------------------------------------------
# controllers and enclosures: the storage model (queueing, power, sizing)

ARRAY_DEVICES = ["intel-dc-s3700-400gb", "sas-10k-900gb"]


@pytest.mark.parametrize("ctl", CONTROLLERS, ids=_ids(CONTROLLERS))
@pytest.mark.parametrize("dev_name", ARRAY_DEVICES)
def test_every_controller_through_the_storage_model(ctl, dev_name):
    dev = CAT.get("devices", dev_name, DeviceSpec)
    assert ctl.devices_limit >= ctl.ports and finite_pos(ctl.bandwidth_bps, ctl.link_bps, ctl.max_iops)
    arr = ArrayUnit("a", dev, 4, "raid10", ctl, 1)
    for pattern in (IoPattern(0.7, 4096), IoPattern(1.0, 65536, sequential=True), IoPattern(0.0, 8192)):
        st = build_stations([arr], HostCpuIo(8, 2.5e9, 15000), pattern)
        res = solve_open(st, 0.0, pattern)
        x = 0.5 * res.max_iops
        res = solve_open(st, x, pattern)
        assert finite_pos(res.max_iops, res.mean_latency_s, res.p99_latency_s, x) and not res.saturated
        closed = solve_closed(st, 16, 0.0, pattern)
        assert finite_pos(closed.throughput_iops, closed.mean_latency_s)
        assert finite_pos(arrays_power_w([arr], res))
    # lsi-9210-8i, hand-computed: 4 KiB service = max(1/300000, 4096/2.5e9) = max(3.333, 1.638) us
    if ctl.name == "lsi-9210-8i":
        s = next(s for s in build_stations([arr], None, IoPattern(1.0, 4096)) if s.kind == "controller")
        assert s.service_s == pytest.approx(1 / 300000, rel=1e-9)


@pytest.mark.parametrize("encl", ENCLOSURES, ids=_ids(ENCLOSURES))
def test_every_enclosure_through_the_sizing_model(encl):
    dev = CAT.get("devices", "sas-10k-900gb", DeviceSpec)
    ctl = CAT.get("controllers", "lsi-9202-16e", ControllerSpec)
    costs = Costs(server_bays=0)  # every drive sits in enclosures
    drives = 2 * (min(encl.bays, 24) // 2)
    assert raid_check("raid10", drives) is None
    ok, cand = evaluate(dev, drives, "raid10", ctl, 1, 8, 2.5e9, 15000, IoPattern(0.7, 8192),
                        Target(iops=100.0, max_latency_s=1.0), costs, encl)
    assert cand is not None and cand.enclosures == 1
    assert finite_pos(cand.cost_usd, cand.power_w, cand.usable_bytes, cand.mean_latency_s)
    assert cand.power_w >= encl.power_w


# ---------------------------------------------------------------------------------------------
# fabric: NICs, transports, switches, storage targets


@pytest.mark.parametrize("tgt", TARGETS, ids=_ids(TARGETS))
def test_every_storage_target_through_the_fabric_model(tgt):
    sized = tgt.sized_for(4)
    dev = CAT.get("devices", sized.device, DeviceSpec)
    sw = CAT.get("switches", sized.switch, SwitchSpec) if sized.switch else None
    assert finite_pos(pool_usable_bytes(sized, dev), sized.drives)
    runs = 0
    for tr in (t for t in TRANSPORTS if t.remote):
        for nic in (n for n in NICS if n.kind in tr.nic_kinds):
            comps = Components()
            p = remote_path(comps, "h", "pool", sized, dev, nic, sw, tr, MiB)
            assert finite_pos(list(p.read_load.values()), list(p.write_load.values()), p.read_fixed_s)
            assert finite_pos(list(p.read_service.values()), comps.capacity_array(), comps.servers_array())
            runs += 1
    assert runs >= 4


def test_every_device_on_the_local_path():
    tr = CAT.get("transports", "local-nvme", TransportSpec)
    for dev in DEVICES:
        p = local_path(Components(), "h", dev, 2, tr, MiB)
        assert finite_pos(list(p.read_load.values()), list(p.write_service.values()))


def test_target_sized_per_server_hand_computed():
    t = CAT.get("storage_targets", "nvmeof-jbof-32bay-p4600", TargetSpec)
    # 2 tenants x 4 servers x 2 drives per server = 16 drives of the 32 bays
    assert t.sized_for(8).drives == 16
    # 16 x 1.6 TB, no protection = 25.6 TB usable
    assert pool_usable_bytes(t.sized_for(8), CAT.get("devices", t.device, DeviceSpec)) == pytest.approx(25.6e12)
    with pytest.raises(PartError, match=r"'nvmeof-jbof-32bay-p4600': 17 servers x 2 drives = 34 exceed its 32 bays"):
        t.sized_for(17)
    with pytest.raises(PartError, match="drive count unknown"):
        _ = t.drives
    with pytest.raises(ValueError, match="give exactly one of device_count and drives_per_server"):
        TargetSpec.model_validate({**t.model_dump(), "device_count": 8})


@pytest.mark.parametrize("nic", NICS, ids=_ids(NICS))
def test_every_nic_bandwidth(nic):
    assert finite_pos(nic.bandwidth_bps)
    assert nic.bandwidth_bps == min(nic.ports * nic.port_speed_bps, nic.host_bus_bps)
    if nic.name == "connectx-4-2x40g-roce":
        # min(2 x 40e9 / 8 = 10e9, 63e9 / 8 = 7.875e9) B/s: the PCIe 3.0 x8 slot limits both ports
        assert nic.bandwidth_bps == pytest.approx(7.875e9)


# ---------------------------------------------------------------------------------------------
# CPUs and servers: power and capacity


@pytest.mark.parametrize("server", SERVERS, ids=_ids(SERVERS))
def test_every_server_through_power_and_capacity(server):
    cpu = resolve_cpu(server.cpu, CAT)
    gain = cpu.smt_gain if cpu.threads_per_core > 1 else 1.0
    capacity_mhz = server.cpu.sockets * cpu.cores * gain * cpu.base_mhz  # as densim.engine.state.build_hosts
    logical = server.cpu.sockets * cpu.cores * cpu.threads_per_core
    assert finite_pos(capacity_mhz, logical, server.memory_bytes)
    pw = server.power
    fn = POWER_MODELS.get(pw.model)
    p = fn(np.array([0.0, 0.5, 1.0]), idle_w=pw.idle_w, peak_w=pw.peak_w, points_w=pw.points_w, exponent=pw.exponent)
    assert finite_pos(p) and p[0] <= p[1] <= p[2]
    if server.name == "dual-platinum-8180-768g":
        # linear 220 W idle -> 760 W peak: at 50 %, 220 + 0.5 x 540 = 490 W;
        # capacity 2 sockets x 28 cores x 1.0 (SMT gain) x 2500 MHz = 140,000 MHz
        assert p[1] == pytest.approx(490.0)
        assert capacity_mhz == pytest.approx(2 * 28 * cpu.smt_gain * 2500.0)


def test_every_cpu_resolves():
    from densim.models.hardware import CpuSpec, HostCpu

    for name in CAT.names("cpus"):
        cpu = resolve_cpu(HostCpu(model=name, sockets=2), CAT)
        assert isinstance(cpu, CpuSpec) and finite_pos(cpu.cores, cpu.base_mhz, cpu.threads_per_core)
        if cpu.turbo_mhz is not None:
            assert cpu.turbo_mhz >= cpu.base_mhz
        assert math.isfinite(cpu.smt_gain)


def test_catalog_files_parse_to_the_same_objects_with_libyaml():
    # the built-in catalog is parsed with libyaml's parser (CSafeLoader) when PyYAML has it, at
    # every run's start; it must give exactly what yaml.safe_load gives, file by file
    from importlib import resources

    import yaml

    from densim.catalog import core

    files = [p for p in (resources.files("densim") / "catalog").iterdir() if p.name.endswith((".yaml", ".yml"))]
    assert len(files) >= 10
    for item in files:
        text = item.read_text(encoding="utf-8")
        assert core._load_yaml_sections(text, item.name) == yaml.safe_load(text), item.name


def test_current_server_cpus_are_in_the_catalog():
    # issue 31: the newest part was a 2017 Xeon; every Xeon Scalable generation 2-5 and EPYC Rome to Turin
    # must be there, each with a vendor source
    from densim.models.hardware import CpuSpec

    archs = {CAT.get("cpus", n, CpuSpec).microarchitecture for n in CAT.names("cpus")}
    for needed in ("Cascade Lake-SP", "Ice Lake-SP", "Sapphire Rapids", "Emerald Rapids",
                   "Zen 2 (Rome)", "Zen 3 (Milan)", "Zen 4 (Genoa)", "Zen 5 (Turin)"):
        assert needed in archs, needed
    turin = CAT.get("cpus", "epyc-9655", CpuSpec)
    # 96 cores x 2.6 GHz base = 249.6 GHz of base clock per socket
    assert turin.cores * turin.base_mhz == 96 * 2600.0
