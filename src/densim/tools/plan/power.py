"""Power caps and rack limits in the plan: a capped candidate's clock, hosts per rack, racks, VMs per kW.

A candidate with ``power_cap`` is placed on the CPU capacity of the highest P-state at which a fully
busy host stays within the cap (:func:`densim.models.cpu_power.full_load_capped_scale`; the P-states
run from ``min_clock`` to the base clock in ``pstate_step``): what the cap guarantees at the busiest
step. With a ``racks`` section each host is budgeted at its cap (else its power model's full-load
power) and the rack holds as many as its usable power and its rack units allow
(:mod:`densim.models.racks`).
"""

from __future__ import annotations

import math

from densim.models.cost import power_w


def capped_clock(c, base_mhz: float) -> dict | None:
    """A capped candidate's clock at full load: None without ``power_cap``; ``clock_mhz`` None when not even the
    lowest P-state keeps a fully busy host within the cap."""
    import numpy as np

    from densim.models.cpu_power import full_load_capped_scale, pstate_scales

    cap = getattr(c, "power_cap_w", None)
    if cap is None:
        return None
    p0, p1 = (float(x) for x in power_w(c.power, np.array([0.0, 1.0])))
    scales = pstate_scales(base_mhz, min(c.min_mhz, base_mhz), c.pstate_step_mhz)
    s = full_load_capped_scale(p0, p1, float(cap), scales)
    return {"cap_w": float(cap), "base_mhz": float(base_mhz), "idle_w": p0, "full_load_w": p1,
            "floor_w": p0 + (p1 - p0) * float(scales[0]) ** 3, "min_clock_mhz": float(scales[0] * base_mhz),
            "clock_mhz": None if s is None else float(s * base_mhz),
            "clock_power_w": None if s is None else p0 + (p1 - p0) * s**3,
            # what the cap costs a fully busy host: the share of its base-clock capacity it gives up
            "capacity_loss_pct": None if s is None else 100.0 * (1.0 - s),
            "binds": s is not None and s < 1.0}


def host_budget_w(c) -> float:
    """What one host is budgeted at in a rack: its cap (at most its full-load power), else its full-load power."""
    import numpy as np

    p1 = float(power_w(c.power, np.array([1.0]))[0])
    cap = getattr(c, "power_cap_w", None)
    return min(float(cap), p1) if cap is not None else p1


def rack_plan(spec, c, n_hosts: int, n_vms: int, mean_power_w: float) -> dict:
    """Hosts per rack (and what binds it), racks, the feeds' loads and VMs per kW for ``n_hosts`` of candidate ``c``.

    Without a ``racks`` section only the VMs per kW are given (of the hosts' budgeted and mean power).
    """
    from densim.models.racks import feed_power_w, hosts_per_rack, rack_power_w

    host_w = host_budget_w(c)
    out = {"host_budget_w": host_w, "basis": "power_cap" if getattr(c, "power_cap_w", None) is not None else "full-load power",
           "vms_per_kw": n_vms / (n_hosts * host_w / 1000.0) if n_hosts and host_w > 0 else None,
           "vms_per_kw_mean": n_vms / (mean_power_w / 1000.0) if mean_power_w > 0 else None}
    rk = spec.racks
    if rk is None:
        return out
    feed_w = feed_power_w(rk.breaker_a, rk.voltage_v, rk.phases, rk.continuous_derating, rk.power_factor)
    rack_w, rack_bind = rack_power_w(rk.budget_w, feed_w)
    per_rack, bound = hosts_per_rack(rack_w, host_w, rk.rack_units, c.rack_units)
    racks = math.ceil(n_hosts / per_rack) if per_rack > 0 else None
    load = per_rack * host_w
    out |= {"feed_w": feed_w, "rack_usable_w": rack_w, "rack_usable_bound": rack_bind, "feeds": rk.feeds,
            "hosts_per_rack": per_rack, "rack_bound": bound, "racks": racks,
            "rack_load_w": load,  # a full rack with every host at its budget
            # a/b: each feed carries half in normal operation, the whole rack when the other fails
            "feed_load_w": load / 2 if rk.feeds == "a/b" else load,
            "feed_load_failover_w": load if rk.feeds == "a/b" else None,
            "vms_per_rack": n_vms / racks if racks else None}
    return out
