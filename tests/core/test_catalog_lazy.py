"""The built-in catalog is parsed on first use (issue 34: start-up): a run that reads no catalog part parses no YAML.

``builtin_catalog()`` and ``Catalog.layered(parts)`` now describe their sections and make them when a part is
first looked up. The catalog they make must be the one the eager code made: every file layered in name
order, a scenario's parts over it, a part without a name refused at once.
"""

from __future__ import annotations

import pickle
from importlib import resources

import pytest

import densim.catalog.core as core
from densim.catalog.core import Catalog, builtin_catalog
from densim.plant import plant_from_dict

# 2 hosts with an inline CPU and power model, no catalog server: nothing to look up in the catalog
INLINE = {
    "name": "inline",
    "cluster": {"hosts": [{"name": "h", "count": 2, "cpu": {"sockets": 1, "cores_per_socket": 8, "base_clock": "2 GHz"},
                           "memory": "64 GiB", "power": {"model": "linear", "idle": "100 W", "peak": "200 W"}}]},
    "vms": [{"name": "v", "count": 3, "vcpus": 2, "memory": "4 GiB", "profile": {"kind": "diurnal", "mean": 0.5, "amplitude": 0.1}}],
    "simulation": {"step": "5 min", "horizon": "1 h"},
}


@pytest.fixture
def parses(monkeypatch):
    """Counts the catalog files parsed, from a fresh builtin_catalog()."""
    calls = []
    real = core._load_yaml_sections
    monkeypatch.setattr(core, "_load_yaml_sections", lambda text, origin: calls.append(origin) or real(text, origin))
    builtin_catalog.cache_clear()
    yield calls
    builtin_catalog.cache_clear()


def _eager() -> dict:
    """The sections as the eager code made them: every catalog file in name order, later names over earlier."""
    sections: dict = {}
    root = resources.files("densim") / "catalog"
    for item in sorted(root.iterdir(), key=lambda p: p.name):
        if item.name.endswith((".yaml", ".yml")):
            for section, entries in core._load_yaml_sections(item.read_text(encoding="utf-8"), item.name).items():
                for entry in entries or []:
                    sections.setdefault(section, {})[str(entry["name"]).lower()] = dict(entry)
    return sections


def test_a_run_without_catalog_parts_parses_no_catalog_file(parses):
    plant = plant_from_dict(INLINE)
    assert parses == []
    assert plant.host_groups[0].cpu.cores == 8
    plant.catalog.names("cpus")  # the first lookup parses every file, once
    n = len(parses)
    assert n >= 10 and plant.catalog.raw("cpus", "xeon-x5680")["cores"] == 6 and len(parses) == n


def test_the_lazy_catalog_is_the_eager_one_with_parts_over_it(parses):
    cat = builtin_catalog()
    assert parses == []
    eager = _eager()
    assert cat.sections() == sorted(eager)
    for section, entries in eager.items():
        assert cat.names(section) == sorted(e["name"] for e in entries.values())
        for key, entry in entries.items():
            assert cat.raw(section, key) == entry
    mine = cat.layered({"cpus": [{"name": "Xeon-X5680", "cores": 99}], "new_section": [{"name": "a", "x": 1}]})
    assert mine.raw("cpus", "xeon-x5680")["cores"] == 99 and cat.raw("cpus", "xeon-x5680")["cores"] == 6
    assert ("new_section", "A") in mine and "new_section" not in cat.sections()
    assert pickle.loads(pickle.dumps(mine)).raw("cpus", "xeon-x5680")["cores"] == 99  # a distributed run's plant


def test_a_part_without_a_name_is_refused_when_layered_not_later():
    with pytest.raises(KeyError):
        Catalog().layered({"cpus": [{"cores": 4}]})
