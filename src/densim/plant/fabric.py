"""The batch-job fabric of a scenario resolved into components, hosts, tenants and per-VM flows.

:func:`build_system` reads ``fabric`` (pools, tenants, local storage) and the catalog parts it
names, checks every cross-reference and capacity, and returns the :class:`~densim.models.jobs.JobSystem`
that :func:`densim.models.jobs.simulate_jobs` runs. Bad references raise
:class:`densim.errors.InputError` naming the field path.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
from pydantic import ValidationError

from densim.catalog.core import Catalog, CatalogError
from densim.errors import InputError, PartError
from densim.models.devices import DeviceSpec
from densim.models.fabric import (
    Components,
    NicSpec,
    SwitchSpec,
    TargetSpec,
    TransportSpec,
    check_fabric_device,
    local_path,
    pool_usable_bytes,
    remote_path,
)
from densim.models.jobs import BatchProfile, Flow, HostInfo, JobSystem, TenantInfo, stored_bytes_per_vm
from densim.plant.hosts import resolve_host_groups
from densim.spec.loader import validation_issues


def build_system(sc, catalog: Catalog, *, source: str = "scenario") -> JobSystem:
    """Build the components, hosts, tenants and per-VM flows of ``sc.fabric`` (model 'fluid').

    Bad references raise :class:`densim.errors.InputError` naming the field path.
    """
    fab = sc.fabric

    def get(section, name, model, where):
        try:
            return catalog.get(section, name, model)
        except CatalogError as exc:
            raise InputError(source, where, str(exc).strip("'\"")) from None
        except ValidationError as exc:
            raise InputError(source, where, validation_issues(exc)[0][1]) from None

    comps = Components()
    hosts: list[HostInfo] = []
    group_hosts: dict[str, list[int]] = {}
    for gi, (hg, g) in enumerate(zip(resolve_host_groups(sc.cluster.hosts, catalog), sc.cluster.hosts)):
        server, cpu, count = hg.server, hg.cpu, hg.count
        gname = g.name or f"hosts{gi}"
        idx = []
        for i in range(count):
            hosts.append(HostInfo(f"{gname}#{i}", float(server.cpu.sockets * cpu.cores * cpu.threads_per_core), cpu.base_mhz * 1e6))
            idx.append(len(hosts) - 1)
        group_hosts[gname] = idx
    for h in hosts:
        comps.add(f"{h.name}/cpu", "host-cpu", h.logical_cpus)
    vm_groups = {v.name: v for v in sc.vms}
    pools = {p.name: p for p in fab.pools}
    pool_specs: dict[str, tuple[TargetSpec, DeviceSpec, SwitchSpec | None]] = {}
    # servers attached to each pool: a target sized per server is populated for them
    pool_servers: dict[str, set[int]] = defaultdict(set)
    for ten in fab.tenants:
        if ten.storage != "local" and ten.hosts in group_hosts:
            pool_servers[ten.storage].update(group_hosts[ten.hosts])
    for i, p in enumerate(fab.pools):
        where = f"fabric.pools[{i}]"
        tgt = get("storage_targets", p.target, TargetSpec, f"{where}.target")
        upd = {k: v for k, v in (("device", p.device), ("switch", p.switch)) if v is not None}
        if p.device_count is not None:
            upd.update(device_count=p.device_count, drives_per_server=None)
        elif p.drives_per_server is not None:
            upd.update(device_count=None, drives_per_server=p.drives_per_server)
        try:
            tgt = TargetSpec.model_validate({**tgt.model_dump(), **upd}).sized_for(len(pool_servers[p.name]))
        except PartError as exc:
            raise InputError(source, where, exc.problem) from None
        except ValidationError as exc:
            raise InputError(source, where, validation_issues(exc)[0][1]) from None
        dev = get("devices", tgt.device, DeviceSpec, f"{where}.device")
        try:
            check_fabric_device(dev)
        except PartError as exc:
            raise InputError(source, f"{where}.device", exc.problem) from None
        sw = get("switches", tgt.switch, SwitchSpec, f"{where}.switch") if tgt.switch else None
        pool_specs[p.name] = (tgt, dev, sw)
    local_dev = None
    if fab.local_storage is not None:
        local_dev = get("devices", fab.local_storage.device, DeviceSpec, "fabric.local_storage.device")
        try:
            check_fabric_device(local_dev)
            local_dev.capacity("fabric model")
        except PartError as exc:
            raise InputError(source, "fabric.local_storage.device", exc.problem) from None

    tenants: list[TenantInfo] = []
    flows: list[Flow] = []
    pool_used: dict[str, float] = defaultdict(float)
    host_used: dict[int, float] = defaultdict(float)
    for ti, ten in enumerate(fab.tenants):
        where = f"fabric.tenants[{ti}]"
        if ten.hosts not in group_hosts:
            raise InputError(source, f"{where}.hosts", f"no host group named {ten.hosts!r}; groups: {', '.join(group_hosts)}")
        if ten.vms not in vm_groups:
            raise InputError(source, f"{where}.vms", f"no VM group named {ten.vms!r}; groups: {', '.join(vm_groups)}")
        prof = get("batch_profiles", ten.job, BatchProfile, f"{where}.job")
        transport = get("transports", ten.transport, TransportSpec, f"{where}.transport")
        data_nic = get("nics", ten.data_nic, NicSpec, f"{where}.data_nic")
        data_sw = get("switches", ten.data_switch, SwitchSpec, f"{where}.data_switch")
        h_idx = group_hosts[ten.hosts]
        vg = vm_groups[ten.vms]
        n_vms = int(vg.count or 0)
        if n_vms % len(h_idx):
            raise InputError(source, f"{where}.vms", f"{n_vms} VMs do not spread evenly over {len(h_idx)} hosts")
        vph = n_vms // len(h_idx)
        vcpus = int(vg.vcpus or 1)
        q_shuffle = (n_vms - vph) / n_vms
        q_rep = (n_vms - vph) / (n_vms - 1) if n_vms > 1 else 0.0
        vol_bytes = float(sum(ten.volumes.values()))
        info = TenantInfo(ten.name, prof, ten.weight, ten.start_s, hosts=list(h_idx))
        sw_idx = comps.add(f"switch/{data_sw.name}", "switch", data_sw.switching_capacity_bps, data_sw.ports)
        for hk, h in enumerate(h_idx):
            host = hosts[h]
            if ten.storage == "local":
                if transport.remote:
                    raise InputError(source, f"{where}.transport", f"local storage needs a local transport, not {transport.name!r}")
                path = local_path(comps, host.name, local_dev, fab.local_storage.count, transport, prof.io_size_bytes)
                host_used[h] += vph * vol_bytes
                local_bytes = fab.local_storage.count * local_dev.capacity("fabric model")
                if host_used[h] > local_bytes * (1 + 1e-9):
                    raise InputError(source, f"{where}.volumes", f"volumes need {host_used[h] / 1e9:.0f} GB on {host.name}, local drives hold {local_bytes / 1e9:.0f} GB")
            else:
                if not transport.remote:
                    raise InputError(source, f"{where}.transport", f"pool {ten.storage!r} is remote; {transport.name!r} is a local transport")
                tgt, dev, sw = pool_specs[ten.storage]
                nic = get("nics", ten.storage_nic, NicSpec, f"{where}.storage_nic")
                try:
                    path = remote_path(comps, host.name, ten.storage, tgt, dev, nic, sw, transport, prof.io_size_bytes)
                except ValueError as exc:
                    raise InputError(source, f"{where}.storage_nic", str(exc)) from None
                if pools[ten.storage].provisioning == "thick":
                    pool_used[ten.storage] += vph * vol_bytes
                else:
                    pool_used[ten.storage] += vph * stored_bytes_per_vm(prof, n_vms)
            rx = comps.add(f"{host.name}/data-nic-rx", "data-nic", data_nic.bandwidth_bps, data_nic.ports)
            tx = comps.add(f"{host.name}/data-nic-tx", "data-nic", data_nic.bandwidth_bps, data_nic.ports)
            for v in range(vph):
                vm_name = f"{ten.vms}-{hk * vph + v}"
                vm_cpu = comps.add(f"{ten.name}/{vm_name}/vcpus", "vm-cpu", vcpus)
                fl = Flow(
                    tenant=ti,
                    host=h,
                    name=f"{ten.name}/{vm_name}",
                    vcpus=vcpus,
                    slots=min(prof.executor_cores, vcpus),
                    storage=path,
                    data_nic_rx=rx,
                    data_nic_tx=tx,
                    data_switch=sw_idx,
                    nic_port_bps=data_nic.port_speed_bps,
                    vm_cpu=vm_cpu,
                    host_cpu=comps.add(f"{host.name}/cpu", "host-cpu", host.logical_cpus),
                    bytes_per_stage=[prof.input_bytes * s.data_fraction / n_vms for s in prof.stages],
                    remote_shuffle=q_shuffle,
                    remote_replica=q_rep,
                    peer_shuffle=(n_vms - 1) / n_vms,
                    cap_bw_bps=ten.volume_bandwidth_limit_bps or np.inf,
                    cap_iops=ten.volume_iops_limit or np.inf,
                )
                flows.append(fl)
                info.flows.append(len(flows) - 1)
        tenants.append(info)
    for name, used in pool_used.items():
        tgt, dev, _ = pool_specs[name]
        cap = pool_usable_bytes(tgt, dev)
        if used > cap * (1 + 1e-9):
            i = list(pools).index(name)
            raise InputError(source, f"fabric.pools[{i}]", f"tenants' volumes need {used / 1e12:.2f} TB, pool {name!r} offers {cap / 1e12:.2f} TB usable")
    return JobSystem(comps=comps, hosts=hosts, flows=flows, tenants=tenants, rho_max=fab.rho_max)
