"""The plan ranking never ranks a candidate better for leaving VMs out: a cheaper candidate on which
VMs fit no host is listed after the feasible one, marked 'infeasible: N VMs unplaced', never the answer."""

from __future__ import annotations

import re

import numpy as np

from densim.spec.plan import PlanSpec
from densim.tools.plan.capacity import plan
from densim.tools.plan.report import write_outputs
from densim.workloads.inventory import build_inventory

POWER = {"model": "linear", "idle": "100 W", "peak": "300 W"}


def _candidate(name: str, cores: int, price: float) -> dict:
    return {"name": name, "cpu": {"sockets": 1, "cores_per_socket": cores, "base_clock": "2 GHz"},
            "memory": "32 GiB", "power": POWER, "price_usd": price}


def test_cheap_candidate_that_places_no_vm_ranks_last_marked_and_is_not_best(tmp_path):
    # 4 VMs of 2 vCPUs and 8 GiB, 1,000 MHz each. No vCPU over-commit (1 vCPU per core):
    #   "four-core" (4 cores, 5,000 USD): 2 VMs per host -> 2 hosts: feasible
    #   "one-core"  (1 core,    500 USD): a 2-vCPU VM fits no empty host -> all 4 VMs unplaced: infeasible,
    #                                      however cheap its hosts are
    inv = build_inventory([f"v{i}" for i in range(4)], [2] * 4, [2000.0] * 4, [8 * 2**30] * 4,
                          cpu_mhz=np.full((4, 4), 1000.0))
    spec = PlanSpec.model_validate({"qos": {"cpu_ready_pct": 5.0, "vcpus_per_core": 1.0},
                                    "candidates": [_candidate("one-core", 1, 500), _candidate("four-core", 4, 5000)]})
    summary = write_outputs(plan(inv, spec), tmp_path)
    assert summary["best"] == "four-core"
    assert [r["candidate"] for r in summary["ranking"]] == ["four-core", "one-core"]
    html = (tmp_path / "report.html").read_text()
    table = html[html.index('<table id="ranking">'):]
    table = table[:table.index("</table>")]
    rows = re.findall(r"<tr class=\"([^\"]*)\">(.*?)</tr>", table, flags=re.S)
    assert [cls for cls, _ in rows] == ["best", "infeasible"]
    assert "<td>yes</td>" in rows[0][1]
    assert "<td>infeasible: 4 VMs unplaced</td>" in rows[1][1]


def test_feasibility_mark():
    from densim.tools.plan.report import feasibility_mark

    assert feasibility_mark({"feasible": True, "reason": ""}) == "yes"
    assert feasibility_mark({"feasible": False, "reason": "x"}, 1) == "infeasible: 1 VM unplaced"
    assert feasibility_mark({"feasible": False, "reason": "could not meet CPU Ready <= 5 % at full resolution"}) == \
        "infeasible: could not meet CPU Ready <= 5 % at full resolution"
