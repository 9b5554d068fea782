"""Workload profiles from the catalog (section ``workload_profiles``, file ``workloads.yaml``), and its guest images.

The schema and the conversions to model inputs are in :mod:`densim.models.workload_profiles`;
this module reads profiles by name with one-line errors and fills the ``workload-profile``
registry that ``densim models`` lists.
"""

from __future__ import annotations

from pydantic import ValidationError

from densim.catalog.core import Catalog, CatalogError, builtin_catalog
from densim.errors import InputError
from densim.models.workload_profiles import PROFILES, RATE_FIELDS, SECTION, WorkloadProfile, expand_visit


def load_profile(name: str, catalog: Catalog | None = None) -> WorkloadProfile:
    """A profile by name (default: the built-in catalog); a bad or unknown entry is one line naming the field."""
    try:
        return (catalog or builtin_catalog()).get(SECTION, name, WorkloadProfile)
    except CatalogError as exc:
        raise InputError("catalog", f"{SECTION}.{name}", str(exc.args[0])) from None
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(x) for x in err["loc"])
        raise InputError("catalog", f"{SECTION}.{name}{'.' + loc if loc else ''}", err["msg"].removeprefix("Value error, ")) from None


def expand_tile_visit(entry: dict, catalog: Catalog | None = None) -> dict:
    """:func:`densim.models.workload_profiles.expand_visit` with profiles from ``catalog``."""
    return expand_visit(entry, lambda name: load_profile(name, catalog))


def register_builtin() -> None:
    """The built-in profiles into the ``workload-profile`` registry and the guest images (page sharing, a VM group's
    ``workload.guest_image``) into ``guest-image`` (idempotent)."""
    from densim.models.page_sharing import GUEST_IMAGES, GuestImageSharing

    cat = builtin_catalog()
    for p in cat.all(SECTION, WorkloadProfile):
        if p.name not in PROFILES:
            cited = sum(1 for f in RATE_FIELDS if not p.sources[f].lstrip().startswith(("(E)", "(R)")))
            PROFILES.add(p.name, p, description=p.description,
                         source=f"catalog {SECTION}: {cited} of {len(RATE_FIELDS)} figures cited, the rest (E)/(R)")
    for g in cat.all("guest_images", GuestImageSharing):
        if g.name not in GUEST_IMAGES:
            shares = (f"zero {g.zero_fraction:g}, self {g.self_fraction:g}, common to the image {g.shared_fraction:g}"
                      + (", each VM its own image" if g.unique else ""))
            GUEST_IMAGES.add(g.name, g, description=f"{g.description} ({shares})", source=f"catalog guest_images: {g.source}")


register_builtin()
