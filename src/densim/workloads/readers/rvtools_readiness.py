"""Migration readiness from an RVTools export: what blocks or slows a live move of each VM.

Each check reads named tabs and columns (matched by header, like the rest of the RVTools reader) and says, per
VM, flagged / not flagged / unknown. A tab or column that is not in the export makes the check *unknown* ("not in
the export: ..."), never "ready". Whether a flagged VM is BLOCKED (a live move fails until someone acts) or SLOWED
(it moves, but needs extra work, a power cycle or a longer transfer) is stated per check with the reason and the
vendor document it rests on:

* ``snapshots`` (vSnapshot: VM) - SLOWS. vMotion and Storage vMotion move a VM with snapshots inside vSphere, but
  every delta disk is copied with it, and HCX consolidates snapshots before a migration (HCX user guide, "Migration
  options": *Remove Snapshots*; vSphere API fault ``SnapshotMoveNotSupported``/``HotSnapshotMoveNotSupported`` for
  disk moves that cannot keep them). Consolidate first: a disk-write-heavy job of its own.
* ``cd_connected`` (vCD: VM, Connected, Device Type) - BLOCKS. A connected CD/DVD backed by a host device is a
  migration error (vSphere API ``CannotAccessVmDevice``: "If a device with such a backing is currently connected,
  that will be a migration error"; vSphere 6.7 "Virtual Machine Conditions and Limitations for vMotion"); an ISO on
  a datastore the destination cannot see fails the same way, and HCX vMotion refuses "attached virtual media or
  ISOs" (HCX user guide, "Virtual Machine Restrictions for HCX vMotion"). Disconnect it first.
* ``rdm`` (vDisk: Raw, Raw Comp. Mode) - BLOCKS. A raw device mapping points at a LUN of today's SAN: a live move
  to other storage or another platform cannot carry it (vSphere API ``RawDiskNotSupported`` under
  ``DisallowedMigrationDeviceAttached``; the HCX user guide lists only virtual-compatibility RDMs (RDM-V) as
  migratable, some versions by Bulk Migration only, a reboot). A vMotion to a host that sees the same LUN keeps
  the RDM: for a move inside one SAN this is an estimate on the safe side.
* ``shared_disk`` (vDisk: Sharing mode, Shared Bus) - BLOCKS. SCSI bus sharing is "an error when migrating a
  powered-on virtual machine" (vSphere API ``SharedBusControllerNotSupported``); multi-writer disks cannot be moved
  by Storage DRS (``StorageDrsCannotMoveDiskInMultiWriterMode``) and HCX vMotion refuses shared SCSI buses,
  multi-writer and shared VMDKs. The cluster's VMs move together, in a window.
* ``hw_version`` (vInfo: HW version; else vTools: VM Version) - BLOCKS below version 9: HCX vMotion requires
  virtual hardware 9 or later (HCX user guide, "Requirements for HCX vMotion"); the upgrade needs a power cycle.
* ``tools`` (vTools: Tools) - SLOWS. A switchover that powers the VM off (HCX Bulk Migration, cold migration)
  shuts the guest down through VMware Tools; without running Tools it must be forced off (HCX "Force Power-Off
  VM"); out-of-date Tools are upgraded at the move (HCX "upgradeVMTools"). Not a vMotion requirement.
* ``cpu_baseline`` (vHost: Current EVC of the VM's host; vInfo: min Required EVC Mode Key) - SLOWS. A VM on a
  host without an EVC mode sees that CPU's whole feature set; it can move live only to a CPU with every one of
  those features (same vendor, same or newer generation), else it needs a power cycle on the target (vSphere API
  ``EVCMode``: "An EVC-enabled cluster supports safe vMotion of virtual machines across a range of CPU
  generations"; ``ClusterEVCManagerEVCState``). The VM's CPU vendor (from its EVC mode key or its host's CPU
  Model) is kept: a live move never crosses Intel/AMD (``EVCAdmissionFailedCPUVendor``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

import numpy as np

HCX_MIN_HW_VERSION = 9  # HCX vMotion: "virtual machine hardware version must be at least version 9"

SOURCES = {
    "snapshots": "VMware HCX user guide, Migration options (Remove Snapshots); vSphere API SnapshotMoveNotSupported",
    "cd_connected": "vSphere API CannotAccessVmDevice; vSphere 6.7 vMotion conditions and limitations; HCX vMotion restrictions",
    "rdm": "vSphere API DisallowedMigrationDeviceAttached / RawDiskNotSupported; HCX vMotion requirements (RDM-V only)",
    "shared_disk": "vSphere API SharedBusControllerNotSupported, StorageDrsCannotMoveDiskInMultiWriterMode; HCX vMotion restrictions",
    "hw_version": "VMware HCX user guide, Requirements for HCX vMotion (hardware version 9 or later)",
    "tools": "VMware HCX user guide, Migration options (Force Power-Off VM, graceful shutdown through Tools)",
    "cpu_baseline": "vSphere API EVCMode, ClusterEVCManagerEVCState, EVCAdmissionFailedCPUVendor",
}


@dataclass(frozen=True)
class Check:
    """One readiness check over every VM of the inventory."""

    key: str
    label: str
    tab: str
    columns: tuple[str, ...]
    effect: str  # "blocks" or "slows"
    reason: str
    flagged: np.ndarray  # (N,) bool
    unknown: np.ndarray  # (N,) bool: the export says nothing about this VM here
    detail: np.ndarray  # (N,) object: what was found ("2 snapshots", the ISO path), "" when nothing
    missing: str = ""  # "" when the tab and columns are in the export, else what is not
    items: int = 0  # things counted (snapshots, RDM disks...), for the summary

    @property
    def known(self) -> bool:
        return not self.missing

    def subset(self, idx: np.ndarray) -> "Check":
        return replace(self, flagged=self.flagged[idx], unknown=self.unknown[idx], detail=self.detail[idx])


@dataclass(frozen=True)
class Readiness:
    checks: tuple[Check, ...]
    cpu_vendor: np.ndarray  # (N,) object: "intel", "amd" or "" (unknown)
    evc_mode: np.ndarray  # (N,) object: the VM's EVC mode key or its host's Current EVC, "" when none
    notes: tuple[str, ...] = field(default_factory=tuple)

    def subset(self, idx: np.ndarray) -> "Readiness":
        return replace(self, checks=tuple(c.subset(idx) for c in self.checks), cpu_vendor=self.cpu_vendor[idx],
                       evc_mode=self.evc_mode[idx])

    def status(self) -> np.ndarray:
        """Per VM: 'blocked' (a blocking check flags it), 'slowed', 'unknown' (no flag, some check unknown), 'ready'."""
        n = self.cpu_vendor.shape[0]
        blocked = np.zeros(n, bool)
        slowed = np.zeros(n, bool)
        unknown = np.zeros(n, bool)
        for c in self.checks:
            if c.effect == "blocks":
                blocked |= c.flagged
            else:
                slowed |= c.flagged
            unknown |= c.unknown
        return np.where(blocked, "blocked", np.where(slowed, "slowed", np.where(unknown, "unknown", "ready"))).astype(object)


# ------------------------------------------------------------------------------------------------ reading

_TRUE = ("true", "1", "yes", "wahr", "y", "ja", "vrai")


def _truthy(v) -> bool:
    return str(v).strip().lower() in _TRUE


def _text(v) -> str:
    return "" if v is None else str(v).strip()


def _usable(sheet) -> bool:
    return sheet is not None and bool(sheet.header)


def _vm_index(sheet, keys: dict[str, int], multi_server: bool) -> np.ndarray | None:
    """For each row of ``sheet``: the inventory index of its VM, -1 when not in the inventory; None without a VM column."""
    vc = sheet.find(("vm", "vmname"))  # not 'Name': in vSnapshot that is the snapshot's name
    if vc is None:
        return None
    names = [_text(v) for v in sheet.column(vc)]
    if multi_server:
        sc = sheet.find(("visdkserver",))
        servers = [_text(v) for v in sheet.column(sc)] if sc is not None else [""] * len(names)
        names = [f"{s}/{n}" if s else n for s, n in zip(servers, names)]
    return np.array([keys.get(n, -1) for n in names], dtype=np.int64)


def _missing(tab: str, sheets: dict, cols: dict[str, tuple[str, ...]]) -> tuple[object, dict[str, int], str]:
    """The tab's sheet, the found column indexes, and what is not in the export ('' when all is)."""
    sh = sheets.get(tab.lower())
    if not _usable(sh):
        return None, {}, f"not in the export: tab {tab}"
    found = {k: sh.find(a) for k, a in cols.items()}
    absent = [k for k, i in found.items() if i is None]
    if absent:
        return sh, found, f"not in the export: column{'s' if len(absent) > 1 else ''} {', '.join(repr(a) for a in absent)} of tab {tab}"
    return sh, found, ""


def _check(key, label, tab, columns, effect, reason, n, missing="", flagged=None, unknown=None, detail=None, items=0) -> Check:
    if missing:
        flagged, unknown, detail = np.zeros(n, bool), np.ones(n, bool), np.full(n, "", dtype=object)
    return Check(key, label, tab, tuple(columns), effect, reason, flagged, unknown, detail, missing, items)


def _hw_number(v) -> float:
    """'vmx-13', '13', 13 -> 13; blank or unreadable -> NaN."""
    m = re.search(r"(\d+)", _text(v))
    return float(m.group(1)) if m else np.nan


def _vendor(text: str) -> str:
    t = text.lower()
    if "intel" in t or "xeon" in t:
        return "intel"
    if "amd" in t or "epyc" in t or "opteron" in t:
        return "amd"
    return ""


def readiness(sheets: dict, keys: list[str], idx: np.ndarray, hosts: list[str], multi_server: bool) -> Readiness:
    """The checks for the inventory's VMs (``keys[i]`` for ``i`` in ``idx``: the kept vInfo rows; ``hosts``: every vInfo
    row's host)."""
    n = len(idx)
    pos = {keys[int(i)]: k for k, i in enumerate(idx)}
    notes: list[str] = []
    out: list[Check] = []

    def per_vm(sheet, what: str):
        if multi_server and sheet.find(("visdkserver",)) is None:
            # several vCenters: a VM name alone may name two VMs, so this tab cannot be matched to vInfo
            return None, f"not in the export: column 'VI SDK Server' of tab {what} (the export spans several vCenters)"
        rows = _vm_index(sheet, pos, multi_server)
        if rows is None:
            return None, f"not in the export: column 'VM' of tab {what}"
        return rows, ""

    # snapshots ---------------------------------------------------------------------------------------
    label, reason = "snapshots", ("delta disks are copied with the VM, or consolidated first (HCX does); a write-heavy "
                                  "job of its own before the move")
    sh, _f, miss = _missing("vSnapshot", sheets, {})
    rows = None
    if not miss:
        rows, miss = per_vm(sh, "vSnapshot")
    if miss:
        out.append(_check("snapshots", label, "vSnapshot", ("VM",), "slows", reason, n, miss))
    else:
        counts = np.bincount(rows[rows >= 0], minlength=n)[:n]
        out.append(_check("snapshots", label, "vSnapshot", ("VM",), "slows", reason, n, flagged=counts > 0, unknown=np.zeros(n, bool),
                          detail=np.array([f"{c} snapshot{'s' if c != 1 else ''}" if c else "" for c in counts], dtype=object),
                          items=int(counts.sum())))

    # connected CD/DVD ----------------------------------------------------------------------------------
    label, reason = "connected CD/DVD or ISO", ("a connected host device or an ISO the destination cannot see is a "
                                                "migration error; disconnect it first (every connected drive is counted: "
                                                "which datastores the target sees is not in the export)")
    sh, f, miss = _missing("vCD", sheets, {"connected": ("connected",)})
    rows = None
    if not miss:
        rows, miss = per_vm(sh, "vCD")
    if miss:
        out.append(_check("cd_connected", label, "vCD", ("VM", "Connected", "Device Type"), "blocks", reason, n, miss))
    else:
        conn = np.array([_truthy(v) for v in sh.column(f["connected"])], dtype=bool)
        tc = sh.find(("devicetype",))
        dev = [_text(v) for v in sh.column(tc)] if tc is not None else [""] * len(conn)
        flagged = np.zeros(n, bool)
        detail = np.full(n, "", dtype=object)
        hit = np.flatnonzero(conn & (rows >= 0))
        for r in hit:
            j = int(rows[r])
            flagged[j] = True
            detail[j] = (detail[j] + "; " if detail[j] else "") + (dev[r] or "connected")
        out.append(_check("cd_connected", label, "vCD", ("VM", "Connected", "Device Type"), "blocks", reason, n, flagged=flagged,
                          unknown=np.zeros(n, bool), detail=detail, items=int(hit.size)))

    # vDisk: RDM and shared disks ---------------------------------------------------------------------------
    label, reason = "raw device mapping (RDM)", ("the disk is a LUN of today's SAN: a live move to other storage or "
                                                 "another platform cannot carry it (convert or re-present the LUN); inside "
                                                 "one SAN a vMotion keeps it (estimate: safe side)")
    sh, f, miss = _missing("vDisk", sheets, {"raw": ("raw",)})
    rows = None
    if not miss:
        rows, miss = per_vm(sh, "vDisk")
    if miss:
        out.append(_check("rdm", label, "vDisk", ("VM", "Raw"), "blocks", reason, n, miss))
    else:
        raw = np.array([_truthy(v) for v in sh.column(f["raw"])], dtype=bool)
        mc = sh.find(("rawcompmode",))
        mode = [_text(v) for v in sh.column(mc)] if mc is not None else [""] * len(raw)
        hit = np.flatnonzero(raw & (rows >= 0))
        counts = np.bincount(rows[hit], minlength=n)[:n] if hit.size else np.zeros(n, np.int64)
        modes: dict[int, set] = {}
        for r in hit:
            if mode[r]:
                modes.setdefault(int(rows[r]), set()).add(mode[r])
        detail = np.array([(f"{c} RDM disk{'s' if c != 1 else ''}" + (f" ({', '.join(sorted(modes[j]))})" if j in modes else ""))
                           if c else "" for j, c in enumerate(counts)], dtype=object)
        out.append(_check("rdm", label, "vDisk", ("VM", "Raw", "Raw Comp. Mode"), "blocks", reason, n, flagged=counts > 0,
                          unknown=np.zeros(n, bool), detail=detail, items=int(hit.size)))

    label, reason = "shared disk (multi-writer or SCSI bus sharing)", (
        "SCSI bus sharing is an error for a powered-on migration and multi-writer disks cannot be moved live; the "
        "cluster's VMs move together in a window")
    sh, f, miss = _missing("vDisk", sheets, {"sharing": ("sharingmode",), "bus": ("sharedbus",)})
    rows = None
    if not miss:
        rows, miss = per_vm(sh, "vDisk")
    if miss:
        out.append(_check("shared_disk", label, "vDisk", ("VM", "Sharing mode", "Shared Bus"), "blocks", reason, n, miss))
    else:
        share = [_text(v).lower() for v in sh.column(f["sharing"])]
        bus_text = [_text(v) for v in sh.column(f["bus"])]
        bus = [b.lower() for b in bus_text]
        flagged = np.zeros(n, bool)
        detail = np.full(n, "", dtype=object)
        items = 0
        for r, (s, b) in enumerate(zip(share, bus)):
            mw = "multiwriter" in s
            sb = b not in ("", "nosharing", "none")
            if (mw or sb) and rows[r] >= 0:
                j = int(rows[r])
                items += 1
                flagged[j] = True
                what = ", ".join(x for x in ("multi-writer" if mw else "", f"SCSI bus {bus_text[r]}" if sb else "") if x)
                detail[j] = (detail[j] + "; " if detail[j] else "") + what
        out.append(_check("shared_disk", label, "vDisk", ("VM", "Sharing mode", "Shared Bus"), "blocks", reason, n, flagged=flagged,
                          unknown=np.zeros(n, bool), detail=detail, items=items))

    # virtual hardware version ----------------------------------------------------------------------------
    label = f"virtual hardware below version {HCX_MIN_HW_VERSION}"
    reason = (f"HCX vMotion needs virtual hardware {HCX_MIN_HW_VERSION} or later; the upgrade needs a power cycle "
              "(a vMotion inside one vCenter does not)")
    vi = sheets["vinfo"]
    hc = vi.find(("hwversion",))
    hw = np.full(n, np.nan)
    tab, col = "vInfo", "HW version"
    if hc is not None:
        vals = vi.column(hc)
        hw = np.array([_hw_number(vals[int(i)]) for i in idx], dtype=float)
    else:
        sh, f, miss = _missing("vTools", sheets, {"version": ("vmversion",)})
        if not miss:
            rows, miss = per_vm(sh, "vTools")
        if not miss:
            tab, col = "vTools", "VM Version"
            vals = sh.column(f["version"])
            for r in np.flatnonzero(rows >= 0):
                hw[int(rows[r])] = _hw_number(vals[r])
    if hc is None and miss:
        out.append(_check("hw_version", label, "vInfo", ("HW version",), "blocks", reason, n,
                          "not in the export: column 'HW version' of tab vInfo (nor 'VM Version' of tab vTools)"))
    else:
        unknown = np.isnan(hw)
        flagged = ~unknown & (hw < HCX_MIN_HW_VERSION)
        detail = np.array(["" if np.isnan(x) else f"vmx-{int(x)}" for x in hw], dtype=object)
        out.append(_check("hw_version", label, tab, (col,), "blocks", reason, n, flagged=flagged, unknown=unknown, detail=detail,
                          items=int(flagged.sum())))

    # VMware Tools ----------------------------------------------------------------------------------------
    label, reason = "VMware Tools not running, not installed or old", (
        "a switchover that powers the VM off (bulk or cold migration) shuts the guest down through Tools; without "
        "them it is forced off; old Tools are upgraded at the move")
    sh, f, miss = _missing("vTools", sheets, {"tools": ("tools", "toolsstatus")})
    rows = None
    if not miss:
        rows, miss = per_vm(sh, "vTools")
    if miss:
        out.append(_check("tools", label, "vTools", ("Tools",), "slows", reason, n, miss))
    else:
        status = np.full(n, "", dtype=object)
        vals = sh.column(f["tools"])
        for r in np.flatnonzero(rows >= 0):
            status[int(rows[r])] = _text(vals[r])
        low = np.array([s.lower() for s in status], dtype=object)
        unknown = low == ""
        flagged = np.array([any(k in s for k in ("notinstalled", "notrunning", "old", "needupgrade")) for s in low], dtype=bool)
        out.append(_check("tools", label, "vTools", ("Tools",), "slows", reason, n, flagged=flagged, unknown=unknown, detail=status,
                          items=int(flagged.sum())))

    # CPU features: EVC baseline and vendor ---------------------------------------------------------------------
    label, reason = "no EVC baseline (host CPU features exposed)", (
        "the VM sees its host CPU's whole feature set: it moves live only to a CPU with every one of those features "
        "(same vendor, same or newer generation), else with a power cycle on the target")
    vh = sheets.get("vhost")
    host_evc: dict[str, str] = {}
    host_vendor: dict[str, str] = {}
    evc_col = None
    if _usable(vh):
        hcol = vh.find(("host", "name", "hostname"))
        evc_col = vh.find(("currentevc", "currentevcmode", "evcmode"))
        mcol = vh.find(("cpumodel",))
        if hcol is not None:
            hn = [_text(v) for v in vh.column(hcol)]
            if evc_col is not None:
                host_evc = dict(zip(hn, (_text(v) for v in vh.column(evc_col))))
            if mcol is not None:
                host_vendor = {h: _vendor(_text(m)) for h, m in zip(hn, vh.column(mcol))}
        else:
            evc_col = None
    kc = vi.find(("minrequiredevcmodekey", "minrequiredevcmode"))
    key_col = vi.column(kc) if kc is not None else None
    vm_key = [_text(key_col[int(i)]) if key_col is not None else "" for i in idx]
    vm_host = [hosts[int(i)] for i in idx]
    evc_mode = np.array([k or host_evc.get(h, "") for k, h in zip(vm_key, vm_host)], dtype=object)
    vendor = np.array([_vendor(k) or _vendor(host_evc.get(h, "")) or host_vendor.get(h, "") for k, h in zip(vm_key, vm_host)],
                      dtype=object)
    if evc_col is None:
        out.append(_check("cpu_baseline", label, "vHost", ("Current EVC",), "slows", reason, n,
                          "not in the export: column 'Current EVC' of tab vHost" if _usable(vh) else "not in the export: tab vHost"))
    else:
        unknown = np.array([h not in host_evc for h in vm_host], dtype=bool)
        flagged = np.array([(h in host_evc) and host_evc[h].lower() in ("", "none", "disabled") for h in vm_host], dtype=bool)
        detail = np.array([("host without EVC" + (f"; VM needs {k}" if k else "")) if fl else (host_evc.get(h, "") or "")
                           for fl, h, k in zip(flagged, vm_host, vm_key)], dtype=object)
        if unknown.any():
            notes.append(f"readiness: {int(unknown.sum()):,} VM(s) run on hosts not in vHost: their EVC baseline is unknown")
        out.append(_check("cpu_baseline", label, "vHost", ("Current EVC",) + (("min Required EVC Mode Key (vInfo)",) if kc is not None else ()),
                          "slows", reason, n, flagged=flagged, unknown=unknown, detail=detail, items=int(flagged.sum())))
    return Readiness(tuple(out), vendor, evc_mode, tuple(notes))
