"""RVTools exports as real tools write them (issues 29 and 31): thousands separators, UTF-16 and tab-separated
text, turbo above 100 %, measured CPU readiness, VMs on hosts the export does not list; and the plan's CSV
outputs made safe for spreadsheets."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from densim.cli.main import app
from densim.errors import InputError
from densim.workloads.formats import load_inventory
from tests.planning.fixtures import rvtools_tables, small_workload

ROOT = Path(__file__).resolve().parents[2]
CANDIDATES = ROOT / "examples" / "planning" / "candidates.yaml"
W = small_workload()  # vm-1..vm-4: 2, 4, 8, 2 vCPUs; 2, 4, 8, 4 GiB = 2,048, 4,096, 8,192, 4,096 MiB; all on esx01 (2,400 MHz)
MIB = 2**20


def _export(folder: Path, *, delim: str = ",", encoding: str = "utf-8", edit=None, tabs=("vInfo", "vCPU", "vMemory", "vHost")) -> Path:
    """The fixture's tabs as CSV files (``RVTools_tabvInfo.csv``...), every cell as text; ``edit(tab, header, rows)``
    may change them first."""
    folder.mkdir(parents=True, exist_ok=True)
    for tab, (header, rows) in rvtools_tables(W).items():
        if tab not in tabs:
            continue
        header, rows = list(header), [[str(c) for c in r] for r in rows]
        if edit is not None:
            edit(tab, header, rows)
        buf = io.StringIO()
        wr = csv.writer(buf, delimiter=delim, lineterminator="\r\n")
        wr.writerow(header)
        wr.writerows(rows)
        (folder / f"RVTools_tab{tab}.csv").write_bytes(buf.getvalue().encode(encoding))
    return folder


def _set(header, rows, column, values):
    j = header.index(column)
    for r, v in zip(rows, values):
        r[j] = v


def _err(path, **kw) -> str:
    with pytest.raises(InputError) as exc:
        load_inventory(path, **kw)
    msg = exc.value.one_line()
    assert "\n" not in msg
    return msg


# ------------------------------------------------------------------------------------ thousands separators


def _locale(th: str, dec: str):
    """Every whole number of 1,000 or more written with ``th`` between thousands, every fraction with ``dec``."""
    def edit(tab, header, rows):
        for r in rows:
            for j, c in enumerate(r):
                try:
                    x = float(c)
                except ValueError:
                    continue
                if x == int(x) and abs(x) >= 1000:
                    r[j] = f"{int(x):,}".replace(",", th)
                elif x != int(x):
                    r[j] = str(x).replace(".", dec)
    return edit


@pytest.mark.parametrize("th, dec, delim", [(".", ",", ";"), (",", ".", ","), (".", ",", ",")])
def test_thousands_separators_are_read_as_the_export_writes_them(tmp_path, th, dec, delim):
    # vm-1 has 2,048 MiB written '2.048' (a German export: ';' between cells, '0,1' % readiness) or '2,048'
    # (quoted in a ',' file); the old reader took '2.048' as 2.048 MiB and '0,1' % as 1 %
    inv = load_inventory(_export(tmp_path / "rv", delim=delim, edit=_locale(th, dec)))
    assert list(inv.mem_bytes / MIB) == [2048, 4096, 8192, 4096]
    assert list(inv.vcpu_mhz) == [2400.0] * 4  # vHost 'Speed' 2.400 / 2,400 MHz
    assert inv.ready_pct == pytest.approx([0.1] * 4)  # vInfo 'Overall Cpu Readiness' 0,1 / 0.1
    assert inv.hosts.mem_bytes[0] == 262144 * MIB  # vHost '# Memory' 262.144 MiB


def test_whole_number_column_reads_2_048_without_other_evidence(tmp_path):
    # nothing else in the file has a separator: in a column of whole MiB '2.048' can only be 2,048
    def edit(tab, header, rows):
        if tab == "vInfo":
            _set(header, rows, "Memory", ["2.048"])
            _set(header, rows, "Overall Cpu Readiness", ["0"] * len(rows))
    inv = load_inventory(_export(tmp_path / "rv", edit=edit))
    assert inv.mem_bytes[0] == 2048 * MIB


def test_decimal_mark_elsewhere_makes_2_048_a_fraction_and_refused(tmp_path):
    # readiness '0.1' says '.' is the decimal mark: '2.048' MiB is then 2.048, not a whole number of MiB
    def edit(tab, header, rows):
        if tab == "vInfo":
            _set(header, rows, "Memory", ["2.048"])
    msg = _err(_export(tmp_path / "rv", edit=edit))
    assert msg.endswith("sheet vInfo, row 2, column 'Memory': Memory must be a whole number, got '2.048' "
                        "(this sheet writes '.' as the decimal mark)")


def test_ambiguous_fraction_column_is_refused(tmp_path):
    # readiness may be a fraction: '1.250' is 1,250 or 1.25 and nothing in the sheet says which
    def edit(tab, header, rows):
        if tab == "vInfo":
            _set(header, rows, "Overall Cpu Readiness", ["1.250"] + ["0"] * (len(rows) - 1))
    msg = _err(_export(tmp_path / "rv", edit=edit))
    assert "sheet vInfo, row 2, column 'Overall Cpu Readiness': CPU readiness % '1.250' is ambiguous: 1250 ('.' as a " \
           "thousands separator) or 1.250 (the decimal mark)?" in msg


def test_a_column_mixing_both_conventions_is_refused(tmp_path):
    def edit(tab, header, rows):
        if tab == "vInfo":
            _set(header, rows, "Memory", ["2.048", "4,096", "1.048.576", "1,048,576"])
    msg = _err(_export(tmp_path / "rv", edit=edit))
    assert "sheet vInfo, row 5, column 'Memory': Memory '1,048,576' uses ',' as the thousands separator but row 4 " \
           "('1.048.576') uses '.'" in msg


def test_unquoted_thousands_separator_shifting_columns_is_refused(tmp_path):
    folder = _export(tmp_path / "rv")
    f = folder / "RVTools_tabvInfo.csv"
    lines = f.read_text().splitlines()
    lines[1] = lines[1].replace(",2048,", ",2,048,", 1)  # vm-1's memory, unquoted: one more field
    f.write_text("\n".join(lines) + "\n")
    msg = _err(folder)
    assert msg == f"{f}:sheet vInfo, row 2: 23 fields where the header has 22 (an unquoted ',' inside a value, such as a thousands separator?)"


# ------------------------------------------------------------------------------------ encodings


@pytest.mark.parametrize("encoding, delim", [("utf-16", "\t"), ("utf-16-le", ","), ("utf-16", ";")])
def test_utf16_and_tab_separated_exports_read_the_same_numbers(tmp_path, encoding, delim):
    # Excel's "Unicode text" is UTF-16 with a BOM and tabs; some tools write UTF-16LE without a BOM
    inv = load_inventory(_export(tmp_path / "rv", encoding=encoding, delim=delim))
    ref = load_inventory(_export(tmp_path / "ref"))
    assert list(inv.names) == ["vm-1", "vm-2", "vm-3", "vm-4"]
    assert np.array_equal(inv.mem_bytes, ref.mem_bytes) and np.array_equal(inv.cpu_mhz, ref.cpu_mhz)
    assert list(inv.vcpu_mhz) == [2400.0] * 4


# ------------------------------------------------------------------------------------ vHost


def test_host_listed_twice_with_different_speeds_names_both_rows(tmp_path):
    def edit(tab, header, rows):
        if tab == "vHost":
            rows.append(list(rows[0]))
            rows[1][header.index("Speed")] = "2600"
    msg = _err(_export(tmp_path / "rv", edit=edit))
    assert msg.endswith("sheet vHost, row 3, column 'Speed': host 'esx01' is listed twice with different speeds (2600 MHz here, "
                        "2400 MHz in row 2): which one do its VMs run at?")


@pytest.mark.parametrize("usage, demand_of_vm1", [("50", 0.5 * 2 * 2400), ("113", 2 * 2400)])
def test_host_cpu_usage_above_100_pct_is_turbo_and_read(tmp_path, usage, demand_of_vm1):
    # no vCPU tab: demand = host 'CPU usage %' x vCPUs x MHz, capped at the configured size; 113 % (a real
    # 4.6.1.3 export: cores above base clock) was refused with "CPU usage % must be <= 100"
    def edit(tab, header, rows):
        if tab == "vHost":
            _set(header, rows, "CPU usage %", [usage])
    inv = load_inventory(_export(tmp_path / "rv", edit=edit, tabs=("vInfo", "vMemory", "vHost")))
    assert inv.cpu_mhz[0, 0] == pytest.approx(demand_of_vm1)


def test_host_cpu_usage_above_the_turbo_bound_is_refused(tmp_path):
    def edit(tab, header, rows):
        if tab == "vHost":
            _set(header, rows, "CPU usage %", ["250"])
    msg = _err(_export(tmp_path / "rv", edit=edit))
    assert msg.endswith("sheet vHost, row 2, column 'CPU usage %': CPU usage % must be <= 200, got 250")


# ------------------------------------------------------------------------------------ measured readiness


def test_measured_readiness_is_kept_per_vm(tmp_path):
    def edit(tab, header, rows):
        if tab == "vInfo":
            _set(header, rows, "Overall Cpu Readiness", ["0.5%", "2 %", "", "12"])
    inv = load_inventory(_export(tmp_path / "rv", edit=edit))
    assert list(inv.ready_pct[:2]) == [0.5, 2.0] and np.isnan(inv.ready_pct[2]) and inv.ready_pct[3] == 12.0
    assert inv.costop_pct is None  # RVTools has no co-stop column
    assert list(inv.subset(np.array([3, 0])).ready_pct) == [12.0, 0.5]


def test_co_stop_and_cpu_ready_columns_where_present(tmp_path):
    def edit(tab, header, rows):
        if tab == "vCPU":
            header += ["CPU Ready %", "Co-Stop %"]
            for r, (a, b) in zip(rows, [("1", "0.1"), ("2", "0.2"), ("3", "0.3"), ("4", "0.4")]):
                r += [a, b]
        if tab == "vInfo":
            j = header.index("Overall Cpu Readiness")
            del header[j]
            for r in rows:
                del r[j]
    inv = load_inventory(_export(tmp_path / "rv", edit=edit))
    # 'CPU Ready %' / 'Co-Stop %' sum the vCPUs (esxtop's VM %RDY, KB 2002181): divided by vCPUs 2, 4, 8, 2
    assert inv.ready_pct == pytest.approx([0.5, 0.5, 0.375, 2.0]) and inv.costop_pct == pytest.approx([0.05, 0.05, 0.0375, 0.2])


def test_readiness_above_100_pct_per_vcpu_is_refused(tmp_path):
    def edit(tab, header, rows):
        if tab == "vInfo":
            _set(header, rows, "Overall Cpu Readiness", ["150"])  # an average over the vCPUs: at most 100 %
    msg = _err(_export(tmp_path / "rv", edit=edit))
    assert msg.endswith("sheet vInfo, row 2, column 'Overall Cpu Readiness': CPU readiness % 150 is more than 100 % "
                        "(vSphere's VM readiness is the average over its vCPUs)")


def test_summed_cpu_ready_column_above_100_pct_per_vcpu_is_refused(tmp_path):
    def edit(tab, header, rows):
        if tab == "vCPU":
            header += ["CPU Ready %"]
            for r, a in zip(rows, ["250", "0", "0", "0"]):  # vm-1 has 2 vCPUs: a sum of at most 200 %
                r += [a]
        if tab == "vInfo":
            j = header.index("Overall Cpu Readiness")
            del header[j]
            for r in rows:
                del r[j]
    msg = _err(_export(tmp_path / "rv", edit=edit))
    assert msg.endswith("column 'CPU Ready %': CPU readiness % 250 is more than 100 % per vCPU (2 vCPUs, summed)")


# ------------------------------------------------------------------------------------ VMs on hosts not in vHost


def _on_absent_hosts(tab, header, rows):
    if tab == "vInfo":  # vm-2 and vm-3 run on esx77, which vHost does not list
        _set(header, rows, "Host", ["esx01", "esx77", "esx77", "esx01"])


def test_vms_on_hosts_not_in_vhost_are_counted_and_sized_by_the_stated_rule(tmp_path):
    # no vCPU tab: usage comes from vHost 'CPU usage %' (12 %), which esx77's VMs do not have
    folder = _export(tmp_path / "rv", edit=_on_absent_hosts, tabs=("vInfo", "vMemory", "vHost"))
    inv = load_inventory(folder)
    assert inv.missing_host_vms == 2
    note = next(n for n in inv.notes if n.startswith("warning: 2 of 4 VMs name a host that is not in vHost (e.g. 'esx77')"))
    assert "2 of them with no usage exported are sized at 100 % of vCPUs x MHz" in note and "--unknown-cpu-pct" in note
    # vm-1: 12 % x 2 x 2,400 = 576 MHz; vm-2 (4 vCPUs at the default 2,400 MHz) busy on every vCPU = 9,600 MHz
    assert inv.cpu_mhz[0, :2] == pytest.approx([576.0, 9600.0])
    # the rule is the user's: 25 % -> vm-2 = 0.25 x 9,600 = 2,400 MHz, vm-3 = 0.25 x 8 x 2,400 = 4,800 MHz
    inv25 = load_inventory(folder, unknown_cpu_pct=25)
    assert inv25.cpu_mhz[0, 1:3] == pytest.approx([2400.0, 4800.0])
    assert "CPU = 25 % of the configured size where no usage was exported" in inv25.demand_rule


def test_missing_hosts_in_the_plan_summary_and_the_cli_option(tmp_path):
    folder = _export(tmp_path / "rv", edit=_on_absent_hosts, tabs=("vInfo", "vMemory", "vHost"))
    out = tmp_path / "out"
    r = CliRunner().invoke(app, ["plan", str(folder), "-c", str(CANDIDATES), "-o", str(out), "--unknown-cpu-pct", "25"])
    assert r.exit_code == 0, r.output
    s = json.loads((out / "summary.json").read_text())
    assert s["inventory"]["missing_host_vms"] == 2
    assert any(n.startswith("warning: 2 of 4 VMs name a host that is not in vHost") and "at 25 %" in n for n in s["notes"])
    assert "note: warning: 2 of 4 VMs name a host that is not in vHost" in r.output
    # measured readiness in the per-VM output: 0.1 % each (the fixture's vInfo)
    rows = list(csv.DictReader((out / "placement.csv").open()))
    assert rows and {x["measured_ready_pct"] for x in rows} == {"0.1"}
    assert s["inventory"]["measured_ready_pct"] == {"vms": 4, "mean": pytest.approx(0.1), "max": pytest.approx(0.1)}
    bad = CliRunner().invoke(app, ["plan", str(folder), "-c", str(CANDIDATES), "-o", str(tmp_path / "o2"), "--unknown-cpu-pct", "150"])
    assert bad.exit_code == 2 and "--unknown-cpu-pct: must be a number from 0 to 100, got 150" in bad.output


# ------------------------------------------------------------------------------------ CSV formula injection


def test_placement_csv_neutralises_formulas_in_vm_names(tmp_path):
    names = ['=HYPERLINK("http://x.example","click")', "+1+2", "-cmd", "@SUM(A1)"]

    def edit(tab, header, rows):
        if tab in ("vInfo", "vCPU", "vMemory"):
            _set(header, rows, "VM", names)
    folder = _export(tmp_path / "rv", edit=edit)
    out = tmp_path / "out"
    r = CliRunner().invoke(app, ["plan", str(folder), "-c", str(CANDIDATES), "-o", str(out)])
    assert r.exit_code == 0, r.output
    rows = list(csv.DictReader((out / "placement.csv").open()))
    assert {x["vm"] for x in rows} == {"'" + n for n in names}
    assert all(not x["candidate"].startswith(("=", "+", "-", "@")) for x in rows)


def test_a_column_named_twice_is_refused(tmp_path):
    # two 'Memory' columns in vInfo: the old reader took the first without a word
    def edit(tab, header, rows):
        if tab == "vInfo":
            header.append("Memory")
            for r in rows:
                r.append("1")
    msg = _err(_export(tmp_path / "rv", edit=edit))
    assert msg.endswith("sheet vInfo, column 'Memory': a second column named like 'Memory' (column 9; this is column 23): "
                        "which one holds the values?")


def test_fractions_without_thousands_separators_beside_grouped_numbers(tmp_path):
    # vInfo with ',' separating thousands (memory '2,048') and a 'CPU Ready %' of '1234.5' (16-vCPU VMs, a sum over
    # the vCPUs): no thousands separator in it, so it needs no groups of three; "12,34,567" is not grouped and refused
    def edit(tab, header, rows):
        if tab == "vInfo":
            _set(header, rows, "Memory", ["2,048", "4,096", "8,192", "4,096"])
            _set(header, rows, "CPUs", ["16"] * len(rows))
            _set(header, rows, "Overall Cpu Readiness", ["1234.5", "0.5", "1,250.25", "0"])
            header[header.index("Overall Cpu Readiness")] = "CPU Ready %"
    inv = load_inventory(_export(tmp_path / "rv", edit=edit, tabs=("vInfo",)))
    assert inv.ready_pct * 16 == pytest.approx([1234.5, 0.5, 1250.25, 0.0]) and inv.mem_bytes[2] == 8192 * MIB

    def bad(tab, header, rows):
        edit(tab, header, rows)
        if tab == "vInfo":
            _set(header, rows, "Memory", ["2,048", "12,34,567"])
    msg = _err(_export(tmp_path / "rv2", edit=bad, tabs=("vInfo",)))
    assert msg.endswith("sheet vInfo, row 3, column 'Memory': Memory '12,34,567': ',' is this sheet's thousands separator but the "
                        "digits are not in groups of three")


def test_missing_host_note_points_at_a_host_listed_under_another_name(tmp_path):
    # vInfo names the host by its FQDN, vHost by its short name: not matched (names are matched exactly), but said
    def edit(tab, header, rows):
        if tab == "vInfo":
            _set(header, rows, "Host", ["esx01.corp.example"] * 4)
    inv = load_inventory(_export(tmp_path / "rv", edit=edit))
    assert inv.missing_host_vms == 4
    note = next(n for n in inv.notes if n.startswith("warning: 4 of 4 VMs"))
    assert "vHost lists 'esx01': the same host under another name? densim matches names exactly" in note
    assert "sized at" not in note  # the vCPU tab gives every VM's usage: no VM is sized by the unknown CPU % rule
