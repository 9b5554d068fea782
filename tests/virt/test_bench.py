"""The tile benchmark: schema-valid shareable JSON, reproducibility, bad input, compare, CLI."""

import json
from pathlib import Path

import jsonschema
import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from densim.tools.tiles.compare import format_comparison, load_result
from densim.tools.tiles.core import Bench, BenchHost, load_host, run_bench, schema
from densim.cli.commands.bench import register
from densim.errors import InputError

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "virt"


@pytest.fixture(scope="module")
def modern_result():
    return run_bench(load_host(EXAMPLES / "host-8180.yaml"))


def test_modern_host_result_validates_against_published_schema(modern_result):
    published = json.loads((ROOT / "docs" / "reference" / "bench-tiles.schema.json").read_text())
    assert published == schema()  # the docs copy is the shipped schema
    jsonschema.validate(modern_result, published)
    r = modern_result["result"]
    assert r["tiles"] >= 20  # 56 cores carry far more than the 12-core X5680's 12 tiles
    assert modern_result["seed"] == 1 and modern_result["densim_version"]
    assert modern_result["host"]["cpu"]["name"] == "xeon-platinum-8180"
    # a passing result meets every QoS bound
    assert all(w["qos_margin"] >= 0 for w in r["workloads"])


def test_schema_rejects_a_result_without_a_score(modern_result):
    bad = json.loads(json.dumps(modern_result))
    del bad["result"]["score"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema())


def _host(**numa):
    return BenchHost.model_validate({"server": "ibm-x3650-m3-x5680", "virtualization": {"model": "kvm", "numa": numa or {"policy": "none"}}})


def test_same_seed_same_result_and_more_tiles_less_margin():
    b = Bench(_host())
    a1, a2 = b.evaluate(3), Bench(_host()).evaluate(3)
    assert a1.margins == a2.margins and a1.score == a2.score
    heavy = b.evaluate(9)
    assert heavy.margins["web"] < a1.margins["web"]
    # score counts normalised throughputs: 4 workloads per tile, each close to 1 when unloaded
    assert a1.score == pytest.approx(12.0, rel=0.05)


def test_turbo_and_power_gating_in_capacity_and_power():
    b = Bench(_host())
    # fewer busy cores -> higher clock (X5680: 3460 MHz all-core, 3600 MHz one core)
    assert b.effective_mhz(0.1)[0] > b.effective_mhz(1.0)[0] == pytest.approx(3460)
    off = Bench(BenchHost.model_validate({"server": "ibm-x3650-m3-x5680", "virtualization": {"model": "kvm", "power": {"turbo": False, "power_gating": False}}}))
    assert off.effective_mhz(0.1)[0] == pytest.approx(3330)  # catalog base clock 3.33 GHz
    assert b.package_power_w(0.2) < off.package_power_w(0.2)


def test_auto_binding_places_without_being_told():
    b = Bench(_host(policy="auto"))
    nodes = b.initial_placement(4)
    assert set(np.unique(nodes)) == {0, 1}  # every VM bound, both nodes used


def test_bad_host_file_is_one_line_error(tmp_path):
    p = tmp_path / "h.yaml"
    p.write_text("server: ibm-x3650-m3-x5680\nvirtualization: {model: kvm, numa: {policy: sometimes}}\n")
    with pytest.raises(InputError) as err:
        load_host(p)
    assert "h.yaml:virtualization.numa.policy:" in err.value.one_line()
    p.write_text("server: no-such-server\n")
    with pytest.raises(InputError, match="no-such-server"):
        load_host(p)


def _app():
    app = typer.Typer()
    register(app)

    @app.callback()
    def _cb() -> None:
        pass

    return app


def test_cli_compare_side_by_side(tmp_path, modern_result):
    a = tmp_path / "a.json"
    b = tmp_path / "b.json"
    a.write_text(json.dumps(modern_result))
    other = json.loads(json.dumps(modern_result))
    other["result"]["score"] = modern_result["result"]["score"] * 1.1
    b.write_text(json.dumps(other))
    text = format_comparison(load_result(a), load_result(b), "a", "b")
    assert "1.100x" in text and "QoS margin web" in text
    res = CliRunner().invoke(_app(), ["bench", "compare", str(a), str(b)])
    assert res.exit_code == 0 and "xeon-platinum-8180" in res.output
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"schema": "densim-bench-tiles/1"}))
    res = CliRunner().invoke(_app(), ["bench", "compare", str(a), str(bad)])
    assert res.exit_code == 1 and "bad.json" in res.output + getattr(res, "stderr", "")


def test_cli_bench_tiles_writes_json(tmp_path):
    host = tmp_path / "h.yaml"
    host.write_text("name: small\nserver: ibm-x3650-m3-x5680\nvirtualization: {model: kvm, hypervisor: {host_hugepages: true, network: sriov}, numa: {policy: auto}}\nrun: {intervals: 3, warmup_intervals: 1}\n")
    out = tmp_path / "r"
    res = CliRunner().invoke(_app(), ["bench", "tiles", str(host), "--out", str(out), "--seed", "7"])
    assert res.exit_code == 0, res.output
    doc = json.loads((out / "summary.json").read_text())  # --out is a folder; the result is OUT/summary.json
    jsonschema.validate(doc, schema())
    assert doc["seed"] == 7 and doc["result"]["tiles"] >= 8
    res = CliRunner().invoke(_app(), ["bench", "tiles", str(tmp_path / "missing.yaml"), "--out", str(tmp_path / "x")])
    assert res.exit_code == 1 and not (tmp_path / "x").exists()


def test_main_cli_lists_bench_and_the_study(traces):  # densim studies runs ha-bitbrains (the shared traces)
    from densim.cli.main import app

    res = CliRunner().invoke(app, ["bench", "--help"])
    assert res.exit_code == 0 and "tiles" in res.output and "compare" in res.output
    res = CliRunner().invoke(app, ["studies"])
    assert res.exit_code == 0 and "kvm-tuning" in res.output


def test_main_cli_bench_tiles_bad_input_exit_1(tmp_path):
    from densim.cli.main import app

    p = tmp_path / "h.yaml"
    p.write_text("server: ibm-x3650-m3-x5680\nvirtualization: {model: kvm, hypervisor: {network: carrier-pigeon}}\n")
    res = CliRunner().invoke(app, ["bench", "tiles", str(p), "--out", str(tmp_path / "r")])
    assert res.exit_code == 1
    assert not (tmp_path / "r").exists()


def test_howto_host_snippet_is_a_valid_host_file(tmp_path):
    import re

    text = (ROOT / "docs" / "howto" / "consolidation-tiles.md").read_text()
    block = re.search(r"```yaml\n(.*?)```", text, re.S).group(1)
    p = tmp_path / "h.yaml"
    p.write_text(block)
    h = load_host(p)
    assert h.virtualization.numa.policy == "auto" and h.virtualization.hypervisor.network == "vhost"


def test_rebalancing_fixes_a_start_placement_misled_by_vm_sizes():
    from densim.tools.tiles.core import builtin_tile

    # vCPU counts that do not follow load: the start heuristic (fewest committed vCPUs) then
    # leaves node 0 busier; the balancer sees the observed use and moves a VM
    sizes = {"web": 1, "infra": 2, "app": 1, "db": 1, "mail": 2, "idle": 4}
    t = builtin_tile()
    tile = t.model_copy(update={"vms": [vm.model_copy(update={"vcpus": sizes[vm.name]}) for vm in t.vms]})

    def run(rebalance_s):
        h = BenchHost.model_validate({"server": "ibm-x3650-m3-x5680", "virtualization": {
            "model": "kvm", "hypervisor": {"host_hugepages": True, "network": "sriov"},
            "numa": {"policy": "auto", "rebalance_interval": rebalance_s, "imbalance_threshold": 0.04}}})
        return Bench(h, tile=tile).evaluate(12, stop_on_fail=False)

    static, balanced = run(1e9), run(300)
    assert static.moves == 0 and balanced.moves >= 1
    gap = lambda e: abs(e.utilisation[-1][0] - e.utilisation[-1][1])  # noqa: E731
    assert gap(balanced) < gap(static)
    assert min(balanced.margins.values()) > min(static.margins.values())


# ---------------------------------------------------------------- bench compare: every leaf typed (issue 20)


def test_compare_reads_back_exactly_what_bench_tiles_wrote(tmp_path, modern_result):
    a = tmp_path / "a.json"
    a.write_text(json.dumps(modern_result))
    assert load_result(a) == json.loads(json.dumps(modern_result))


def _damaged(tmp_path, modern_result, path: tuple, value):
    doc = json.loads(json.dumps(modern_result))
    node = doc
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(doc))
    return p


@pytest.mark.parametrize("path,value,where,problem", [
    # leaves the published schema leaves open (the embedded tile, platform, run): accepted before
    (("configuration", "tile", "vms", 1, "vcpus"), "1e400 GiB", "configuration.tile.vms[1].vcpus",
     'Input should be a valid integer, got "1e400 GiB"'),
    (("host", "platform", "numa", "remote_cycles"), "inf W", "host.platform.numa.remote_cycles",
     'Input should be a valid number, got "inf W"'),
    (("configuration", "run", "seed"), -1, "configuration.run.seed", "must be >= 0"),
    (("configuration", "run", "intervals"), "6", "configuration.run.intervals", 'Input should be a valid integer, got "6"'),
    (("host", "platform", "tlb", "entries_4k"), True, "host.platform.tlb.entries_4k", "Input should be a valid integer, got true"),
    # leaves the published schema types: its message, with the same kind of field path
    (("result", "tiles"), True, "result.tiles", "does not match the tile result schema: True is not of type 'integer'"),
    (("host", "cpu", "base_clock"), "1e400 MHz", "host.cpu.base_clock",
     "does not match the tile result schema: '1e400 MHz' is not of type 'number'"),
    # fewer tiles counting the partial one than whole tiles cannot be
    (("result", "tiles_fractional"), 0.5, "result", "tiles_fractional (0.5) must lie in [tiles, tiles + 1)"),
])
def test_compare_refuses_a_wrongly_typed_leaf_in_one_line(tmp_path, modern_result, path, value, where, problem):
    from densim.cli.main import app

    bad = _damaged(tmp_path, modern_result, path, value)
    a = tmp_path / "a.json"
    a.write_text(json.dumps(modern_result))
    res = CliRunner().invoke(app, ["bench", "compare", str(a), str(bad)])
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert res.exit_code == 1 and len(lines) == 1 and res.stdout == "", res.output
    assert lines[0].startswith(f"densim: error: {bad}:{where}: ") and problem in lines[0], lines[0]


def test_compare_refuses_a_margin_without_its_response_time(tmp_path, modern_result):
    bad = _damaged(tmp_path, modern_result, ("result", "workloads", 0, "p_response_s"), None)
    with pytest.raises(InputError, match=r"result\.workloads\[0\]: p_response_s and qos_margin are both numbers"):
        load_result(bad)


def test_compare_names_the_schema_path_like_the_other_errors(tmp_path, modern_result):
    # the published schema's own check comes first; its path is written like a field path
    bad = _damaged(tmp_path, modern_result, ("host", "storage", "count"), 0)
    with pytest.raises(InputError) as exc:
        load_result(bad)
    assert exc.value.one_line().startswith(f"{bad}:host.storage.count: does not match the tile result schema: 0 is less than")


@pytest.mark.parametrize("run,words", [
    ("{seed: -1}", "run.seed: must be >= 0"),  # reached numpy as an unexpected ValueError
    ("{seed: 18446744073709551616}", "run.seed: must be <= 18446744073709551615"),
    ("{intervals: 1000000000}", "run.intervals: must be <= 1000"),  # every tile count evaluated runs every interval
])
def test_host_file_run_settings_are_bounded(tmp_path, run, words):
    from densim.cli.main import app

    p = tmp_path / "h.yaml"
    p.write_text(f"server: ibm-x3650-m3-x5680\nrun: {run}\n")
    res = CliRunner().invoke(app, ["bench", "tiles", str(p), "--out", str(tmp_path / "r")])
    assert res.exit_code == 1 and res.stderr.strip() == f"densim: error: {p}:{words}", res.output
    assert not (tmp_path / "r").exists()
