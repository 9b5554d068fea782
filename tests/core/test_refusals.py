"""Inputs refused with a one-line error naming the file and field (issue 29): quantities that are not one number
and a unit, YAML integers that read as something else than they look, imports that multiply or pull in a foreign
file, plan files with duplicate or unknown names."""

from __future__ import annotations

import copy

import pytest
import yaml
from typer.testing import CliRunner

from densim.cli.main import app
from densim.errors import InputError, ScenarioInvalid
from densim.units import UnitError, parse

runner = CliRunner()

BASE = {
    "cluster": {"hosts": [{"name": "hg", "count": 2, "cpu": {"cores_per_socket": 4, "base_clock": "2 GHz"},
                           "memory": "16 GiB", "power": {"model": "linear", "idle": "100 W", "peak": "200 W"}}]},
    "vms": [{"name": "v", "count": 2, "vcpus": 1, "memory": "1 GiB", "profile": {"kind": "constant", "mean": 0.5}}],
    "simulation": {"step": "5 min", "horizon": "1 h"},
}


def _validate(path) -> tuple[int, list[str]]:
    r = runner.invoke(app, ["validate", str(path)])
    return r.exit_code, (r.stderr or r.stdout).strip().splitlines()


# ------------------------------------------------------------------------------------------- quantities
@pytest.mark.parametrize("text,unit,words", [
    ("2*3 GiB", "byte", "not a number followed by a unit"),  # pint used to evaluate it: 6 GiB
    ("2 GiB + 1 GiB", "byte", "not a number followed by a unit"),  # 3 GiB
    ("2 GiB/1", "byte", "not a number followed by a unit"),
    ("2.3 GHz;", "MHz", "not a number followed by a unit"),  # pint ignored the ';'
    ("2 GHz # fast", "MHz", "not a number followed by a unit"),
    ("1,2,3 W", "W", "not a number followed by a unit"),  # commas only as thousands separators
    ("\u0662 GiB", "byte", "ASCII"),  # Arabic-Indic 2: used to be 2 GiB
    ("\uff12 GiB", "byte", "ASCII"),  # full-width 2
    ("\u0662", "byte", "ASCII"),
    ("1e30 W", "W", "too large"),
])
def test_only_a_number_and_a_unit_is_a_quantity(text, unit, words):
    with pytest.raises(UnitError, match=words):
        parse(text, unit)


def test_bare_numbers_beyond_any_real_part_are_refused():
    with pytest.raises(UnitError, match="too large"):
        parse(1e300, "byte")


@pytest.mark.parametrize("text,unit,value", [
    ("256 GiB", "byte", 256 * 2**30), ("2GiB", "byte", 2 * 2**30), ("1,000 W", "W", 1000.0), ("10 Gbit/s", "byte/s", 1.25e9),
    ("75000 IOPS", "1/s", 75000.0), ("1 kWh", "J", 3.6e6), ("3 kW h", "J", 3 * 3.6e6), ("1 year", "s", 31557600.0),
    ("  5 min ", "s", 300.0), ("1e24 byte", "byte", 1e24),
])
def test_number_and_unit_forms_still_parse(text, unit, value):
    assert parse(text, unit) == pytest.approx(value)


def test_a_bad_quantity_is_one_line_naming_the_field(tmp_path):
    doc = copy.deepcopy(BASE)
    doc["vms"][0]["memory"] = "2*3 GiB"
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump(doc))
    code, err = _validate(f)
    assert code == 1 and len(err) == 1 and f"{f}:vms[0].memory:" in err[0], err


# ------------------------------------------------------------------------------------------- YAML integers
@pytest.mark.parametrize("text,words", [
    ("014", "octal"),  # YAML 1.1: 014 = 12
    ("-014", "octal"),
    ("0_14", "octal"),
    ("1:30", "base-60"),  # YAML 1.1: 1:30 = 90
    ("9" * 5000, "5,000 digits"),  # used to be 'unexpected ValueError' (Python's 4,300-digit limit)
])
def test_ambiguous_or_huge_yaml_integers_are_refused(text, words, tmp_path):
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump(BASE, sort_keys=False).replace("count: 2", f"count: {text}", 1))
    code, err = _validate(f)
    assert code == 1 and len(err) == 1, err
    assert words in err[0] and f"{f}:line " in err[0], err


def test_plain_yaml_integers_still_load():
    from densim.textio import parse_yaml

    assert parse_yaml("a: 14\nb: 0\nc: -3\nd: 1_000\ne: 0x1F\nf: '014'\n", "x") == {
        "a": 14, "b": 0, "c": -3, "d": 1000, "e": 31, "f": "014"}


# ------------------------------------------------------------------------------------------- imports
def _chain(folder, levels: int):
    """levels files, each importing the next twice; the last sets the name."""
    for i in range(levels):
        nxt = f"f{i + 1}.yaml"
        (folder / f"f{i}.yaml").write_text(f"imports: [{nxt}, {nxt}]\n" if i < levels - 1 else "name: leaf\n")
    top = folder / "top.yaml"
    top.write_text(yaml.safe_dump({**BASE, "imports": ["f0.yaml"]}, sort_keys=False))
    return top


def test_a_file_imported_many_times_is_read_once(tmp_path, monkeypatch):
    """12 levels of files each importing the next twice: 2**12 = 4,096 reads of the leaf before, 13 files now."""
    from densim.spec import loader

    reads = []
    real = loader._read_mapping
    monkeypatch.setattr(loader, "_read_mapping", lambda p, *a: reads.append(p) or real(p, *a))
    sc = loader.load_scenario(_chain(tmp_path, 12))
    assert sc.name == "leaf"
    assert len(reads) == 13 and len(set(reads)) == 13


def test_imports_nested_too_deep_are_refused_quickly(tmp_path):
    """40 levels, each importing the next twice, never finished (2**40 reads); now one line at the 16th level."""
    import subprocess
    import sys

    top = _chain(tmp_path, 40)
    # in a child process with a hang guard far above the second it takes
    r = subprocess.run([sys.executable, "-m", "densim.cli.main", "validate", str(top)], capture_output=True, text=True,
                       timeout=120)
    err = r.stderr.strip().splitlines()
    assert r.returncode == 1 and len(err) == 1 and "nest more than 16 files deep" in err[0], err


def test_too_many_imported_files_are_refused(tmp_path):
    from densim.spec.loader import MAX_IMPORT_FILES

    names = [f"p{i}.yaml" for i in range(MAX_IMPORT_FILES + 1)]
    for n in names:
        (tmp_path / n).write_text("description: part\n")
    top = tmp_path / "top.yaml"
    top.write_text(yaml.safe_dump({**BASE, "imports": names}, sort_keys=False))
    code, err = _validate(top)
    assert code == 1 and len(err) == 1 and f"more than {MAX_IMPORT_FILES} files" in err[0], err


def test_a_foreign_imported_file_is_named_never_echoed(tmp_path):
    """A file of 'user:hash:...' lines used to come back one error line per line of the file."""
    foreign = tmp_path / "shadow"
    foreign.write_text("root:$6$secrethash:20228:0:99999:7:::\ndaemon:*:20228:0:99999:7:::\n")
    top = tmp_path / "top.yaml"
    top.write_text(yaml.safe_dump({**BASE, "imports": [str(foreign)]}, sort_keys=False))
    code, err = _validate(top)
    assert code == 1 and len(err) == 1, err
    assert f"{top}:imports[0]: {foreign} is not a valid scenario fragment" in err[0], err
    assert "secrethash" not in err[0] and "daemon" not in err[0]


def test_a_scenario_fragment_still_imports(tmp_path):
    from densim.spec.loader import load_scenario

    (tmp_path / "hosts.yaml").write_text(yaml.safe_dump({"cluster": BASE["cluster"]}))
    top = tmp_path / "top.yaml"
    top.write_text(yaml.safe_dump({k: v for k, v in BASE.items() if k != "cluster"} | {"imports": ["hosts.yaml"]}))
    assert load_scenario(top).cluster.hosts[0].count == 2


# ------------------------------------------------------------------------------------------- plan files
CANDIDATE = {"name": "a", "cpu": {"model": "xeon-e5-2698-v3", "sockets": 2}, "memory": "256 GiB", "price_usd": 9000,
             "power": {"model": "linear", "idle": "100 W", "peak": "400 W"}}


@pytest.mark.parametrize("change,where,words", [
    (lambda d: d["candidates"].append(dict(CANDIDATE)), "candidates[1].name", "'a' is also candidates[0]"),
    (lambda d: d["candidates"][0]["cpu"].update(model="no-such-cpu"), "candidates[0].cpu.model", "no-such-cpu"),
    (lambda d: d["candidates"][0].update(bom=[{"part": "no-such-part", "count": 2}], price_usd=None),
     "candidates[0].bom[0].part", "no-such-part"),
    (lambda d: d.update(policy="nonsense"), "policy", "'nonsense'"),
])
def test_plan_file_names_are_checked_when_loaded(change, where, words, tmp_path):
    """Unknown names used to be 'unexpected CatalogError/KeyError' in the middle of planning; duplicates were accepted."""
    from densim.tools.plan.capacity import load_plan_spec

    doc = {"candidates": [dict(CANDIDATE, cpu=dict(CANDIDATE["cpu"]))]}
    change(doc)
    doc["candidates"] = [{k: v for k, v in c.items() if v is not None} for c in doc["candidates"]]
    f = tmp_path / "candidates.yaml"
    f.write_text(yaml.safe_dump(doc))
    with pytest.raises(ScenarioInvalid) as exc:
        load_plan_spec(f)
    line = exc.value.lines()[0]
    assert line.startswith(f"{f}:{where}: ") and words in line, line
    assert isinstance(exc.value, InputError)


# ------------------------------------------------------------------------------------------- the time grid
@pytest.mark.parametrize("start,step,ok", [
    (1.7e9, "1 ms", True),  # today's Unix seconds: float64 spacing 2.4e-7 s, far below a millisecond
    (1e17, "5 min", False),  # spacing 16 s: more than a thousandth of the step
    (2.0**60, "1 h", False),  # start + step == start
])
def test_a_start_where_float64_cannot_resolve_the_step_is_refused(start, step, ok):
    from densim.spec.scenario import SimulationSpec

    if ok:
        assert SimulationSpec.model_validate({"start": start, "step": step, "horizon": "1 h"}).start_s == start
    else:
        with pytest.raises(Exception, match="apart, more than a thousandth"):
            SimulationSpec.model_validate({"start": start, "step": step, "horizon": "1 h"})


def test_builtin_catalog_power_tables_do_not_fall_with_load():
    """The check refuses a falling table in a scenario; the catalog's own servers must pass it."""
    import numpy as np

    from densim.catalog.core import builtin_catalog
    from densim.models.hardware import ServerSpec

    cat = builtin_catalog()
    for name in cat.names("servers"):
        p = ServerSpec.model_validate(cat.raw("servers", name)).power
        if p.points_w is not None:
            assert np.all(np.diff(p.points_w) >= 0), name


def test_a_file_with_no_scenario_section_is_not_echoed(tmp_path):
    """`densim validate /etc/shadow` used to print one 'unknown field' line per line of the file."""
    f = tmp_path / "shadow"
    f.write_text("root:$6$secrethash:20228:0:99999:7:::\ndaemon:*:20228:0:99999:7:::\n")
    code, err = _validate(f)
    assert code == 1 and err == [f"densim: error: {f}: not a scenario file: none of its 2 top-level keys is a section "
                                 "of this kind of file"], err


# ------------------------------------------------------------------ memory sizes: GB is ambiguous (issue 31)
@pytest.mark.parametrize("text, hint", [("128 GB", "128 GiB"), ("64GB", "64 GiB"), ("1.5 TB", "1.5 TiB"),
                                        ("512 MB", "512 MiB"), ("4096 KB", "4096 KiB")])
def test_a_decimal_prefix_in_a_memory_size_is_refused_with_the_binary_hint(text, hint):
    # the README's bitbrains example had hosts of '128 GB' (128e9 B = 119.2 GiB): 5.2 GiB short of the
    # 124.4 GiB VM, which then waited 718 h. VMware and RVTools mean 2^30 by GB; SI means 10^9.
    from pydantic import TypeAdapter, ValidationError

    from densim.units import PosMemBytes

    with pytest.raises(ValidationError, match="ambiguous for a memory size") as e:
        TypeAdapter(PosMemBytes).validate_python(text)
    assert f"'{hint}'" in str(e.value)


def test_binary_prefixes_and_byte_counts_are_memory_sizes_and_disks_keep_si():
    from pydantic import TypeAdapter

    from densim.units import PosBytes, PosMemBytes

    mem = TypeAdapter(PosMemBytes)
    assert mem.validate_python("128 GiB") == 128 * 2**30
    assert mem.validate_python(128e9) == 128e9  # a plain number of bytes says what it means
    assert TypeAdapter(PosBytes).validate_python("375 GB") == 375e9  # a drive's capacity: SI, as datasheets


def test_a_scenario_with_gb_memory_names_the_field(tmp_path):
    from densim.plant import validate_file

    p = tmp_path / "s.yaml"
    p.write_text("cluster:\n  hosts:\n    - {name: h, count: 1, cpu: {cores_per_socket: 4, base_clock: 2 GHz}, memory: 128 GB,\n"
                 "       power: {model: linear, idle: 100 W, peak: 200 W}}\n"
                 "vms:\n  - {name: v, count: 1, vcpus: 1, vcpu_speed: 1 GHz, memory: 2 GiB, profile: {kind: constant, mean: 0.5}}\n"
                 "simulation: {step: 5 min, horizon: 1 h}\n")
    problems = validate_file(p)
    assert len(problems) == 1 and "cluster.hosts[0].memory" in problems[0] and "128 GiB" in problems[0]
