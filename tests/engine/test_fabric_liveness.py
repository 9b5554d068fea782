"""Batch jobs (fabric stage) with VMs that arrive late or whose host fails: refused, with the reason.

The fluid job model (densim.models.jobs) runs each job once, before the engine, on VMs that are
there throughout. A job VM that arrives after its job started, or whose host fails during the job,
once carried the job's busy vCPUs outside its life (issue 28: 13.9 busy vCPUs from step 0 on a VM that
arrived at step 55; 101,771 MHz of job demand on a failed host). It is now a one-line error.
"""

from __future__ import annotations

import pytest

from densim.engine import simulate
from densim.errors import InputError
from densim.plant import resolve
from densim.spec.loader import load_scenario, scenario_from_dict

EXAMPLE = "examples/fabric/pooled-nvme.yaml"


def _one_tenant(**extra):
    d = load_scenario(EXAMPLE).model_dump(by_alias=True, exclude_unset=True, mode="json")
    d["cluster"]["hosts"] = d["cluster"]["hosts"][:1]
    d["vms"] = d["vms"][:1]
    d["fabric"]["tenants"] = d["fabric"]["tenants"][:1]
    for k, v in extra.items():
        if k == "vms":
            d["vms"][0].update(v)
        else:
            d[k] = v
    return scenario_from_dict(d)


def test_job_vm_arriving_after_its_job_started_is_refused():
    # the 24 data nodes arrive over the first 10 min (the job starts at 0 s): the job cannot have run on them
    sc = _one_tenant(vms={"arrivals": {"over": "10 min", "lifetime": "10 h", "lifetime_sigma": 0}})
    with pytest.raises(InputError, match=r"fabric.tenants\[0\].vms.*job VM datanodes-a-\d+ is alive \d+\.\.\d+ s "
                                         r"but its job runs 0\.\.\d+ s: the batch-job model runs a job once"):
        simulate(resolve(sc))


def test_job_vm_whose_host_fails_during_the_job_is_refused():
    # cluster-a-0 fails 60 s into the job (which runs for minutes): its data nodes stop mid-job
    sc = _one_tenant(failures={"events": [{"time": "60 s", "target": "cluster-a-0", "duration": "1 h"}]})
    with pytest.raises(InputError, match=r"is alive 0\.\.60 s \(its host fails during the job\) but its job runs"):
        simulate(resolve(sc))


def test_a_failure_after_the_job_ended_is_allowed_and_the_down_host_has_no_demand():
    # the job ends before 20 min; cluster-a-0 fails at 19 min: no job VM is lost during its job, and the
    # failed host carries no CPU demand while it is down
    sc = _one_tenant(failures={"events": [{"time": "19 min", "target": "cluster-a-0", "duration": "1 h"}]},
                     output={"host_timeseries": "on"})
    r = simulate(resolve(sc))
    runtime = r.summary["fabric"]["tenants"][0]["runtime_s"]
    assert runtime < 19 * 60
    hs = r.host_steps()
    t = hs["time_s"].to_numpy() - r.ctx.grid.start_s
    down = (hs["host"].to_numpy() == "cluster-a-0") & (t >= 19 * 60 + 10)
    assert down.any() and not hs["cpu_demand_mhz"].to_numpy()[down].any()
