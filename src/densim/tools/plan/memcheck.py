"""The memory check's answer for one placement (:func:`densim.tools.plan.qos.memory_check`, and the tiered
check of :mod:`densim.tools.plan.tiering`): its own module so the two do not import each other."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class PlanImages:
    """The plan's guest images (``guest_images``): per VM the index into the images (-1: none) and per image the
    shares :func:`densim.models.page_sharing.element_fractions` takes."""

    of_vm: np.ndarray
    names: list[str]
    zero_self: np.ndarray
    shared: np.ndarray
    unique: np.ndarray

    def fractions(self, idx, steps: int, cfg, act, seg, sockets: int, settings, params):
        """Per element of a block (``steps`` x the VMs ``idx``) the zero and inter-VM sharing fractions."""
        from densim.models.page_sharing import element_fractions

        return element_fractions(np.tile(self.of_vm[idx], steps), np.tile(cfg, steps), np.asarray(act, float).ravel(),
                                 seg, np.full(steps * idx.size, float(max(sockets, 1))), zero_self=self.zero_self,
                                 shared=self.shared, unique=self.unique, inter_vm=settings.inter_vm_sharing,
                                 zero_default=params.zero_page_fraction, inter_default=params.inter_vm_sharing_fraction)


def plan_images(spec, names: np.ndarray, catalog, tags: dict | None = None) -> PlanImages | None:
    """The VMs' guest images from ``spec.guest_images`` (None without), each rule matching VM names (``vms``) or the
    guest OS the inventory gives (``os``: the tag ``tags["os"]``, RVTools only); an unknown image, a pattern that
    matches no VM, a VM two patterns match, or ``os`` on an inventory without a guest OS, is one line naming the
    field."""
    if not spec.guest_images:
        return None
    from densim.catalog.core import CatalogError
    from densim.errors import InputError
    from densim.models.page_sharing import GuestImageSharing
    from densim.tools.plan.patterns import rule_of_vm

    keys = ["os" if r.os is not None else "vms" for r in spec.guest_images]
    os_of = (tags or {}).get("os")
    if "os" in keys and os_of is None:
        i = keys.index("os")
        raise InputError(None, f"guest_images[{i}].os", "the inventory gives no guest OS (an RVTools export's vInfo 'OS "
                                                        "according to the configuration file' does): match the VMs by name "
                                                        "(vms) instead")
    rule_of = rule_of_vm(names, [r.os if r.os is not None else r.vms for r in spec.guest_images], "guest_images",
                         "one image", keys=keys, values={"os": None if os_of is None else np.asarray(os_of, dtype=object)})
    of_vm = np.full(rule_of.shape[0], -1, np.int64)
    images: dict[str, GuestImageSharing] = {}
    for i, r in enumerate(spec.guest_images):
        try:
            img = catalog.get("guest_images", r.image, GuestImageSharing)
        except CatalogError as exc:
            raise InputError(None, f"guest_images[{i}].image", str(exc.args[0]).strip("'\"")) from None
        k = list(images).index(img.name) if img.name in images else len(images)
        images.setdefault(img.name, img)
        of_vm[rule_of == i] = k
    imgs = list(images.values())
    return PlanImages(of_vm, [g.name for g in imgs], np.array([g.zero_fraction + g.self_fraction for g in imgs]),
                      np.array([g.shared_fraction for g in imgs]), np.array([g.unique for g in imgs], dtype=bool))


@dataclass
class MemoryCheck:
    slowdown_worst: np.ndarray  # (H,) worst VM's slowdown over all steps (1 = none)
    vm_slowdown_max: np.ndarray  # (N,)
    hosts_short: int  # hosts whose configured memory exceeds what the memory model can give VMs
    swapped_gib_peak: np.ndarray  # (H,) peak host swap in use


def step_blocks(idx, cfg, hosts, cap_vm, cpu_mhz, mem_used_bytes, active_fraction: float, n_hosts: int,
                block_elements: int):
    """The memory checks' blocks of steps over the VMs ``idx`` (those on hosts short of memory): per block of at
    most ``block_elements`` (step, VM) cells, ``(steps, act, util, seg)``: each VM's active bytes (the measured
    memory in use capped at its configured ``cfg``, else ``active_fraction`` x ``cfg``), its CPU utilisation
    (demand / capacity ``cap_vm``, clipped to [0, 1]) and the host segments of the block's cells (``hosts``: each
    VM's host)."""
    from densim.models import memory as M

    k = idx.size
    block = max(1, block_elements // k)
    t_total = cpu_mhz.shape[0]
    for t0 in range(0, t_total, block):
        t1 = min(t_total, t0 + block)
        steps = t1 - t0
        if mem_used_bytes is not None:
            act = np.minimum(mem_used_bytes[t0:t1][:, idx].astype(float), cfg[None, :])
        else:
            act = np.broadcast_to(active_fraction * cfg, (steps, k))
        util = np.clip(cpu_mhz[t0:t1][:, idx] / cap_vm[None, :], 0.0, 1.0)
        yield steps, act, util, M.segments(hosts, n_hosts, steps)
