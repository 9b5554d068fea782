"""VM name patterns of a candidates file (``gpu.requests[].vms``, ``guest_images[].vms``, licences' ``vms``): globs
over the inventory's VM names."""

from __future__ import annotations

import fnmatch
import re

import numpy as np

from densim.errors import InputError


def vm_mask(names: np.ndarray, pattern: str, *, ignore_case: bool = False) -> np.ndarray:
    """The VMs whose names (or other per-VM text) match the glob ``pattern`` (bool per VM)."""
    if pattern == "*":
        return np.ones(names.shape[0], dtype=bool)
    rx = re.compile(fnmatch.translate(pattern), re.IGNORECASE if ignore_case else 0)
    return np.fromiter((rx.match(str(n)) is not None for n in names), dtype=bool, count=names.shape[0])


def rule_of_vm(names: np.ndarray, patterns: list[str], field: str, one: str, *, keys: list[str] | None = None,
               values: dict[str, np.ndarray] | None = None) -> np.ndarray:
    """Per VM the index of the rule (``field[i].vms`` = ``patterns[i]``) that matches it, -1 for none. A pattern
    that matches no VM, or a VM two patterns match, is an InputError naming ``field[i].vms`` (``one``: what a VM
    may have only one of, e.g. "one GPU request"). ``keys[i]`` names another per-VM text a rule matches instead of
    the name (e.g. ``"os"``: ``values["os"]``, matched ignoring case), and the field in the messages."""
    names = np.asarray(names, dtype=object)
    of = np.full(names.shape[0], -1, np.int64)
    for i, pattern in enumerate(patterns):
        key = "vms" if keys is None else keys[i]
        m = vm_mask(names, pattern) if key == "vms" else vm_mask(values[key], pattern, ignore_case=True)
        if not m.any():
            raise InputError(None, f"{field}[{i}].{key}", f"{pattern!r} matches no VM of the inventory"
                             + ("" if key == "vms" else f" (its {key} values include: "
                                + ", ".join(repr(v) for v in sorted(set(map(str, values[key])))[:5]) + ")"))
        both = m & (of >= 0)
        if both.any():
            j = int(np.flatnonzero(both)[0])
            raise InputError(None, f"{field}[{i}].{key}", f"VM {names[j]!s} is also matched by {field}[{of[j]}]: "
                             f"give each VM {one}")
        of[m] = i
    return of
