"""Every YAML/JSON a command reads goes through densim.textio: hostile or broken files are one-line errors."""

from __future__ import annotations

import os

import pytest
from typer.testing import CliRunner

from densim.cli.main import app
from densim.errors import InputError
from densim.textio import MAX_DEPTH, parse_json, parse_yaml, read_mapping_file

runner = CliRunner()

# nine levels of nine-fold aliases: 10 bytes per line, 9^9 = 387,420,489 strings once expanded
BILLION_LAUGHS = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f"{c}: &{c} [{','.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi")
)


def test_duplicate_yaml_key_is_an_error_with_both_lines():
    with pytest.raises(InputError) as e:
        parse_yaml("vms: 1\nhosts: 2\nvms: 3\n", "s.yaml")
    assert "duplicate key 'vms'" in str(e.value) and "line 3" in str(e.value) and "first at line 1" in str(e.value)


def test_duplicate_json_key_is_an_error():
    with pytest.raises(InputError, match="duplicate key 'a'"):
        parse_json('{"a": 1, "a": 2}', "s.json")


def test_alias_bomb_is_refused_quickly():
    with pytest.raises(InputError, match="alias bomb"):
        parse_yaml(BILLION_LAUGHS, "bomb.yaml")


def test_ordinary_aliases_still_work():
    assert parse_yaml("base: &b {x: 1}\nother: *b\n", "ok.yaml") == {"base": {"x": 1}, "other": {"x": 1}}


def test_deep_nesting_is_refused():
    with pytest.raises(InputError, match="nested"):
        parse_yaml("a: " + "[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5), "deep.yaml")
    with pytest.raises(InputError, match="nested"):
        parse_yaml("[" * 100_000, "deeper.yaml")


def test_binary_directory_and_device_are_refused(tmp_path):
    b = tmp_path / "b.yaml"
    b.write_bytes(b"vms: 1\n\x00\x01\x02")
    with pytest.raises(InputError, match="NUL byte") as e:
        read_mapping_file(b)
    assert "byte 7" in str(e.value)
    with pytest.raises(InputError, match="is a directory"):
        read_mapping_file(tmp_path)
    if os.path.exists("/dev/zero"):
        with pytest.raises(InputError, match="not a regular file"):
            read_mapping_file("/dev/zero")
    lat = tmp_path / "l.yaml"
    lat.write_bytes("name: caf\xe9\n".encode("latin-1"))
    with pytest.raises(InputError, match="not UTF-8"):
        read_mapping_file(lat)


def test_a_list_where_a_mapping_is_expected(tmp_path):
    p = tmp_path / "l.yaml"
    p.write_text("- 1\n- 2\n")
    with pytest.raises(InputError, match="must be a mapping"):
        read_mapping_file(p, "scenario file")


@pytest.mark.parametrize("command", [
    ["validate"], ["run", "--no-progress", "--no-report", "--out", "{tmp}/o"], ["bench", "tiles"],
    ["sweep", "--no-progress", "--out", "{tmp}/o"], ["io"], ["size"],
])
@pytest.mark.parametrize("content", ["dup", "bomb", "binary"])
def test_every_command_gives_one_line_for_hostile_yaml(command, content, tmp_path):
    f = tmp_path / "in.yaml"
    if content == "dup":
        f.write_text("name: a\nname: b\n")
    elif content == "bomb":
        f.write_text(BILLION_LAUGHS)
    else:
        f.write_bytes(b"\x00\xff\xfe binary")
    args = [a.replace("{tmp}", str(tmp_path)) for a in command]
    r = runner.invoke(app, args + [str(f)])
    assert r.exit_code == 1, r.output
    err = r.stderr.strip().splitlines()
    assert len(err) == 1 and str(f) in err[0] and "Traceback" not in r.output, r.output


@pytest.mark.parametrize("content", ["dup", "bomb"])
def test_plan_candidates_file_is_read_safely(content, tmp_path, traces):
    f = tmp_path / "c.yaml"
    f.write_text("qos: {}\nqos: {}\n" if content == "dup" else BILLION_LAUGHS)
    inv = traces / "gwa-t-12-rnd-2013-8-first250"
    r = runner.invoke(app, ["plan", str(inv), "--candidates", str(f), "--out", str(tmp_path / "o")])
    assert r.exit_code == 1 and str(f) in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.output
