"""Build tiny scenarios in code for hand-calculable tests."""

from __future__ import annotations

from densim.spec import scenario_from_dict


def host(count=1, cores=4, mhz=2000, mem="64 GiB", idle=100, peak=200, name="h"):
    return {
        "name": name,
        "count": count,
        "cpu": {"sockets": 1, "cores_per_socket": cores, "base_clock": f"{mhz} MHz"},
        "memory": mem,
        "power": {"model": "linear", "idle": f"{idle} W", "peak": f"{peak} W"},
    }


def const_vms(name, count, vcpus, vcpu_mhz, util, mem="4 GiB"):
    return {
        "name": name,
        "count": count,
        "vcpus": vcpus,
        "vcpu_speed": f"{vcpu_mhz} MHz",
        "memory": mem,
        "profile": {"kind": "constant", "mean": util},
    }


def scenario(hosts, vms, *, step="5 min", horizon="10 min", policy="first-fit", cpu_oc=1.0, mem_oc=1.0,
             cpu_model="binomial", unused="idle", **extra):
    d = {
        "name": "micro",
        "cluster": {"hosts": hosts, "unused_hosts": unused},
        "vms": vms,
        "placement": {"policy": policy, "cpu_overcommit": cpu_oc, "memory_overcommit": mem_oc},
        "simulation": {"step": step, "horizon": horizon, "seed": 1, "cpu_model": cpu_model},
    }
    d.update(extra)
    return scenario_from_dict(d)
