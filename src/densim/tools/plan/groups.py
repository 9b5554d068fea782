"""Move groups: VMs that belong together and move in one migration wave (:mod:`densim.tools.plan.waves`).

What the inventory shows ties VMs together; each key of ``waves.groups.by`` (in the candidates YAML) is one kind of
evidence, read from the tags the RVTools reader carries (:data:`densim.workloads.readers.rvtools.GROUP_COLUMNS`):

* ``vapp``, ``folder``, ``resource_pool``, ``annotation``, ``cluster_rule`` (vInfo 'Cluster rule name(s)': DRS
  rules): VMs with the same non-blank value;
* ``network``: VMs on the same port group (vInfo 'Network #1..8', vNetwork 'Network');
* ``attr:<header>``: a vCenter custom attribute column of vInfo (e.g. ``attr:Application``);
* ``name:<regex>``: VMs whose names give the same match (the first capture group when the pattern has one,
  else the whole match): ``name:^([a-z]+)-`` ties ``shop-web1`` and ``shop-db1``.

Every shared value ties its VMs; the groups are the connected components (a VM tied to two others by two keys
joins both into one group): :func:`scipy.sparse.csgraph.connected_components` on the VM-value graph. A value
shared by more than ``max_shared`` VMs ties nothing: a port group or a top folder that most VMs share says
they share infrastructure, not an application; such values are listed (``ignored``), never dropped silently.
A VM tied to nothing is a group of its own.

A groups file (``--groups FILE`` or ``waves.groups.file``: CSV with the header ``vm,group``, one row per VM)
overrides: its VMs take the file's group and are left out of the inference; the other VMs are grouped as above.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from densim.errors import InputError

TAG_KEYS = {"vapp": "vapp", "folder": "folder", "resource_pool": "resource_pool", "annotation": "annotation",
            "cluster_rule": "cluster_rule", "network": "networks"}
DEFAULT_BY = ("vapp", "cluster_rule", "network")
DEFAULT_MAX_SHARED = 50


@dataclass
class Groups:
    """Per VM its group index; per group its name and what tied it."""

    group_of: np.ndarray  # (N,) int64 index into names
    names: list[str]
    source: list[str]  # per group: "file", "vapp", "network", ... (the evidence of its first tie) or "alone"
    used: list[str] = field(default_factory=list)  # keys that tied some VMs
    missing: list[str] = field(default_factory=list)  # keys asked for but not in the inventory
    ignored: list[dict] = field(default_factory=list)  # values shared by more than max_shared VMs
    from_file: int = 0  # VMs grouped by the file

    @property
    def n(self) -> int:
        return len(self.names)

    def summary(self) -> dict:
        sizes = np.bincount(self.group_of, minlength=self.n)
        by_source: dict[str, int] = {}
        for s in self.source:
            by_source[s] = by_source.get(s, 0) + 1
        return {"groups": self.n, "largest": int(sizes.max(initial=0)), "alone": int((sizes == 1).sum()),
                "by_source": by_source, "keys_used": self.used, "keys_missing": self.missing,
                "ignored_shared_values": self.ignored[:20], "ignored_shared_values_total": len(self.ignored),
                "vms_from_file": self.from_file}


def read_groups_file(path: str | Path, names: list[str]) -> dict[int, str]:
    """``{VM index: group}`` from a CSV ``vm,group`` file; every bad row is a one-line error naming file and row."""
    path = Path(path)
    if not path.is_file():
        raise InputError(path, "", "groups file not found" if not path.exists() else "not a file")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (UnicodeDecodeError, OSError) as exc:
        raise InputError(path, "", f"not a readable UTF-8 text file ({type(exc).__name__})") from None
    rows = list(csv.reader(text.splitlines()))
    if not rows:
        raise InputError(path, "row 1", "empty file: expected the header 'vm,group'")
    head = [h.strip().lower() for h in rows[0]]
    if head != ["vm", "group"]:
        raise InputError(path, "row 1", f"header must be 'vm,group', got {','.join(rows[0])[:60]!r}")
    index = {n: i for i, n in enumerate(names)}
    out: dict[int, str] = {}
    first_row: dict[int, int] = {}
    for r, row in enumerate(rows[1:], start=2):
        if not any(c.strip() for c in row):
            continue
        if len(row) != 2:
            raise InputError(path, f"row {r}", f"{len(row)} fields where the header has 2 (vm,group)")
        vm, grp = row[0].strip(), row[1].strip()
        if not vm:
            raise InputError(path, f"row {r}, column 'vm'", "VM name is blank")
        if not grp:
            raise InputError(path, f"row {r}, column 'group'", f"group of VM {vm!r} is blank")
        if vm not in index:
            raise InputError(path, f"row {r}, column 'vm'", f"VM {vm!r} is not a planned VM of the inventory (not in it, "
                                                            "or powered off, or a template)")
        i = index[vm]
        if i in out and out[i] != grp:
            raise InputError(path, f"row {r}, column 'group'", f"VM {vm!r} is in group {grp!r} here but in {out[i]!r} in "
                                                               f"row {first_row[i]}: which one?")
        out[i] = grp
        first_row.setdefault(i, r)
    return out


def _values(inv, key: str, where: str) -> np.ndarray | None:
    """The per-VM text a key ties by ('' = no tie); None when the inventory does not have it."""
    names = np.asarray(inv.names, dtype=object)
    if key.startswith("name:"):
        try:
            pat = re.compile(key[5:])
        except re.error as exc:
            raise InputError(None, where, f"bad regular expression {key[5:]!r}: {exc}") from None
        out = np.empty(names.size, dtype=object)
        for i, n in enumerate(names):
            m = pat.search(str(n))
            out[i] = "" if m is None else (m.group(1) or "" if pat.groups else m.group(0))
        return out
    if key.startswith("attr:"):
        tag = f"attr:{key[5:]}"
        return np.asarray(inv.tags[tag], dtype=object) if tag in inv.tags else None
    if key not in TAG_KEYS:
        raise InputError(None, where, f"unknown grouping key {key!r}; valid: {', '.join(TAG_KEYS)}, attr:<vInfo column>, "
                                      "name:<regular expression>")
    tag = TAG_KEYS[key]
    return np.asarray(inv.tags[tag], dtype=object) if tag in inv.tags else None


def infer_groups(inv, by=DEFAULT_BY, max_shared: int = DEFAULT_MAX_SHARED, file: str | Path | None = None) -> Groups:
    """The move groups of ``inv`` (see the module docstring)."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    names = [str(n) for n in inv.names]
    n = len(names)
    fixed = read_groups_file(file, names) if file is not None else {}
    free = np.ones(n, dtype=bool)
    if fixed:
        free[np.fromiter(fixed.keys(), dtype=np.int64)] = False
    rows, cols, labels, label_src = [], [], [], []
    used, missing, ignored = [], [], []
    for k, key in enumerate(by):
        vals = _values(inv, key, f"waves.groups.by[{k}]")
        if vals is None:
            missing.append(key)
            continue
        vm_idx, val = [], []
        for i in range(n):  # every VM counts towards how widely a value is shared; only VMs not in the file are tied
            v = str(vals[i])
            parts = [p for p in v.split(";") if p] if key == "network" else ([v] if v else [])
            vm_idx += [i] * len(parts)
            val += parts
        if not val:
            continue
        vm_idx = np.asarray(vm_idx, dtype=np.int64)
        uniq, inverse, counts = np.unique(np.asarray(val, dtype=object).astype(str), return_inverse=True, return_counts=True)
        on_free = free[vm_idx]
        vm_idx, inverse = vm_idx[on_free], inverse[on_free]
        free_counts = np.bincount(inverse, minlength=uniq.size)
        keep = (free_counts >= 2) & (counts <= max_shared)
        for u, c in zip(uniq[counts > max_shared], counts[counts > max_shared]):
            ignored.append({"key": key, "value": str(u), "vms": int(c)})
        if not keep.any():
            continue
        used.append(key)
        base = n + len(labels)
        new_id = np.full(uniq.size, -1)
        new_id[keep] = base + np.arange(int(keep.sum()))
        labels += [f"{key}={u}" for u in uniq[keep]]
        label_src += [key.split(":")[0] if key.startswith(("attr:", "name:")) else key] * int(keep.sum())
        e = new_id[inverse]
        ok = e >= 0
        rows += list(vm_idx[ok])
        cols += list(e[ok])
    m = n + len(labels)
    g = coo_matrix((np.ones(len(rows)), (np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64))), shape=(m, m))
    _, comp = connected_components(g, directed=False)
    # name each component by its first value (in key order) or, alone, by its VM
    first_label = np.full(m, np.iinfo(np.int64).max)
    np.minimum.at(first_label, comp[n:], np.arange(n, m))
    group_names: list[str] = []
    sources: list[str] = []
    gid: dict = {}
    group_of = np.empty(n, dtype=np.int64)
    for i in range(n):  # one pass to number groups in VM order (the file's groups by name)
        if i in fixed:
            key = ("file", fixed[i])
            name, src = fixed[i], "file"
        else:
            c = comp[i]
            lab = first_label[c]
            if lab < m:
                key, name, src = ("c", c), labels[lab - n], label_src[lab - n]
            else:
                key, name, src = ("c", c), names[i], "alone"
        if key not in gid:
            gid[key] = len(group_names)
            group_names.append(name)
            sources.append(src)
        group_of[i] = gid[key]
    # a name given twice (a file group named like an inferred one): keep them apart, say so in the name
    seen: dict[str, int] = {}
    for j, nm in enumerate(group_names):
        if nm in seen:
            group_names[j] = f"{nm} ({sources[j]})"
        seen[nm] = j
    return Groups(group_of, group_names, sources, used, missing, ignored, len(fixed))
