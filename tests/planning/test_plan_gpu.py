"""densim plan with GPU candidates: 'buy N x host with K GPUs', with the limiting factor; GPU licences."""

from __future__ import annotations

import numpy as np
import pytest

from densim.errors import InputError


def _plan(gpu, candidates, licensing=None):
    from densim.spec.plan import PlanSpec
    from densim.tools.plan.capacity import plan
    from densim.workloads.inventory import Inventory

    # 48 VMs of 4 vCPUs and 4 GiB, no CPU series: placed by vCPUs (1 per core) and memory only: a 2 x 16-core
    # host takes 8, so the CPU side needs 6 hosts. 24 of them ('vdi-*') ask for a GPU.
    n = 48
    names = np.array([f"vdi-{i:02d}" if i < 24 else f"app-{i:02d}" for i in range(n)], dtype=object)
    inv = Inventory(names=names, vcpus=np.full(n, 4, dtype=np.int32), vcpu_mhz=np.full(n, 2000.0),
                    mem_bytes=np.full(n, 4 * 2.0**30), source="gpu", fmt="generic")
    spec = PlanSpec.model_validate({
        "qos": {"vcpus_per_core": 1.0},
        "cost": {"years": 4, "pue": 1.0, "price_per_kwh_usd": 0.0},
        "candidates": candidates, "gpu": gpu, "licensing": licensing,
    })
    return plan(inv, spec)


def _cand(name, gpus=None, price=20_000):
    c = {"name": name, "cpu": {"sockets": 2, "cores_per_socket": 16, "threads_per_core": 1, "base_clock": "2 GHz"},
         "memory": "256 GiB", "power": {"model": "linear", "idle": "100 W", "peak": "300 W"}, "price_usd": price}
    if gpus is not None:
        c["gpus"] = gpus
    return c


def test_gpu_decides_the_host_count_and_says_so():
    # 24 x 12 GiB vGPUs on L4s (24 GiB: 2 per GPU): 12 GPUs. With 1 L4 per host: 12 hosts > 6 for CPU -> GPU limits;
    # with 4 L4s per host: 3 hosts < 6 -> CPU/memory limits (6 hosts, 24 GPUs)
    gpu = {"requests": [{"vms": "vdi-*", "gpu": {"mode": "vgpu", "memory": "12 GiB"}}]}
    res = _plan(gpu, [_cand("1 x L4", {"model": "nvidia-l4", "count": 1}),
                      _cand("4 x L4", {"model": "nvidia-l4", "count": 4}, price=26_000)],
                {"products": ["nvidia-ai-enterprise", "nvidia-vpc"]})
    r = {x.name: x for x in res.results}
    one, four = r["1 x L4"], r["4 x L4"]
    assert one.feasible and four.feasible
    assert (one.gpu["hosts_cpu_memory"], one.gpu["hosts_gpu_vms"], one.n_hosts) == (6, 12, 12)
    assert one.row()["limiting_factor"] == "gpu" and one.row()["gpus"] == 12
    assert (four.gpu["hosts_gpu_vms"], four.n_hosts, four.row()["limiting_factor"]) == (3, 6, "cpu/memory")
    # licences: AI Enterprise $4,500 per GPU-year: 12 GPUs -> 54,000; 6 hosts x 4 GPUs -> 108,000;
    # vPC $50 per vGPU VM: 24 x 50 = 1,200 on both
    lic = {x["name"]: x for x in one.tco["licences"]}
    assert lic["nvidia-ai-enterprise"]["units"] == 12 and lic["nvidia-ai-enterprise"]["usd_per_year"] == pytest.approx(54_000)
    assert lic["nvidia-vpc"]["usd_per_year"] == pytest.approx(1_200)
    assert {x["name"]: x for x in four.tco["licences"]}["nvidia-ai-enterprise"]["usd_per_year"] == pytest.approx(108_000)
    # GPU power, 1 x L4: 12 GPUs, each with two fully busy vGPUs (utilisation not given: 1, an upper bound):
    # 12 x 72 W = 864 W on top of the hosts' CPU power
    assert one.gpu["gpu_power_w"] == pytest.approx(12 * 72.0)


def test_mig_layout_and_inference_hosts():
    # 6 VMs ask for a 4g.40gb and 6 for a 3g.40gb on H100s (8 per host). Each VM has 4 vCPUs and a host 32: 8 GPU
    # VMs per host -> 2 hosts. Host 0: the six 4g at slice 0 of GPUs 0-5, two 3g at slice 4 of GPUs 0 and 1
    # (pack: the fullest GPU that fits); host 1: four 3g, two per GPU (starts 0 and 4): 6 + 2 = 8 GPUs.
    # An LLM service on top is sized by densim.models.inference and gets whole hosts of its own.
    gpu = {"requests": [{"vms": "vdi-0[0-5]", "gpu": {"mode": "mig", "profile": "4g.40gb"}},
                        {"vms": "vdi-0[6-9]", "gpu": {"mode": "mig", "profile": "3g.40gb"}},
                        {"vms": "vdi-1[0-1]", "gpu": {"mode": "mig", "profile": "3g.40gb"}}],
           "inference": [{"name": "chat", "model": "llama-3.1-8b", "tokens_in": 512, "tokens_out": 256,
                          "tokens_per_s": 20_000, "ttft": "2 s", "tpot": "100 ms"}]}
    res = _plan(gpu, [_cand("hgx", {"model": "nvidia-h100-sxm", "count": 8}, price=250_000)])
    r = res.results[0]
    assert r.feasible, r.reason
    assert (r.gpu["hosts_gpu_vms"], r.gpu["gpus_used_by_vms"]) == (2, 8)
    inf = r.gpu["inference"][0]
    assert r.gpu["hosts_inference"] == inf["hosts"] >= 1
    assert r.n_hosts == 6 + inf["hosts"] and r.row()["limiting_factor"] == "gpu"
    assert inf["capacity_tokens_per_s"] >= 20_000


def test_an_llm_service_on_an_older_engine_reads_the_kv_cache_per_query_head():
    # gpu.inference[].kv_read as densim gpu size --kv-read: the service's answer is the sizing tool's, and Llama 3.1
    # 70B (64 query heads, 8 KV heads) read per query head needs at least as many GPUs at lower capacity per GPU
    from densim.cli.commands.gpu import run_gpu_size

    svc = {"name": "chat", "model": "llama-3.1-70b", "precision": "fp8", "tokens_in": 128, "tokens_out": 1024,
           "tokens_per_s": 20_000, "ttft": "10 s", "tpot": "200 ms"}
    cand = [_cand("hgx", {"model": "nvidia-h100-sxm", "count": 8}, price=250_000)]
    new = _plan({"inference": [svc]}, cand).results[0].gpu["inference"][0]
    old = _plan({"inference": [svc | {"kv_read": "per-query-head"}]}, cand).results[0].gpu["inference"][0]
    tool = run_gpu_size(model="llama-3.1-70b", gpu="nvidia-h100-sxm", tokens_in=128, tokens_out=1024,
                        tokens_per_s=20_000.0, ttft="10 s", tpot="200 ms", gpus_per_host=8, precision="fp8",
                        kv_precision=None, bw_efficiency=None, compute_efficiency=None, kv_read="per-query-head")
    assert (old["tp"], old["batch"], old["gpus"]) == (tool["tp"], tool["batch"], tool["gpus"])
    assert old["gpus"] >= new["gpus"]
    assert old["capacity_tokens_per_s"] / old["gpus"] < new["capacity_tokens_per_s"] / new["gpus"]


def test_gpu_demand_without_gpus_or_with_a_profile_the_card_lacks_is_infeasible_with_the_reason():
    gpu = {"requests": [{"vms": "vdi-*", "gpu": {"mode": "mig", "profile": "1g.10gb"}}]}
    res = _plan(gpu, [_cand("no gpu"), _cand("l4", {"model": "nvidia-l4", "count": 2})])
    r = {x.name: x for x in res.results}
    assert not r["no gpu"].feasible and "the candidate has no gpus" in r["no gpu"].reason
    assert not r["l4"].feasible and r["l4"].reason == "nvidia-l4 does not offer MIG profile 1g.10gb"


def test_a_pattern_that_matches_nothing_is_a_one_line_error():
    gpu = {"requests": [{"vms": "gpu-*", "gpu": {"mode": "passthrough", "count": 1}}]}
    with pytest.raises(InputError, match=r"gpu.requests\[0\].vms: 'gpu-\*' matches no VM of the inventory"):
        _plan(gpu, [_cand("l4", {"model": "nvidia-l4", "count": 2})])


def test_the_headline_names_the_gpu_and_the_lower_bound_counts_gpu_shares():
    from densim.tools.plan.report import headline_lines, summary_dict

    gpu = {"requests": [{"vms": "vdi-*", "gpu": {"mode": "vgpu", "memory": "12 GiB"}}]}
    res = _plan(gpu, [_cand("1 x L4", {"model": "nvidia-l4", "count": 1})])
    s = summary_dict(res)
    lines = headline_lines(s)
    # 24 vGPUs of 12 GiB = 24 x 0.5 GPU = 12 GPUs, one per host: lower bound 12 = the answer
    assert ("Limiting resource: GPU. 1 x nvidia-l4 per host: the GPU demand needs 12 host(s) for the VMs' GPUs, "
            "the CPU and memory bounds 6; 12 GPUs before spares.") in lines
    assert res.results[0].lower_bound_hosts == 12


def test_the_howto_plan_example_gives_the_figures_it_quotes(tmp_path):
    # docs/howto/gpu-hosts.md, "Buying GPU hosts with densim plan"
    import json
    from pathlib import Path

    from densim.cli.main import app
    from typer.testing import CliRunner

    ex = Path(__file__).resolve().parents[2] / "examples" / "gpu"
    res = CliRunner().invoke(app, ["plan", str(ex / "inventory.csv"), "--candidates", str(ex / "plan-gpu.yaml"),
                                   "--out", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    rows = {r["candidate"]: r for r in s["ranking"]}
    two, eight = rows["2U 2 x L40S"], rows["4U 8 x L40S"]
    assert (two["hosts"], two["hosts_gpu_vms"], two["hosts_inference"], two["limiting_factor"]) == (10, 6, 3, "gpu")
    assert (eight["hosts"], eight["hosts_gpu_vms"], eight["hosts_inference"]) == (4, 2, 1)
    assert s["best"] == "2U 2 x L40S"
    assert "buy 10 x host with 2 x nvidia-l40s (limited by gpu" in res.output


def test_gpu_licence_rules_by_hand():
    from densim.catalog.core import builtin_catalog
    from densim.models.licensing import LicenceProduct, fleet_licences, licence_products

    ps = licence_products(builtin_catalog())
    # AI Enterprise: 3 hosts x 8 GPUs = 24 GPU-years x $4,500 = $108,000 a year
    r = fleet_licences(ps["nvidia-ai-enterprise"], n_hosts=3, sockets=2, cores_per_socket=32, vm_vcpus=[], years=4,
                       gpus_per_host=8)
    assert (r["units"], r["units_per_host"], r["usd_per_year"]) == (24, 8, pytest.approx(108_000))
    # RTX vWS: one concurrent-user licence per vGPU VM, whatever the hosts: 40 x $250 = $10,000
    r = fleet_licences(ps["nvidia-rtx-vws"], n_hosts=3, sockets=2, cores_per_socket=32, vm_vcpus=[], years=4, vgpu_vms=40)
    assert (r["units"], r["usd_per_year"], r["price_status"]) == (40, pytest.approx(10_000), "estimate")
    with pytest.raises(ValueError, match="pack_cores does not apply to rule per_gpu"):
        LicenceProduct(name="x", rule="per_gpu", unit="GPU", pack_cores=2, term="year", price_usd=1,
                       price_status="estimate", price_date="2025", source="test")
