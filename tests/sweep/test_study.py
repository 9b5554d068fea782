"""Study files: Cartesian product x replications, stable ids, seeds from one root seed."""

import pytest
from conftest import write_study

from densim.errors import InputError
from densim.rng import spawn_seeds
from densim.tools.sweep.expand import load_sweep, parse_path, scenario_id, set_path


def test_product_times_replications(tmp_path):
    # 2 overcommit values x 2 host counts = 4 points; x 3 replications = 12 tasks
    study = load_sweep(write_study(tmp_path, reps=3))
    assert len(study.points) == 4
    assert len(study.tasks()) == 12
    assert study.seeds == spawn_seeds(7, 3)
    # every point carries its axis values into the scenario mapping
    p = next(p for p in study.points if p.values == {"placement.cpu_overcommit": 2, "cluster.hosts[0].count": 3})
    assert p.mapping["placement"]["cpu_overcommit"] == 2
    assert p.mapping["cluster"]["hosts"][0]["count"] == 3
    assert p.mapping["cluster"]["hosts"][0]["memory"] == "64 GiB"  # untouched fields survive


def test_ids_do_not_depend_on_axis_order(tmp_path):
    a = load_sweep(write_study(tmp_path, axes="  placement.cpu_overcommit: [1, 2]\n  cluster.hosts[0].count: [2, 3]\n"))
    b = load_sweep(write_study(tmp_path, axes="  cluster.hosts[0].count: [2, 3]\n  placement.cpu_overcommit: [1, 2]\n"))
    assert {p.id for p in a.points} == {p.id for p in b.points}
    assert scenario_id({"x": 1, "y": 2}) == scenario_id({"y": 2, "x": 1})


def test_set_path_merges_mappings_and_indexes_lists():
    m = {"cluster": {"hosts": [{"count": 1, "cpu": {"cores_per_socket": 8}}]}}
    set_path(m, "cluster.hosts[0].cpu", {"base_clock": "3 GHz"})
    assert m["cluster"]["hosts"][0]["cpu"] == {"cores_per_socket": 8, "base_clock": "3 GHz"}
    set_path(m, "placement.policy", "best-fit")  # missing mappings are created
    assert m["placement"] == {"policy": "best-fit"}
    assert parse_path("a.b[2].c") == ["a", "b", 2, "c"]
    with pytest.raises(KeyError):
        set_path(m, "cluster.hosts[3].count", 2)


def test_bad_axis_is_one_line_naming_file_and_axis(tmp_path):
    path = write_study(tmp_path, axes="  cluster.hosts[5].count: [1, 2]\n")
    with pytest.raises(InputError) as exc:
        load_sweep(path)
    line = str(exc.value)
    assert "study.yaml:axes.cluster.hosts[5].count:" in line and "\n" not in line


def test_engine_runner_validates_every_point_before_running(tmp_path):
    # overcommit 0 violates 'cpu_overcommit > 0': rejected at load time, naming the point
    path = write_study(tmp_path, axes="  placement.cpu_overcommit: [1, 0]\n", runner="engine")
    with pytest.raises(InputError) as exc:
        load_sweep(path)
    assert "placement.cpu_overcommit=0" in str(exc.value)
    assert "must be > 0" in str(exc.value)


def test_runner_is_a_registered_name_never_a_module(tmp_path):
    # 'os:system' would import os and call os.system(mapping, seed) if data files could name modules
    path = write_study(tmp_path, runner="os:system")
    with pytest.raises(InputError, match="unknown runner 'os:system'.*registered: engine.*not a module"):
        load_sweep(path)


def test_installed_plugin_runner_is_found_by_its_entry_point(toy_env, tmp_path):
    # tests/sweep/densim_toy_runner-0.1.dist-info declares [densim.runners] toy = toy_runner:run
    from densim.tools.sweep.runners import resolve_runner
    from toy_runner import run

    assert resolve_runner("toy") is run
    assert load_sweep(write_study(tmp_path)).spec.runner == "toy"
