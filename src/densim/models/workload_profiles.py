"""Workload classes with measured rates (catalog section ``workload_profiles``).

A profile describes one class of guest workload (OLTP database, web/app, VDI, analytics/batch,
mail, file server, in-memory cache) by the rates the CPU, paging, I/O and memory models read:

* per request: instructions, disk I/Os (size, read share), network packets and bytes;
* per 1,000 instructions: LLC misses, TLB misses (4 KB translations), guest page-table writes and
  context switches (CR3 loads), with the core CPI they run at;
* memory: dirty-page rate per busy vCPU, working set as a share of configured memory, share of
  pages identical to pages of another VM of the same class.

Every rate carries its provenance in ``sources`` (one entry per figure): a citation, or a text
starting ``(E)`` (estimate) or ``(R)`` (recalled, not re-read). A figure without an entry is
refused, so a profile cannot quietly hold an unsourced number.

What each figure feeds (the arithmetic the tests check by hand):

* :meth:`WorkloadProfile.visit` -> :class:`densim.models.requests.Visit` of ``requests`` requests:
  ``instructions_m = requests x instructions_per_request / 1e6``, ``disk_ios = requests x
  ios_per_request``, ``packets``/``net_bytes`` likewise; the per-kinstr rates and CPI copied as
  they are (rates, not totals). :func:`densim.models.requests.visit_cycles` turns them into cycles.
* :meth:`WorkloadProfile.iops` / :meth:`io_bytes_per_s`: ``rate x ios_per_request`` and ``x io_size``.
* :meth:`WorkloadProfile.dirty_rate_bps`: ``dirty_rate_per_vcpu x busy vCPUs`` (pre-copy live
  migration, :func:`densim.models.migration.precopy`'s ``dirty_rate_bps``).
* :meth:`WorkloadProfile.active_bytes` / :meth:`identical_bytes`: share x configured memory
  (memory over-commit's active set; page sharing's candidate pages).
"""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from densim.registry import Registry
from densim.units import BytesPerSecond, PosBytes

# the figures a profile must source, one ``sources`` entry each
RATE_FIELDS = (
    "instructions_per_request", "cpi_core", "llc_mpki", "tlb_mpki_4k", "pt_updates_per_kinstr",
    "context_switches_per_kinstr", "ios_per_request", "io_size", "io_read_fraction", "packets_per_request",
    "net_bytes_per_request", "dirty_rate_per_vcpu", "working_set_fraction", "identical_page_share",
)


class WorkloadProfile(BaseModel):
    """One workload class's measured (or marked-estimate) rates."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid", populate_by_name=True)

    name: str
    description: str
    request: str = Field(description="what one request is (a transaction, a page view, one second of a desktop, ...)")
    instructions_per_request: float = Field(gt=0, description="guest instructions per request")
    cpi_core: float = Field(gt=0, description="core cycles per instruction without LLC, NUMA and page-walk stalls")
    llc_mpki: float = Field(ge=0, description="LLC misses to DRAM per 1,000 instructions")
    tlb_mpki_4k: float = Field(ge=0, description="TLB misses per 1,000 instructions with 4 KB translations")
    guest_large_fraction: float = Field(default=0.0, ge=0, le=1, description="share of TLB misses in memory the guest maps with 2 MB pages")
    pt_updates_per_kinstr: float = Field(ge=0, description="guest page-table writes per 1,000 instructions")
    context_switches_per_kinstr: float = Field(ge=0, description="guest context switches (CR3 loads) per 1,000 instructions")
    ios_per_request: float = Field(ge=0, description="disk I/Os per request")
    io_size_bytes: PosBytes = Field(alias="io_size", description="mean disk I/O size")
    io_read_fraction: float = Field(ge=0, le=1, description="share of disk I/Os that are reads")
    packets_per_request: float = Field(ge=0, description="network packets sent + received per request")
    net_bytes_per_request: float = Field(ge=0, description="network bytes per request")
    dirty_rate_per_vcpu: BytesPerSecond = Field(description="memory dirtied per second per fully busy vCPU")
    working_set_fraction: float = Field(ge=0, le=1, description="active share of configured memory")
    identical_page_share: float = Field(ge=0, le=1, description="share of pages identical to another VM's of this class")
    sources: dict[str, str] = Field(description="figure -> citation, or '(E) ...' / '(R) ...'")
    notes: str = ""

    @model_validator(mode="after")
    def _every_figure_sourced(self) -> "WorkloadProfile":
        for f in RATE_FIELDS:
            text = str(self.sources.get(f, "")).strip()
            if not text:
                raise ValueError(f"sources.{f} is missing: every figure needs a citation or an '(E)'/'(R)' mark")
        unknown = sorted(set(self.sources) - set(RATE_FIELDS) - {"guest_large_fraction"})
        if unknown:
            raise ValueError(f"sources.{unknown[0]} names no figure of a workload profile (figures: {', '.join(RATE_FIELDS)})")
        return self

    # --------------------------------------------------------------------------------- model inputs
    def visit(self, vm: str, requests: float = 1.0):
        """The :class:`~densim.models.requests.Visit` of ``requests`` requests of this class in VM ``vm``."""
        from densim.models.requests import Visit

        if not requests > 0:
            raise ValueError(f"workload profile {self.name!r}: requests per visit must be > 0, not {requests}")
        return Visit(
            vm=vm, instructions_m=requests * self.instructions_per_request / 1e6, cpi_core=self.cpi_core,
            llc_mpki=self.llc_mpki, tlb_mpki_4k=self.tlb_mpki_4k, guest_large_fraction=self.guest_large_fraction,
            pt_updates_per_kinstr=self.pt_updates_per_kinstr, context_switches_per_kinstr=self.context_switches_per_kinstr,
            disk_ios=requests * self.ios_per_request, disk_read_fraction=self.io_read_fraction,
            packets=requests * self.packets_per_request, net_bytes=requests * self.net_bytes_per_request,
        )

    def iops(self, requests_per_s):
        return np.asarray(requests_per_s, dtype=float) * self.ios_per_request

    def io_bytes_per_s(self, requests_per_s):
        return self.iops(requests_per_s) * float(self.io_size_bytes)

    def dirty_rate_bps(self, busy_vcpus):
        """Bytes dirtied per second by a VM with ``busy_vcpus`` vCPUs' worth of work (pre-copy migration input)."""
        return np.asarray(busy_vcpus, dtype=float) * float(self.dirty_rate_per_vcpu)

    def active_bytes(self, configured_bytes):
        return self.working_set_fraction * np.asarray(configured_bytes, dtype=float)

    def identical_bytes(self, configured_bytes):
        return self.identical_page_share * np.asarray(configured_bytes, dtype=float)


SECTION = "workload_profiles"
# filled from the catalog by densim.catalog.profiles.register_builtin (models do not read the catalog)
PROFILES: Registry[WorkloadProfile] = Registry("workload-profile")


def expand_visit(entry: dict, load) -> dict:
    """A tile visit entry with ``profile: <name>`` (and optional ``requests``) filled from the profile.

    ``load(name) -> WorkloadProfile`` finds the profile. Fields written in the entry win over the
    profile's (an explicit override); the result is a plain mapping for
    :class:`~densim.models.requests.Visit`. An entry without ``profile`` is returned as is.
    """
    if not isinstance(entry, dict) or "profile" not in entry:
        return entry
    rest = dict(entry)
    name = rest.pop("profile")
    requests = float(rest.pop("requests", 1.0))
    base = load(str(name)).visit(str(rest.get("vm", "")), requests).model_dump()
    return {**base, **rest}
