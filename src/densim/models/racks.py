"""Rack power: the usable power of a rack's circuits, and how many hosts a rack holds.

A rack is fed by one circuit (``single``) or two (``a/b``: redundant power supplies in every host,
one cord to each feed). Each feed's breaker of rating ``I`` A at ``V`` volts carries

    S_feed = I x V            (single phase)
    S_feed = I x V x sqrt(3)  (three phase, V line to line)

and a load that runs for three hours or more (a server rack) may draw only 80 % of it
(``continuous_derating``): the breaker must be rated at 125 % of the continuous load (US NEC
210.19(A)(1) conductors and 210.20(A) overcurrent devices; 1 / 1.25 = 0.8)::

    P_feed = derating x S_feed x power_factor

With A/B feeds each feed must carry the whole rack when the other fails, so the rack may draw at
most one feed's ``P_feed``, and in normal operation each feed carries half of the rack's load -- at
most half of the rack's budget. The rack's usable power is the smaller of its contracted budget and
what its circuits allow::

    P_rack = min(budget, P_feed)                 (a/b: one feed carries it all; single: the one feed)
    hosts per rack = min(floor(P_rack / P_host), floor(rack units / host rack units))

``P_host`` is what each host is budgeted at: its power cap, else the power model's full-load power.
"""

from __future__ import annotations

import math


def feed_power_w(breaker_a: float, voltage_v: float, phases: int, derating: float, power_factor: float = 1.0) -> float:
    """Continuous power one feed may carry: derating x breaker x volts (x sqrt 3 for three phase) x power factor."""
    return derating * breaker_a * voltage_v * (math.sqrt(3.0) if phases == 3 else 1.0) * power_factor


def rack_power_w(budget_w: float, feed_w: float) -> tuple[float, str]:
    """(usable W, what binds: ``budget`` or ``circuit``): the rack draws at most its budget and one feed's power."""
    return (budget_w, "budget") if budget_w <= feed_w else (feed_w, "circuit")


def hosts_per_rack(rack_w: float, host_w: float, rack_units: float, host_units: float) -> tuple[int, str]:
    """(hosts, what binds: ``power`` or ``space``): as many hosts as both the power and the rack units allow."""
    by_power = math.floor(rack_w / host_w + 1e-9) if host_w > 0 else math.inf
    by_space = math.floor(rack_units / host_units + 1e-9)
    return (int(by_power), "power") if by_power < by_space else (int(by_space), "space")
