"""RVTools exports (VMware): the xlsx workbook or the per-tab CSV files.

Columns are matched by header name, never by position (column counts drift between RVTools
versions). Header spellings accepted (after lower-casing and dropping spaces/punctuation, and after
removing the CSV export's tab prefix such as ``vInfo`` in ``vInfoCPUs``):

* vInfo: ``VM``/``VMName``, ``CPUs``, ``Memory`` (MiB; ``Memory MB``/``Memory MiB``/``Memory GiB``
  variants), ``Powerstate``, ``Template``, ``Cluster``, ``Host``, ``Active Memory``,
  ``VI SDK Server``.
* vCPU: ``VM``, ``Overall`` (MHz in use at export time), ``Max`` (MHz).
* vMemory: ``VM``, ``Active`` and ``Consumed`` (MiB, or ``... MB``).
* vHost: ``Host``/``Name``, ``Speed``/``CpuMhz`` (MHz per core), ``CPU usage %``, and for today's hosts
  (:class:`~densim.workloads.inventory.HostInventory`) ``Vendor``, ``Model``, ``CPU Model``, ``# CPU``
  (sockets), ``Cores per CPU``, ``# Cores``, ``# Memory`` (MiB; a CSV export in bytes is recognised by
  its magnitude), ``Cluster``.

* vSnapshot, vCD, vDisk, vTools, vInfo ``HW version`` / ``min Required EVC Mode Key`` and vHost ``Current EVC``: the
  migration-readiness checks (:mod:`densim.workloads.readers.rvtools_readiness`); a tab or column not in the export
  makes its check unknown, never "ready".
* vInfo ``Folder``, ``vApp``, ``Annotation``, ``Resource pool``, ``Cluster rule name(s)``, ``Network #1`` .. ``#8`` and
  the vNetwork tab's ``Network`` (port group per NIC): text tags per VM for the migration groups
  (:mod:`densim.tools.plan.groups`); a vInfo column outside the documented 4.x list is a custom attribute, carried as
  the tag ``attr:<header>``. The documented vInfo columns densim does not read are named in the inventory's facts
  (``vinfo_columns_unread``, shown in the plan's data-quality section), never dropped in silence.

The snapshot demand rule (RVTools has no time series) is :data:`SNAPSHOT_RULE`. An export without
any usage column (only vInfo, say) has no demand series at all: ``densim plan`` then sizes hosts by
vCPUs and memory and says that CPU Ready was not checked.
Sources: column layout from a 4.x export as listed in ../shared/reference/ecosystem.md §1.1
(Yoobuu/Kylow report.md; bankielewicz/RVToolsDW rvtools-tabs.md; sbroenne/RVToolsMerge README for the
CSV prefixes; lrivallain/rvtools2azmigrate for the older "MB" headers).
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import numpy as np

from densim.errors import InputError
from densim.workloads.readers._checks import (MAX_VCPUS, check_clock, check_memory, check_memory_per_vcpu, check_values,
                                              check_vcpus, first_line, read_bytes, regular_file, text_of)
from densim.workloads.readers._table import MEM_UNITS, norm, strip_prefix
from densim.workloads.readers.conventions import bytes_per_unit
from densim.workloads.inventory import DEFAULT_VCPU_MHZ, HostInventory, Inventory, build_inventory

SNAPSHOT_RULE = (
    "RVTools is a snapshot, not a time series: each VM gets a one-step demand series (one sample: nothing about peaks). "
    "CPU demand = the vCPU tab's 'Overall' MHz (usage at export time); without it, the VM's host "
    "'CPU usage %' x the VM's configured MHz; without either, the unknown CPU % (default 100 %: the configured "
    "size, vCPUs x host MHz per core, busy on every vCPU; --unknown-cpu-pct sets it). A VM whose host is not in vHost "
    "runs at the default clock (2,400 MHz); such VMs are counted in a warning. "
    "Memory in use = vMemory 'Active' (or vInfo 'Active Memory'); without it, the configured memory. "
    "Both are multiplied by the snapshot peak factor (default 1.0) and capped at the configured size. "
    "An export with no CPU usage at all (no vCPU tab, no vHost 'CPU usage %') gets no CPU series, one with no "
    "active memory at all no memory series: the plan then sizes by vCPUs and configured memory."
)

UNKNOWN_CPU_PCT = 100.0  # CPU % of a VM with no usage exported: busy on every vCPU (the safe side for a plan)

SHEETS = ("vInfo", "vCPU", "vMemory", "vHost", "vDatastore", "vSnapshot", "vCD", "vDisk", "vTools", "vCluster", "vNetwork")

# what the inventory shows about VMs that belong together (densim.tools.plan.groups), carried as text tags per VM:
# vInfo 'Folder', 'vApp', 'Annotation', 'Resource pool', 'Cluster rule name(s)' (DRS rules) and the port groups of
# 'Network #1' .. 'Network #8' and of the vNetwork tab's 'Network' column (one row per NIC)
GROUP_COLUMNS = {
    "folder": ("folder",),
    "vapp": ("vapp",),
    "annotation": ("annotation", "notes"),
    "resource_pool": ("resourcepool",),
    "cluster_rule": ("clusterrulenames", "clusterrulename"),
}
NETWORK_COLUMNS = tuple(f"network#{i}" for i in range(1, 9))
# the guest OS per VM (tag "os", for the plan's guest_images rules by OS): vInfo 'OS according to the configuration
# file' (what the VM was created as), and where that is blank 'OS according to the VMware Tools' (what runs)
OS_COLUMNS = (("osaccordingtotheconfigurationfile", "os"), ("osaccordingtothevmwaretools",))
# the vInfo columns of a 4.x export (../shared/reference/ecosystem.md §1.1, 93 columns), normalised: a vInfo column
# outside this list is a custom attribute (RVTools appends one column per vCenter custom attribute) and is carried
# as the tag "attr:<header>" for grouping; the documented ones densim does not read are listed in the facts
DOCUMENTED_VINFO = frozenset(norm(h) for h in (
    "VM, Powerstate, Template, SRM Placeholder, Config status, DNS Name, Connection state, Guest state, Heartbeat, "
    "Consolidation Needed, PowerOn, Suspended To Memory, Suspend time, Suspend Interval, Creation date, Change Version, "
    "CPUs, Overall Cpu Readiness, Memory, Active Memory, NICs, Disks, Total disk capacity MiB, Fixed Passthru HotPlug, "
    "min Required EVC Mode Key, Latency Sensitivity, Op Notification Timeout, EnableUUID, CBT, Primary IP Address, "
    "Network #1, Network #2, Network #3, Network #4, Network #5, Network #6, Network #7, Network #8, Num Monitors, "
    "Video Ram KiB, Resource pool, Folder ID, Folder, vApp, DAS protection, FT State, FT Role, FT Latency, FT Bandwidth, "
    "FT Sec. Latency, Vm Failover In Progress, Provisioned MiB, In Use MiB, Unshared MiB, HA Restart Priority, "
    "HA Isolation Response, HA VM Monitoring, Cluster rule(s), Cluster rule name(s), Boot Required, Boot delay, "
    "Boot retry delay, Boot retry enabled, Boot BIOS setup, Reboot PowerOff, EFI Secure boot, Firmware, HW version, "
    "HW upgrade status, HW upgrade policy, HW target, Path, Log directory, Snapshot directory, Suspend directory, "
    "Annotation, Backup status, ClusterInvariantVMMId, Last backup, Datacenter, Cluster, Host, "
    "OS according to the configuration file, OS according to the VMware Tools, Customization Info, Guest Detailed Data, "
    "VM ID, SMBIOS UUID, VM UUID, VI SDK Server type, VI SDK API Version, VI SDK Server, VI SDK UUID, "
    "Provisioned MB, In Use MB, Unshared MB, Total disk capacity MB, Memory MB, Active Memory MB").split(", "))
# the vInfo columns read (sizes, demand, readiness, grouping): every other documented column is listed as not read
_VINFO_READ = frozenset(("vm", "vmname", "cpus", "numcpu", "memory", "memorymib", "memorymb", "activememory",
                         "activememorymib", "activememorymb", "powerstate", "template", "cluster", "host", "visdkserver",
                         "overallcpureadiness", "hwversion", "minrequiredevcmodekey", *NETWORK_COLUMNS,
                         *(a for al in GROUP_COLUMNS.values() for a in al), *(a for al in OS_COLUMNS for a in al)))

# canonical column -> accepted normalised header keys (unit suffix handled separately for memory)
VINFO = {
    "vm": ("vm", "vmname", "name"),
    "cpus": ("cpus", "numcpu", "numcpus"),
    "powerstate": ("powerstate",),
    "template": ("template",),
    "cluster": ("cluster",),
    "host": ("host",),
    "server": ("visdkserver",),
}
VINFO_MEM = {"memory": "memory", "active": "activememory"}  # base key; unit suffix optional
VCPU = {"vm": ("vm", "vmname", "name"), "overall": ("overall", "overallmhz"), "max": ("max", "maxmhz")}
VMEM = {"vm": ("vm", "vmname", "name")}
VMEM_MEM = {"active": "active", "consumed": "consumed", "size": "size"}
# measured CPU readiness per VM (vInfo 'Overall Cpu Readiness' in RVTools 4.x; 'CPU Ready %' and 'Co-Stop %'
# in exports that add them), in % of time
READINESS = {"ready": ("overallcpureadiness", "cpureadiness", "cpuready%", "cpuready", "readiness"),
             "costop": ("costop%", "costop", "cpucostop%", "cpucostop")}
# The two units a VM's readiness comes in. 'Overall Cpu Readiness' is vSphere's VirtualMachineQuickStats
# overallCpuReadiness (RVTools documentation, vInfo: "Percentage of time that the virtual machine was ready but could
# not get scheduled to run on the physical CPU", since vSphere API 7.0), the VM's cpu.readiness: "the average
# readiness across all vCPUs of a specific virtual machine" (Broadcom KB 432752), so already per vCPU, at most 100 %.
# 'CPU Ready %' / 'Co-Stop %' columns are esxtop's VM-level %RDY / %CSTP or the ready summation converted by
# Broadcom KB 2002181, which sum the vCPUs ("a sum of each virtual CPUs %RDY time"): up to 100 % per vCPU, divided by
# the VM's vCPUs here. inv.ready_pct / inv.costop_pct are per vCPU either way.
READINESS_AVERAGED = frozenset({"overallcpureadiness", "cpureadiness", "readiness"})
VHOST = {
    "host": ("host", "name", "hostname"),
    "speed": ("speed", "cpumhz", "speedmhz"),
    "cpu_usage_pct": ("cpuusage%", "cpuusage", "overallcpuusagepct"),
    "cpu_model": ("cpumodel",),
    "sockets": ("#cpu", "numcpu"),
    "cores_per_cpu": ("corespercpu",),
    "cores": ("#cores", "numcpucores"),
    "memory": ("#memory", "memorysize", "memory"),
    "vendor": ("vendor",),
    "model": ("model",),
    "cluster": ("cluster",),
}
# vSphere's host 'CPU usage %' is the MHz in use over cores x base clock: above 100 % when the cores run at turbo
# clocks (113 % in a real 4.6.1.3 export). The all-core turbo of server CPUs is at most about 1.6 x base
# (Xeon Platinum 8592+: 1.9 GHz base, 2.9 GHz all-core; single-core turbo reaches 2.05 x); 200 % is above any,
# so a larger value is damaged. Values up to it are kept as exported.
MAX_HOST_CPU_USAGE_PCT = 200.0
HOST_MEMORY_BYTES_ABOVE = 2.0**32  # '# Memory' is MiB; a value above 2^32 (4 PiB in MiB) can only be bytes
MIB = bytes_per_unit("rvtools", "memory", "MiB")

_UNIT_TOKEN = re.compile(r"^[a-z]{1,5}$")


class _Sheet:
    """One tab: a header row and data rows, with spreadsheet row numbers for error messages."""

    def __init__(self, source: Path, name: str, header: list, rows: list[list], first_row: int = 2) -> None:
        self.source = source
        self.name = name
        self.header = [str(h).strip() if h is not None else "" for h in header]
        self.rows = [r for r in rows if any(c not in (None, "") for c in r)]
        self.row_numbers = [first_row + i for i, r in enumerate(rows) if any(c not in (None, "") for c in r)]
        self.keys = [strip_prefix(norm(h), name) for h in self.header]
        self._sheet_sep: str | None | bool = False  # the sheet's thousands separator, once looked for

    def where(self, row_idx: int | None, col: int | None) -> str:
        parts = [f"sheet {self.name}"]
        if row_idx is not None:
            parts.append(f"row {self.row_numbers[row_idx]}")
        if col is not None:
            parts.append(f"column {self.header[col]!r}")
        return ", ".join(parts)

    def error(self, row_idx: int | None, col: int | None, problem: str) -> InputError:
        return InputError(self.source, self.where(row_idx, col), problem)

    def check(self, values: np.ndarray, idx: np.ndarray, col: int, checker) -> None:
        """Run a :mod:`._checks` checker on ``values`` (rows ``idx`` of this sheet), naming sheet, row and column."""
        try:
            checker(values, self.source, self.header[col], rows=[self.row_numbers[int(i)] for i in idx])
        except InputError as exc:
            raise InputError(self.source, f"sheet {self.name}, {exc.where}", exc.problem) from None

    def find(self, aliases: tuple[str, ...]) -> int | None:
        for a in aliases:
            if a in self.keys:
                i = self.keys.index(a)
                if a in self.keys[i + 1:]:  # two columns of one name: which one holds the values is unknown
                    j = self.keys.index(a, i + 1)
                    raise self.error(None, j, f"a second column named like {self.header[i]!r} (column {i + 1}; this is "
                                              f"column {j + 1}): which one holds the values?")
                return i
        return None

    def find_mem(self, base: str) -> tuple[int, float] | None:
        """Column whose header is ``base`` + optional unit; returns (index, bytes per unit). Two such columns
        ('Memory' and 'Memory MiB', or one name twice) are refused: which one holds the values is unknown."""
        found: list[tuple[int, float]] = []
        for i, k in enumerate(self.keys):
            if k == base:
                found.append((i, MEM_UNITS["mib"]))  # RVTools memory columns without a unit are MiB
            elif k.startswith(base):
                tok = k[len(base):]
                if tok in MEM_UNITS:
                    found.append((i, MEM_UNITS[tok]))
                elif not found and not (tok in ("overhead", "reservationlockedtomax", "mhz") or not _UNIT_TOKEN.match(tok)):
                    raise self.error(None, i, f"unknown memory unit {tok!r} in header (use MiB, MB, GiB, GB, KiB, KB)")
            if len(found) == 2:
                (a, _), (b, _) = found
                raise self.error(None, b, f"a second column named like {self.header[a]!r} (column {a + 1}; this is "
                                          f"column {b + 1}): which one holds the values?")
        return found[0] if found else None

    def column(self, col: int) -> list:
        return [r[col] if col < len(r) else None for r in self.rows]

    def numbers(self, col: int, what: str, *, unit_bytes: float | None = None, allow_blank: bool = False,
                whole: bool = True, percent: bool = False) -> np.ndarray:
        """A column as float64 (blank: NaN if ``allow_blank``), text cells read by :data:`NUMBER_RULE`.

        ``whole``: the column holds whole numbers (MiB, MHz, counts), so a text cell such as ``2.048`` or
        ``2,048`` can only be 2,048; ``percent``: a trailing ``%`` is dropped."""
        cells = self.column(col)
        sep = self._thousands(col, cells, what)
        out = np.empty(len(self.rows), dtype=np.float64)
        for i, v in enumerate(cells):
            out[i] = self._number(v, i, col, what, unit_bytes, allow_blank, sep, whole, percent)
        return out

    def _thousands(self, col: int, cells: list, what: str) -> str | None:
        """The thousands separator the column's text cells show ('.' or ','), else the one the sheet's other
        number columns show, else None; a column whose cells show both is refused."""
        own = _separator_evidence(cells)
        if isinstance(own, tuple):
            (i, a), (j, b) = own
            raise self.error(j, col, f"{what} {str(cells[j]).strip()[:30]!r} uses {b!r} as the thousands separator but row "
                                     f"{self.row_numbers[i]} ({str(cells[i]).strip()[:30]!r}) uses {a!r}: which convention is it?")
        if own is not None:
            return own
        if self._sheet_sep is False:
            found: set[str] = set()
            for c, key in enumerate(self.keys):
                if c != col and _is_number_column(key):
                    e = _separator_evidence(self.column(c))
                    if isinstance(e, str):
                        found.add(e)
            self._sheet_sep = found.pop() if len(found) == 1 else None
        return self._sheet_sep

    def _number(self, v, i, col, what, unit_bytes, allow_blank, sep, whole, percent) -> float:
        if v is None or (isinstance(v, str) and v.strip() == ""):
            if allow_blank:
                return np.nan
            raise self.error(i, col, f"{what} is blank")
        if isinstance(v, bool):
            raise self.error(i, col, f"{what} must be a number, got {v}")
        if isinstance(v, (int, float)):
            x = float(v)
            return x * unit_bytes if unit_bytes is not None else x
        text = str(v).strip()
        if percent and text.endswith("%"):
            text = text[:-1].rstrip()
        m = _NUM_TEXT.match(text)
        if m is None:
            try:  # 'nan', 'inf', '1e5': the value checks downstream name what is wrong with them
                x = float(text)
            except ValueError:
                raise self.error(i, col, f"{what} must be a number, got {text[:30]!r}") from None
            return x * unit_bytes if unit_bytes is not None else x
        body, unit = m.group(1), m.group(2)
        kind = _separator_kind(body)
        if kind == "ambiguous":
            mark = "." if "." in body else ","
            if sep is None and not whole:
                as_int, as_dec = body.replace(mark, ""), body.replace(",", ".")
                raise self.error(i, col, f"{what} {text[:30]!r} is ambiguous: {as_int} ({mark!r} as a thousands separator) or "
                                         f"{as_dec} (the decimal mark)? Nothing else in the sheet shows which; write it without "
                                         "a thousands separator")
            # a whole-number column: the thousands reading is the only whole one, unless the sheet says the
            # mark is the decimal point (then the value is not whole, refused below)
            sep = mark if sep is None else sep
        if sep is not None and kind is not None:
            dec = "," if sep == "." else "."
            head = body.split(dec)[0].lstrip("+-")
            if sep in head and not _GROUPED[sep].match(head):  # '1234.5' has none: fine; '12.34.5' is not grouped
                raise self.error(i, col, f"{what} {text[:30]!r}: {sep!r} is this sheet's thousands separator but the digits are "
                                         "not in groups of three")
            body = body.replace(sep, "").replace(dec, ".")
        elif kind is not None:
            body = body.replace(",", ".") if body.count(",") == 1 and "." not in body else body
        try:
            x = float(body)
        except ValueError:
            raise self.error(i, col, f"{what} must be a number, got {text[:30]!r}") from None
        if unit:
            if unit_bytes is None or unit.lower() not in MEM_UNITS:
                if unit_bytes is not None:
                    raise self.error(i, col, f"unknown memory unit {unit!r} in {text!r} (use MiB, MB, GiB, GB, KiB, KB)")
                raise self.error(i, col, f"{what} must be a number, got {text[:30]!r}")
            return x * MEM_UNITS[unit.lower()]
        if whole and kind == "ambiguous" and x != round(x):  # '2.048' MiB where '.' is the decimal mark
            raise self.error(i, col, f"{what} must be a whole number, got {text[:30]!r}"
                                     + (f" (this sheet writes {'.' if sep == ',' else ','!r} as the decimal mark)" if sep else ""))
        return x * unit_bytes if unit_bytes is not None else x


NUMBER_RULE = (
    "Numbers written as text (CSV exports, text cells) may use a thousands separator: '2,048' and '2.048' in a column "
    "of whole numbers (MiB, MHz, counts) are 2,048; in a column that may hold fractions (CPU usage %, readiness %), "
    "'1.234' is read by the convention the sheet's other numbers show ('1.234.567' or '0,5': '.' separates thousands; "
    "'1,234,567' or '0.5': ',' does) and refused when nothing shows it. A column that mixes both conventions is refused."
)
_NUM_TEXT = re.compile(r"^([-+]?\d[\d.,]*)\s*([A-Za-z]*)$")
_GROUPED = {s: re.compile(r"^\d{1,3}(?:" + re.escape(s) + r"\d{3})*$") for s in (".", ",")}


def _separator_kind(body: str) -> str | None:
    """How a number's '.'/',' read: None (none), 'ambiguous' (one mark, three digits after it: '2.048'),
    '.'/',' (the thousands separator it shows: '1.234.567', '1.234,5', '0,5' -> '.')."""
    dots, commas = body.count("."), body.count(",")
    if not dots and not commas:
        return None
    if dots and commas:
        return "." if body.rfind(".") < body.rfind(",") else ","
    mark = "." if dots else ","
    other = "," if mark == "." else "."
    if dots + commas > 1:
        return mark
    head, tail = body.lstrip("+-").split(mark)
    if len(tail) != 3 or head in ("", "0") or len(head) > 3:
        return other  # the decimal mark: '12.5', '0.125', '1234.567'
    return "ambiguous"


def _separator_evidence(cells: list) -> str | tuple | None:
    """The thousands separator the text cells show; ((row, sep), (row, sep)) when two cells disagree."""
    first: tuple[int, str] | None = None
    for i, v in enumerate(cells):
        if not isinstance(v, str):
            continue
        m = _NUM_TEXT.match(v.strip().removesuffix("%").rstrip())
        if m is None:
            continue
        k = _separator_kind(m.group(1))
        if k in (".", ","):
            if first is None:
                first = (i, k)
            elif first[1] != k:
                return first, (i, k)
    return None if first is None else first[1]


def _is_number_column(key: str) -> bool:
    """Header keys of the columns densim reads as numbers (the others, such as IP addresses, show nothing)."""
    numeric = {a for table in (VINFO, VCPU, VHOST, READINESS) for k, al in table.items()
               if k not in ("vm", "host", "powerstate", "template", "cluster", "server", "cpu_model", "vendor", "model")
               for a in al}
    return key in numeric or any(key.startswith(b) for b in (*VINFO_MEM.values(), *VMEM_MEM.values()))


# ---------------------------------------------------------------------------------------- loading


def _xlsx_sheets(path: Path) -> dict[str, _Sheet]:
    from openpyxl import load_workbook

    regular_file(path, "RVTools workbook (.xlsx)")
    try:
        wb = load_workbook(path, read_only=True, data_only=True)
    except Exception as exc:  # noqa: BLE001 - openpyxl raises several types for non-workbooks
        raise InputError(path, "", f"not a readable xlsx workbook ({type(exc).__name__})") from None
    out: dict[str, _Sheet] = {}
    try:
        for ws in wb.worksheets:
            try:
                rows = [list(r) for r in ws.iter_rows(values_only=True)]
            except Exception as exc:  # noqa: BLE001 - a damaged sheet inside a readable zip
                raise InputError(path, f"sheet {ws.title}", f"damaged sheet ({type(exc).__name__}: "
                                                            f"{str(exc).splitlines()[0][:80] if str(exc) else 'unreadable'})") from None
            if not rows:
                out[ws.title.lower()] = _Sheet(path, ws.title, [], [])
                continue
            out[ws.title.lower()] = _Sheet(path, ws.title, rows[0], rows[1:])
    finally:
        wb.close()
    return out


def _csv_sheet(path: Path, tab: str) -> _Sheet:
    text = text_of(read_bytes(path, "RVTools CSV file"), path, "CSV file")
    first = text.splitlines()[0] if text.strip() else ""
    # the delimiter the header uses most: ',' (RVTools), ';' (a European locale), tab (Excel's "Unicode text")
    delim = max((",", ";", "\t"), key=first.count)
    rows = list(csv.reader(text.splitlines(), delimiter=delim))
    if not rows:
        return _Sheet(path, tab, [], [])
    for r, row in enumerate(rows[1:], start=2):
        if len(row) > len(rows[0]) and any(c.strip() for c in row[len(rows[0]):]):
            # an unquoted '2,048' splits into two cells and shifts every later column
            raise InputError(path, f"sheet {tab}, row {r}", f"{len(row)} fields where the header has {len(rows[0])} "
                                                            f"(an unquoted {delim!r} inside a value, such as a thousands separator?)")
    return _Sheet(path, tab, rows[0], rows[1:])


def _tab_of_csv(path: Path) -> str | None:
    stem = path.stem.lower()
    for tab in SHEETS:
        if stem.endswith(tab.lower()) or stem == tab.lower() or f"tab{tab.lower()}" in stem:
            return tab
    return None


def _csv_sheets(path: Path) -> dict[str, _Sheet]:
    files = sorted(path.glob("*.csv")) if path.is_dir() else [path]
    out: dict[str, _Sheet] = {}
    for f in files:
        tab = _tab_of_csv(f)
        if tab is None and not path.is_dir():
            # a lone CSV: decide by its first header's prefix
            head = first_line(f, "RVTools CSV file").lower()
            tab = next((t for t in SHEETS if head.startswith(t.lower())), "vInfo")
        if tab is not None:
            out[tab.lower()] = _csv_sheet(f, tab)
    return out


def is_rvtools(path: Path) -> bool:
    if path.suffix.lower() == ".xlsx":
        return True
    if path.is_dir():
        return any(_tab_of_csv(f) == "vInfo" for f in path.glob("*.csv"))
    if path.suffix.lower() == ".csv":
        if _tab_of_csv(path) == "vInfo":
            return True
        head = first_line(path, "RVTools CSV file").lower()
        return head.startswith("vinfo") or head.startswith("vm,") or head.startswith("vm;")
    return False


def _hosts(vh: "_Sheet", notes: list[str]) -> HostInventory | None:
    """Today's hosts from the vHost tab: model, CPU, sockets, cores, MHz, memory, cluster."""
    hc = vh.find(VHOST["host"])
    if hc is None:
        return None
    n = len(vh.rows)

    def text(key: str) -> np.ndarray:
        c = vh.find(VHOST[key])
        return np.array([("" if v is None else str(v).strip()) for v in vh.column(c)] if c is not None else [""] * n, dtype=object)

    def number(key: str, what: str, checker) -> np.ndarray:
        c = vh.find(VHOST[key])
        if c is None:
            return np.full(n, np.nan)
        vals = vh.numbers(c, what, allow_blank=True)
        given = np.flatnonzero(~np.isnan(vals))
        vh.check(vals[given], given, c, checker)
        return vals

    def whole(v, src, col, **kw):
        check_values(v, src, col, lo=1, hi=MAX_VCPUS, integer=True, what="count", **kw)

    sockets = number("sockets", "# CPU", whole)
    per_cpu = number("cores_per_cpu", "Cores per CPU", whole)
    cores = number("cores", "# Cores", whole)
    cores = np.where(np.isnan(cores), sockets * per_cpu, cores)
    speed = number("speed", "Speed", check_clock)
    mc = vh.find(VHOST["memory"])
    mem = np.full(n, np.nan)
    if mc is not None:
        raw = vh.numbers(mc, "# Memory", allow_blank=True)
        given = np.flatnonzero(~np.isnan(raw))
        in_bytes = bool(given.size and np.nanmax(raw) > HOST_MEMORY_BYTES_ABOVE)
        mem = raw if in_bytes else raw * MIB
        if in_bytes:
            notes.append(f"vHost '{vh.header[mc]}' read as bytes (values above 2^32 cannot be MiB)")
        vh.check(mem[given], given, mc, lambda v, src, col, **kw: check_values(v, src, col, lo=2.0**30, hi=2.0**50,
                                                                                what="host memory (bytes)", **kw))
    vendor, model = text("vendor"), text("model")
    full = np.array([f"{a} {b}".strip() for a, b in zip(vendor, model)], dtype=object)
    if np.isnan(cores).any() or np.isnan(mem).any():
        notes.append("vHost lacks cores or memory for some hosts (shown as 0)")
    return HostInventory(
        names=text("host"), model=full, cpu_model=text("cpu_model"),
        sockets=np.nan_to_num(sockets).astype(np.int32), cores=np.nan_to_num(cores).astype(np.int32),
        core_mhz=speed.astype(np.float64), mem_bytes=np.nan_to_num(mem).astype(np.float64), cluster=text("cluster"),
    )


def _text(v) -> str:
    return "" if v is None else str(v).strip()


def _group_tags(vi: "_Sheet", vn: "_Sheet | None", names: list[str], keys: list[str], idx: np.ndarray, multi_server: bool,
                servers: list[str], tags: dict) -> dict:
    """Add the grouping tags (:data:`GROUP_COLUMNS`, ``networks``, ``attr:<header>`` per custom attribute) of the kept
    VMs ``idx`` to ``tags``; return the facts saying which were found and which vInfo columns were not read."""
    found = []
    for tag, aliases in GROUP_COLUMNS.items():
        c = vi.find(aliases)
        if c is not None:
            col = vi.column(c)
            tags[tag] = [_text(col[i]) for i in idx]
            found.append(vi.header[c])
    nets: list[set[str]] = [set() for _ in names]
    net_cols = [i for i, k in enumerate(vi.keys) if k in NETWORK_COLUMNS]
    for c in net_cols:
        for i, v in enumerate(vi.column(c)):
            if _text(v):
                nets[i].add(_text(v))
    found += [vi.header[c] for c in net_cols]
    network_tab = False
    if vn is not None and vn.header and vn.rows:
        nc, pc = vn.find(("vm", "vmname", "name")), vn.find(("network", "portgroup"))
        if nc is not None and pc is not None:
            network_tab = True
            sc = vn.find(("visdkserver",))
            row = {k: i for i, k in enumerate(keys)}
            vms = vn.column(nc)
            srv = vn.column(sc) if sc is not None else [""] * len(vms)
            for v, s, pg in zip(vms, srv, vn.column(pc)):
                k = f"{_text(s)}/{_text(v)}" if multi_server else _text(v)
                if k in row and _text(pg):
                    nets[row[k]].add(_text(pg))
    if net_cols or network_tab:
        tags["networks"] = [";".join(sorted(nets[i])) for i in idx]
    os_cols = [c for c in (vi.find(aliases) for aliases in OS_COLUMNS) if c is not None]
    if os_cols:
        cols = [vi.column(c) for c in os_cols]
        tags["os"] = [next((_text(col[i]) for col in cols if _text(col[i])), "") for i in idx]
    attrs = []
    for c, (h, k) in enumerate(zip(vi.header, vi.keys)):
        if h and k not in DOCUMENTED_VINFO and k not in _VINFO_READ:
            col = vi.column(c)
            tags[f"attr:{h}"] = [_text(col[i]) for i in idx]
            attrs.append(h)
    unread = [h for h, k in zip(vi.header, vi.keys) if h and k in DOCUMENTED_VINFO and k not in _VINFO_READ]
    return {"group_columns": found + (["vNetwork: Network"] if network_tab else []), "custom_attributes": attrs,
            "vinfo_columns_unread": unread}


def _vmemory_column(sheet: "_Sheet | None", key: str, label: str, what: str, names: list[str]) -> np.ndarray | None:
    """A vMemory memory column (:data:`VMEM_MEM` ``key``, any unit) per VM of ``names`` (NaN: not listed or blank),
    each value checked (one line naming the row on a bad one); None when the tab or the column is not there."""
    if sheet is None or not sheet.header or not sheet.rows:
        return None
    nc, mc = sheet.find(VMEM["vm"]), sheet.find_mem(VMEM_MEM[key])
    if nc is None or mc is None:
        return None
    vals = sheet.numbers(mc[0], label, unit_bytes=mc[1], allow_blank=True)
    given = np.flatnonzero(~np.isnan(vals))
    sheet.check(vals[given], given, mc[0], lambda v, src, col, **kw: check_values(v, src, col, what=what, **kw))
    by_name = dict(zip((str(v).strip() for v in sheet.column(nc)), vals))
    return np.array([by_name.get(n, np.nan) for n in names])


def _truthy(v) -> bool:
    return str(v).strip().lower() in ("true", "1", "yes", "wahr", "y")


def read_rvtools(
    path: str | Path,
    *,
    include_powered_off: bool = False,
    snapshot_peak_factor: float = 1.0,
    default_vcpu_mhz: float = DEFAULT_VCPU_MHZ,
    unknown_cpu_pct: float = UNKNOWN_CPU_PCT,
) -> Inventory:
    """Read an RVTools export (xlsx, one tab CSV, or a folder of tab CSVs) into an :class:`Inventory`.

    ``unknown_cpu_pct``: the CPU demand, in % of vCPUs x MHz, of a VM whose usage was not exported (no vCPU
    'Overall' row and its host not in vHost) when other VMs' usage was; see :data:`SNAPSHOT_RULE`."""
    path = Path(path)
    if not path.exists():
        raise InputError(path, "", "inventory not found")
    f = float(snapshot_peak_factor)
    if not (np.isfinite(f) and 0 < f <= 100):
        raise InputError(None, "--snapshot-peak-factor", f"must be a number > 0 (and at most 100), got {snapshot_peak_factor!r}")
    check_clock(np.array([default_vcpu_mhz], dtype=float), "default_vcpu_mhz", "default_vcpu_mhz")
    u = float(unknown_cpu_pct)
    if not (np.isfinite(u) and 0 <= u <= 100):
        raise InputError(None, "--unknown-cpu-pct", f"must be a number from 0 to 100, got {unknown_cpu_pct!r}")
    sheets = _xlsx_sheets(path) if path.suffix.lower() == ".xlsx" else _csv_sheets(path)
    if "vinfo" not in sheets:
        raise InputError(path, "sheet vInfo", f"missing (sheets found: {', '.join(s.name for s in sheets.values()) or 'none'})")
    vi = sheets["vinfo"]
    if not vi.header or not vi.rows:
        where = f"sheet {vi.name}, row {2 if vi.header else 1}"
        raise InputError(path, where, "empty sheet: no VM rows under the header" if vi.header else "empty sheet: no header row")

    cols = {k: vi.find(a) for k, a in VINFO.items()}
    for need in ("vm", "cpus"):
        if cols[need] is None:
            raise vi.error(None, None, f"no column for {need!r} (looked for headers {', '.join(VINFO[need])}; found {', '.join(vi.header)})")
    mem = vi.find_mem(VINFO_MEM["memory"])
    if mem is None:
        raise vi.error(None, None, "no 'Memory' column (looked for Memory, Memory MiB, Memory MB)")
    active_col = vi.find_mem(VINFO_MEM["active"])

    names = [str(v).strip() if v is not None else "" for v in vi.column(cols["vm"])]
    for i, nm in enumerate(names):
        if nm == "":
            raise vi.error(i, cols["vm"], "VM name is blank")
    keep = np.ones(len(names), dtype=bool)
    if cols["template"] is not None:
        keep &= ~np.array([_truthy(v) for v in vi.column(cols["template"])], dtype=bool)
    if cols["powerstate"] is not None and not include_powered_off:
        keep &= np.array([str(v).strip().lower() in ("poweredon", "on", "running") for v in vi.column(cols["powerstate"])])
    cpus = vi.numbers(cols["cpus"], "CPUs")
    mem_bytes = vi.numbers(mem[0], "Memory", unit_bytes=mem[1])
    for i in np.flatnonzero(keep):
        if not (cpus[i] >= 1) or cpus[i] != int(cpus[i]):
            raise vi.error(int(i), cols["cpus"], f"VM {names[i]!r} has {cpus[i]:g} vCPUs; must be a whole number >= 1")
        if not (mem_bytes[i] > 0):
            raise vi.error(int(i), mem[0], f"VM {names[i]!r} has memory {mem_bytes[i]:g} bytes; must be > 0")
    kept = np.flatnonzero(keep)
    vi.check(cpus[kept], kept, cols["cpus"], check_vcpus)
    mem_unit = vi.header[mem[0]].split()[-1] if len(vi.header[mem[0]].split()) > 1 else "MiB"
    vi.check(mem_bytes[kept], kept, mem[0], lambda v, src, col, rows=None, **kw: check_memory_per_vcpu(
        v, cpus[kept], src, col, unit=mem_unit, rows=rows, **kw))
    vi.check(mem_bytes[kept], kept, mem[0], check_memory)
    # natural key: VM + VI SDK Server
    servers = [str(v).strip() for v in vi.column(cols["server"])] if cols["server"] is not None else [""] * len(names)
    multi_server = len({s for s in servers if s}) > 1
    keys = [f"{s}/{n}" if multi_server else n for s, n in zip(servers, names)]
    seen: dict[str, int] = {}
    for i in np.flatnonzero(keep):
        k = keys[i]
        if k in seen:
            raise vi.error(int(i), cols["vm"], f"duplicate VM name {names[i]!r} (also in row {vi.row_numbers[seen[k]]})")
        seen[k] = int(i)
    idx = np.flatnonzero(keep)
    if idx.size == 0:
        raise vi.error(None, None, "no powered-on, non-template VMs in the sheet")

    hosts = [str(v).strip() if v is not None else "" for v in vi.column(cols["host"])] if cols["host"] is not None else [""] * len(names)
    clusters = [str(v).strip() if v is not None else "" for v in vi.column(cols["cluster"])] if cols["cluster"] is not None else [""] * len(names)

    # vHost: MHz per core and CPU usage % by host name
    host_mhz: dict[str, float] = {}
    host_usage: dict[str, float] = {}
    notes: list[str] = []
    today = None
    host_names: set[str] | None = None
    vh = sheets.get("vhost")
    if vh is not None and vh.header and vh.rows:
        today = _hosts(vh, notes)
        hc = vh.find(VHOST["host"])
        if hc is not None:
            host_names = {str(v).strip() for v in vh.column(hc) if v is not None and str(v).strip()}
        sc = vh.find(VHOST["speed"])
        uc = vh.find(VHOST["cpu_usage_pct"])
        if hc is not None:
            hn = [str(v).strip() for v in vh.column(hc)]
            if sc is not None:
                speeds = vh.numbers(sc, "Speed", allow_blank=True)
                given = np.flatnonzero(~np.isnan(speeds))
                vh.check(speeds[given], given, sc, check_clock)
                first_row: dict[str, int] = {}
                for i, (h, x) in enumerate(zip(hn, speeds)):
                    j = first_row.setdefault(h, i)
                    if j != i and not (speeds[j] == x or (np.isnan(speeds[j]) and np.isnan(x))):
                        raise vh.error(i, sc, f"host {h!r} is listed twice with different speeds ({x:g} MHz here, {speeds[j]:g} MHz "
                                              f"in row {vh.row_numbers[j]}): which one do its VMs run at?")
                    if x > 0:
                        host_mhz[h] = float(x)
            if uc is not None:
                usage = vh.numbers(uc, "CPU usage %", allow_blank=True, whole=False, percent=True)
                given = np.flatnonzero(~np.isnan(usage))
                vh.check(usage[given], given, uc, lambda v, src, col, **kw: check_values(
                    v, src, col, hi=MAX_HOST_CPU_USAGE_PCT, what="CPU usage %", implausible=False, **kw))
                for h, x in zip(hn, usage):
                    if x >= 0:
                        host_usage[h] = float(x)
    vcpu_mhz = np.array([host_mhz.get(hosts[i], default_vcpu_mhz) for i in range(len(names))])
    capacity_mhz = cpus * vcpu_mhz

    rules: list[str] = []
    # CPU demand snapshot
    cpu_now = np.full(len(names), np.nan)
    vc = sheets.get("vcpu")
    if vc is not None and vc.header and vc.rows:
        nc, oc = vc.find(VCPU["vm"]), vc.find(VCPU["overall"])
        if nc is not None and oc is not None:
            overall = vc.numbers(oc, "Overall", allow_blank=True)
            given = np.flatnonzero(~np.isnan(overall))
            vc.check(overall[given], given, oc, lambda v, src, col, **kw: check_values(v, src, col, what="CPU MHz in use", **kw))
            by_name = dict(zip((str(v).strip() for v in vc.column(nc)), overall))
            cpu_now = np.array([by_name.get(n, np.nan) for n in names])
            rules.append("CPU from vCPU.Overall")
    missing = ~np.isfinite(cpu_now)
    if missing.any() and host_usage:
        from_host = np.array([host_usage.get(h, np.nan) for h in hosts]) / 100.0 * capacity_mhz
        cpu_now = np.where(missing, from_host, cpu_now)
        rules.append("CPU from vHost 'CPU usage %'")
    no_cpu = not np.isfinite(cpu_now[idx]).any()  # nothing about CPU use was exported (only vInfo, say)
    missing = ~np.isfinite(cpu_now)
    if no_cpu:
        rules.append("no CPU usage exported: no CPU demand series")
    cpu_default = int(idx.size) if no_cpu else int(missing[idx].sum())  # VMs sized by a default rule, not a measurement
    if not no_cpu and missing.any():
        cpu_now = np.where(missing, capacity_mhz * (u / 100.0), cpu_now)
        rules.append(f"CPU = {u:g} % of the configured size where no usage was exported (unknown CPU %)")
    # VMs whose host is not in vHost: no clock and no host CPU usage for them; counted and said
    missing_host = 0
    if host_names is not None:
        absent = np.array([hosts[i] not in host_names for i in idx], dtype=bool)
        missing_host = int(absent.sum())
        if missing_host:
            example = hosts[int(idx[np.argmax(absent)])]
            short = {h.split(".")[0].lower(): h for h in host_names}
            twin = short.get(example.split(".")[0].lower()) if example else None
            hint = f"; vHost lists {twin!r}: the same host under another name? densim matches names exactly" if twin else ""
            guessed = int((absent & missing[idx]).sum()) if not no_cpu else 0
            notes.append(
                f"warning: {missing_host:,} of {idx.size:,} VMs name a host that is not in vHost "
                f"(e.g. {example!r}" + (")" if example else ", blank)")
                + f": their vCPUs are taken at the default {default_vcpu_mhz:,.0f} MHz"
                + (f", and {guessed:,} of them with no usage exported are sized at {u:g} % of vCPUs x MHz (the unknown "
                   "CPU % rule; --unknown-cpu-pct changes it)" if guessed else "")
                + hint + "; export vHost with every host to size them from their hosts")
    # memory in use snapshot (vMemory 'Active'); host memory each VM has touched (vMemory 'Consumed'): what pre-copy
    # must send, the rest is zero pages (plan waves)
    vm_sheet = sheets.get("vmemory")
    mem_now = _vmemory_column(vm_sheet, "active", "Active", "active memory (bytes)", names)
    if mem_now is not None:
        rules.append("memory from vMemory.Active")
    else:
        mem_now = np.full(len(names), np.nan)
    consumed = _vmemory_column(vm_sheet, "consumed", "Consumed", "consumed memory (bytes)", names)
    if active_col is not None:
        vals = vi.numbers(active_col[0], "Active Memory", unit_bytes=active_col[1], allow_blank=True)
        given = np.intersect1d(np.flatnonzero(~np.isnan(vals)), kept)
        vi.check(vals[given], given, active_col[0], lambda v, src, col, **kw: check_values(v, src, col, what="active memory (bytes)", **kw))
        miss = ~np.isfinite(mem_now)
        if miss.any():
            mem_now = np.where(miss, vals, mem_now)
            rules.append("memory from vInfo 'Active Memory'")
    no_mem = not np.isfinite(mem_now[idx]).any()
    miss = ~np.isfinite(mem_now)
    if no_mem:
        rules.append("no active memory exported: no memory series")
    mem_default = int(idx.size) if no_mem else int(miss[idx].sum())
    if not no_mem and miss.any():
        mem_now = np.where(miss, mem_bytes, mem_now)
        rules.append("memory = configured size where no active memory was exported")

    # measured readiness per VM (% of time ready to run but not scheduled), kept as exported for the plan to compare
    measured: dict[str, np.ndarray] = {}
    for key, what in (("ready", "CPU readiness %"), ("costop", "co-stop %")):
        for sheet in (vi, sheets.get("vcpu")):
            if sheet is None or not sheet.header or not sheet.rows:
                continue
            c = sheet.find(READINESS[key])
            if c is None:
                continue
            vals = sheet.numbers(c, what, allow_blank=True, whole=False, percent=True)
            if sheet is vi:
                rows_of = np.arange(len(names))
            else:
                nc = sheet.find(VCPU["vm"])
                pos = {str(v).strip(): i for i, v in enumerate(sheet.column(nc))} if nc is not None else {}
                rows_of = np.array([pos.get(n, -1) for n in names])
            per_vm = np.where(rows_of >= 0, vals[np.maximum(rows_of, 0)], np.nan)
            chk = np.intersect1d(np.flatnonzero(~np.isnan(per_vm)), kept)
            sheet.check(per_vm[chk], rows_of[chk], c, lambda v, src, col, w=what, **kw: check_values(v, src, col, what=w, **kw))
            averaged = sheet.keys[c] in READINESS_AVERAGED  # see READINESS_AVERAGED: the column's unit
            over = per_vm[chk] > (100.0 if averaged else 100.0 * cpus[chk])
            if over.any():
                i = int(chk[np.argmax(over)])
                raise sheet.error(int(rows_of[i]), c, (
                    f"{what} {per_vm[i]:g} is more than 100 % (vSphere's VM readiness is the average over its vCPUs)"
                    if averaged else f"{what} {per_vm[i]:g} is more than 100 % per vCPU ({int(cpus[i])} vCPUs, summed)"))
            measured[key] = per_vm if averaged else per_vm / np.maximum(cpus, 1)
            break
    cpu_series = None if no_cpu else np.minimum(cpu_now * f, capacity_mhz)[None, :]
    mem_series = None if no_mem else np.minimum(mem_now * f, mem_bytes)[None, :]
    rule = SNAPSHOT_RULE + f" Applied here: {'; '.join(dict.fromkeys(rules))}; peak factor {f:g}."
    tags = {
        "cluster": [clusters[i] for i in idx],
        "host": [hosts[i] for i in idx],
    }
    group_facts = _group_tags(vi, sheets.get("vnetwork"), names, keys, idx, multi_server, servers, tags)
    from densim.workloads.readers.rvtools_readiness import readiness

    ready = readiness(sheets, keys, idx, hosts, multi_server)
    notes.extend(ready.notes)
    unknown_cpu_hosts = 0
    if today is not None:
        unknown_cpu_hosts = int(sum(1 for m, mhz, c in zip(today.cpu_model, today.core_mhz, today.cores)
                                    if not str(m).strip() or not (mhz > 0) or c <= 0))
    facts = {"tabs": sorted(s.name for s in sheets.values() if s.header),
             "usage_columns": [r.removeprefix("CPU from ").removeprefix("memory from ") for r in dict.fromkeys(rules)
                               if r.startswith(("CPU from", "memory from"))],
             "cpu_default_vms": cpu_default, "mem_default_vms": mem_default,
             "hosts_listed": None if today is None else today.n_hosts, "unknown_cpu_hosts": unknown_cpu_hosts} | group_facts
    return build_inventory(
        [keys[i] for i in idx],
        cpus[idx].astype(np.int32),
        vcpu_mhz[idx],
        mem_bytes[idx],
        cpu_mhz=None if cpu_series is None else cpu_series[:, idx],
        mem_used_bytes=None if mem_series is None else mem_series[:, idx],
        step_s=300.0,
        source=str(path),
        fmt="rvtools",
        demand_rule=rule,
        tags=tags,
        hosts=today,
        notes=notes,
        ready_pct=None if "ready" not in measured else measured["ready"][idx],
        consumed_bytes=None if consumed is None else consumed[idx],
        costop_pct=None if "costop" not in measured else measured["costop"][idx],
        missing_host_vms=missing_host,
        readiness=ready,
        facts=facts,
    )
