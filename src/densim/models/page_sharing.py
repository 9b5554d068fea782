"""Content-based page sharing that depends on what is shared (issue 30 item 5).

One host runs groups of VMs; group ``i`` holds ``n_i`` VMs of configured memory ``m_i`` booted from
one guest image (same OS build, same applications). Per image, as shares of a VM's memory:

* ``z_i``  zero pages (all collapse to one host page, so every one is freed),
* ``s_i``  pages duplicated *inside* one VM (self-sharing, freed even with one VM of the image),
* ``f_i``  pages identical in every VM of the image (OS and application code, read-only data).

Only memory backed by 4 KiB host pages is shared. A share ``L_i`` of the VM backed by 2 MiB host
pages shares nothing until the hypervisor breaks the large pages up, which ESX does only when it
must reclaim (host swapping); with ``large_pages_broken`` every page counts again::

    e_i   = 1                       if large_pages_broken else 1 - L_i     (4 KiB-backed share)
    c_i   = min(n_i, K)             copies of an image page left (K: NUMA nodes; ESXi shares per node)
    Z_i   = n_i m_i z_i e_i         zero pages freed
    S_i   = n_i m_i s_i e_i         self-shared pages freed
    I_i   = (n_i - c_i) m_i f_i e_i inter-VM pages freed ("(n - 1)/n of the image's shareable part")
          = 0                       when inter-VM sharing is off (ESXi >= 6.0 default: salting)
    freed = sum_i (Z_i + S_i + I_i),        share = freed / sum_i n_i m_i

With one NUMA node and every page small this is ``sum_i n_i m_i (z_i + s_i) + (n_i - 1) m_i f_i``:
the per-VM saving of an image grows as ``(n_i - 1)/n_i`` towards ``f_i``, so 24 VMs of one image
free about 23/24 of ``f`` and 24 VMs of 24 images free none of it (only zero and self-shared pages).

Sources: C. Waldspurger, "Memory Resource Management in VMware ESX Server", OSDI 2002 (content-based
sharing; the zero page "typically shared with a large reference count",
https://static.usenix.org/events/osdi02/tech/waldspurger/waldspurger_html/node11.html); VMware
KB 1021095, "Transparent Page Sharing (TPS) in hardware MMU systems" ("ESX will not share large
physical pages"; a large page is broken into small ones when the host swaps, and its small pages are
then shared from pre-computed hashes, https://knowledge.broadcom.com/external/article?legacyId=1021095);
vSphere 6.0 Resource Management, "Memory Sharing" (inter-VM sharing off by default, salting,
http://pubs.vmware.com/vsphere-60/topic/com.vmware.vsphere.resmgmt.doc/GUID-F9111E35-E197-46EC-8350-77827A5A2DEC.html);
vSphere 6.5 Resource Management, "Memory Sharing" (on NUMA systems pages are shared per node,
https://docs.vmware.com/en/VMware-vSphere/6.5/com.vmware.vsphere.resmgmt.doc/GUID-6D818472-D683-410F-84C3-0C56C21F4459.html);
S. Barker et al., "An Empirical Study of Memory Sharing in Virtual Machines", USENIX ATC 2012
(sharing within a machine is > 90 % of the potential; inter-machine sharing small,
https://usenix.org/conference/atc12/technical-sessions/presentation/barker).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SharingResult:
    """Bytes freed on one host, per image group (arrays) and in total."""

    zero_bytes: np.ndarray
    self_bytes: np.ndarray
    inter_vm_bytes: np.ndarray
    configured_bytes: float

    @property
    def freed_bytes(self) -> float:
        return float(self.zero_bytes.sum() + self.self_bytes.sum() + self.inter_vm_bytes.sum())

    @property
    def freed_share(self) -> float:
        """Freed bytes over the configured guest memory of the host's VMs (0 with no VMs)."""
        return self.freed_bytes / self.configured_bytes if self.configured_bytes > 0 else 0.0

    @property
    def intra_share_of_freed(self) -> float:
        """Share of the freed non-zero bytes freed inside single VMs (Barker et al.'s intra-machine share)."""
        nonzero = float(self.self_bytes.sum() + self.inter_vm_bytes.sum())
        return float(self.self_bytes.sum()) / nonzero if nonzero > 0 else 1.0


def _arr(name: str, value, shape) -> np.ndarray:
    a = np.broadcast_to(np.asarray(value, dtype=float), shape)
    if not np.all(np.isfinite(a)):
        raise ValueError(f"page sharing: {name} must be finite")
    return a


def image_sharing(vms_per_image, vm_bytes, *, shared_fraction, zero_fraction, self_fraction=0.0,
                  large_page_fraction=0.0, large_pages_broken: bool = False, inter_vm: bool = True,
                  numa_nodes: int = 1) -> SharingResult:
    """Memory freed by page sharing on one host from its image mix (module docstring's equations).

    Every argument but the switches broadcasts over image groups: ``vms_per_image`` (n_i, VMs of
    the image on this host), ``vm_bytes`` (m_i), ``shared_fraction`` (f_i), ``zero_fraction``
    (z_i), ``self_fraction`` (s_i), ``large_page_fraction`` (L_i). ``numa_nodes``: the host's NUMA
    nodes K (ESXi keeps one copy of a shared page per node; VMs of an image taken as spread over
    all nodes, the worst case). Raises ``ValueError`` on a negative count, fractions outside [0, 1]
    or ``z + s + f > 1`` (more than all of a VM's memory).
    """
    n = np.atleast_1d(np.asarray(vms_per_image, dtype=float))
    shape = np.broadcast_shapes(n.shape, np.shape(vm_bytes), np.shape(shared_fraction), np.shape(zero_fraction),
                                np.shape(self_fraction), np.shape(large_page_fraction))
    n = _arr("vms_per_image", n, shape)
    m = _arr("vm_bytes", vm_bytes, shape)
    f = _arr("shared_fraction", shared_fraction, shape)
    z = _arr("zero_fraction", zero_fraction, shape)
    s = _arr("self_fraction", self_fraction, shape)
    big = _arr("large_page_fraction", large_page_fraction, shape)
    if np.any(n < 0) or np.any(n != np.floor(n)):
        raise ValueError("page sharing: vms_per_image must be whole numbers >= 0")
    if np.any(m < 0):
        raise ValueError("page sharing: vm_bytes must be >= 0")
    for name, a in (("shared_fraction", f), ("zero_fraction", z), ("self_fraction", s),
                    ("large_page_fraction", big)):
        if np.any((a < 0) | (a > 1)):
            raise ValueError(f"page sharing: {name} must lie in [0, 1]")
    if np.any(z + s + f > 1 + 1e-12):
        raise ValueError("page sharing: zero_fraction + self_fraction + shared_fraction exceeds 1 (all of a VM's memory)")
    if int(numa_nodes) < 1:
        raise ValueError(f"page sharing: numa_nodes must be >= 1, got {numa_nodes}")
    small = np.ones(shape) if large_pages_broken else 1.0 - big
    copies = np.minimum(n, float(numa_nodes))
    zero = n * m * z * small
    self_ = n * m * s * small
    inter = (n - copies) * m * f * small if inter_vm else np.zeros(shape)
    return SharingResult(zero_bytes=zero, self_bytes=self_, inter_vm_bytes=inter, configured_bytes=float((n * m).sum()))


def element_fractions(image, configured, active, segment, numa_nodes, *, zero_self, shared, unique, inter_vm: bool,
                      zero_default: float, inter_default: float) -> tuple[np.ndarray, np.ndarray]:
    """The reclamation kernel's two sharing fractions per element (a VM in one host-step segment) from the guest
    images, :func:`image_sharing`'s terms in the kernel's form (:func:`densim.models.memory.reclaim`).

    ``image`` (E,) index into the per-image arrays ``zero_self`` (z + s), ``shared`` (f) and ``unique``, -1 for a
    VM naming no image; ``configured``/``active`` (E,) bytes (0 configured: not alive, not counted); ``segment``
    (E,) its host-step; ``numa_nodes`` (E,) its host's NUMA nodes K. For a VM of image ``i``, ``n_i`` VMs of that
    image in its segment (1 for a ``unique`` image) and ``c_i = min(n_i, K)`` copies kept::

        zero fraction  = min(1, (z_i + s_i) m / idle)      (the kernel takes it from idle memory: (z_i + s_i) m)
        inter-VM       = f_i (n_i - c_i) / n_i              (of all its memory; 0 with inter_vm off)

    Large pages count as broken up (the kernel runs only on hosts short of memory, where ESX breaks them). VMs
    naming no image get ``zero_default`` and ``inter_default``."""
    image = np.asarray(image, dtype=np.int64)
    zf = np.full(image.size, float(zero_default))
    isf = np.full(image.size, float(inter_default))
    on = np.flatnonzero((image >= 0) & (np.asarray(configured) > 0))
    if on.size == 0:
        return zf, isf
    img = image[on]
    cfg = np.asarray(configured, dtype=float)[on]
    idle = cfg - np.asarray(active, dtype=float)[on]
    key = np.asarray(segment, dtype=np.int64)[on] * len(shared) + img
    _, inv, cnt = np.unique(key, return_inverse=True, return_counts=True)
    n_i = np.where(np.asarray(unique, dtype=bool)[img], 1.0, cnt[inv].astype(float))
    zf[on] = np.divide(np.asarray(zero_self)[img] * cfg, idle, out=np.zeros(on.size), where=idle > 0).clip(0.0, 1.0)
    if inter_vm:
        copies = np.minimum(n_i, np.asarray(numa_nodes, dtype=float)[on])
        isf[on] = np.asarray(shared)[img] * (n_i - copies) / n_i
    else:
        isf[on] = 0.0
    return zf, isf


from pydantic import BaseModel, ConfigDict, Field  # noqa: E402

from densim.registry import Registry  # noqa: E402


class GuestImageSharing(BaseModel):
    """Catalog ``guest_images``: one guest image's sharing content (shares of a VM's memory)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    description: str = ""
    zero_fraction: float = Field(ge=0.0, le=1.0, description="z: zero pages")
    self_fraction: float = Field(ge=0.0, le=1.0, description="s: pages duplicated inside one VM")
    shared_fraction: float = Field(ge=0.0, le=1.0, description="f: pages identical in every VM of the image")
    unique: bool = Field(default=False, description="each VM naming it is an image of its own (a class of images no "
                                                    "two VMs share): the engine counts one VM per image")
    source: str
    notes: str = ""

    def model_post_init(self, __context) -> None:
        if self.zero_fraction + self.self_fraction + self.shared_fraction > 1.0 + 1e-12:
            raise ValueError(f"guest image {self.name!r}: zero_fraction + self_fraction + shared_fraction exceeds 1")


#: the catalog's guest images (``guest_images``), filled by :mod:`densim.catalog.profiles`; ``densim models`` lists them
GUEST_IMAGES: Registry[GuestImageSharing] = Registry("guest-image")
