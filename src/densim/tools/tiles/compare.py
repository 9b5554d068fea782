"""Side-by-side comparison of two tile benchmark results.

A result file is checked twice before it is compared: against the published JSON schema
(``tiles.schema.json``: the document's shape) and then, strictly, against :class:`TileResult`, which
types every leaf: the embedded server, CPU, platform, virtualization, run and tile are validated
by the same pydantic models ``densim bench tiles`` dumped them from, and the result figures must
be finite numbers in range. JSON numbers must be numbers (strict: ``"12"`` is not an integer, a
unit string such as ``"1e400 GiB"`` is not a vCPU count). Every problem is one line naming the file
and the field path.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from densim.errors import InputError, ScenarioInvalid
from densim.models.hardware import CpuSpec, ServerSpec
from densim.models.virtualization import PlatformSpec
from densim.spec.scenario import MAX_SEED
from densim.spec.tiles import RunSpec
from densim.spec.virtualization import VirtualizationSettings
from densim.tools.tiles.core import SCHEMA_ID, TileSpec

# extra keys are ignored (the published schema allows them); every number must be finite
_CFG = ConfigDict(defer_build=True, allow_inf_nan=False, frozen=True, extra="ignore")


class StoragePart(BaseModel):
    model_config = _CFG
    device: str
    count: int = Field(ge=1)


class HostPart(BaseModel):
    model_config = _CFG
    name: str
    server: ServerSpec
    cpu: CpuSpec
    platform: PlatformSpec
    storage: StoragePart
    nic_gbps: float = Field(gt=0)


class ConfigurationPart(BaseModel):
    model_config = _CFG
    virtualization: VirtualizationSettings
    run: RunSpec
    tile: TileSpec


class WorkloadPart(BaseModel):
    model_config = _CFG
    name: str
    qos_bound_s: float = Field(gt=0)
    qos_share: float = Field(gt=0, lt=1)
    p_response_s: float | None = Field(ge=0)
    qos_margin: float | None
    throughput_per_s: float = Field(ge=0)
    normalised_throughput: float = Field(ge=0)

    @model_validator(mode="after")
    def _both_or_neither(self) -> "WorkloadPart":
        if (self.p_response_s is None) != (self.qos_margin is None):
            raise ValueError("p_response_s and qos_margin are both numbers (a run was measured) or both null")
        return self


class ResultPart(BaseModel):
    model_config = _CFG
    tiles: int = Field(ge=0)
    tiles_fractional: float = Field(ge=0)
    vms: int = Field(ge=0)
    score: float = Field(ge=0)
    limiting_workload: str | None
    workloads: list[WorkloadPart] = Field(min_length=1)
    node_utilisation: list[list[float]] = Field(default_factory=list)
    mean_clock_mhz: float | None = Field(default=None, gt=0)
    cpu_package_power_w: float = Field(default=0.0, ge=0)
    numa_moves: int = Field(default=0, ge=0)

    @model_validator(mode="after")
    def _partial_tile(self) -> "ResultPart":
        if not self.tiles <= self.tiles_fractional < self.tiles + 1:
            raise ValueError(f"tiles_fractional ({self.tiles_fractional:g}) must lie in [tiles, tiles + 1) "
                             f"(tiles = {self.tiles})")
        return self


class TileResult(BaseModel):
    """A ``densim bench tiles`` result document, every leaf typed (validated with ``strict=True``)."""

    model_config = _CFG
    schema_id: Literal[SCHEMA_ID] = Field(alias="schema")  # type: ignore[valid-type]
    densim_version: str = Field(min_length=1)
    seed: int = Field(ge=0, le=MAX_SEED)
    host: HostPart
    configuration: ConfigurationPart
    result: ResultPart


def load_result(path: str | Path) -> dict[str, Any]:
    """Read a result file and check it against the published schema and :class:`TileResult`; one-line
    error naming the file and the field path otherwise. Returns the validated document."""
    from densim.spec.loader import format_loc, validation_issues
    from densim.textio import parse_json, read_text_file

    p = Path(path)
    doc = parse_json(read_text_file(p, "tile benchmark result"), p)
    try:
        import jsonschema

        from densim.tools.tiles.core import schema

        jsonschema.validate(doc, schema())
    except ImportError:  # pragma: no cover
        if not isinstance(doc, dict) or doc.get("schema") != SCHEMA_ID:
            raise InputError(p, "schema", "not a densim tile benchmark result") from None
    except Exception as exc:  # jsonschema.ValidationError
        where = format_loc(tuple(getattr(exc, "absolute_path", ()))) or "(top)"
        raise InputError(p, where, f"does not match the tile result schema: {getattr(exc, 'message', exc)}") from None
    try:
        res = TileResult.model_validate(doc, strict=True)
    except ValidationError as exc:
        issues = []
        for (where, problem), err in zip(validation_issues(exc), exc.errors()):
            if err.get("type", "").endswith(("_type", "_parsing")):  # a wrongly typed leaf: show what is there
                problem += f", got {json.dumps(err.get('input'), default=str)[:60]}"
            issues.append((where, problem))
        raise ScenarioInvalid(p, issues) from None
    return res.model_dump(mode="json", by_alias=True)


def comparison_rows(a: dict[str, Any], b: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(label, A, B) rows: hardware, configuration, result and per-workload QoS margins."""

    def hw(d: dict[str, Any]) -> dict[str, str]:
        h = d["host"]
        cpu = h["cpu"]
        sockets = h["server"]["cpu"]["sockets"]
        return {
            "host": h["name"],
            "server": h["server"]["name"],
            "cpu": f"{sockets} x {cpu['name']} ({cpu['cores']} cores, {cpu['base_clock'] / 1000:.2f} GHz)",
            "memory": f"{h['server']['memory'] / 1024**3:.0f} GiB",
            "storage": f"{h['storage']['count']} x {h['storage']['device']}",
        }

    def cfg(d: dict[str, Any]) -> dict[str, str]:
        v = d["configuration"]["virtualization"]
        hv = v["hypervisor"]
        return {
            "paging": hv["paging"],
            "host hugepages": "yes" if hv["host_hugepages"] else "no",
            "network path": hv["network"],
            "NUMA policy": v["numa"]["policy"],
            "turbo / gating / SMT": "/".join("on" if v["power"][k] else "off" for k in ("turbo", "power_gating", "smt")),
            "densim version": d["densim_version"],
            "seed": str(d["seed"]),
        }

    rows: list[tuple[str, str, str]] = []
    for fn in (hw, cfg):
        da, db = fn(a), fn(b)
        rows += [(k, da[k], db[k]) for k in da]
    ra, rb = a["result"], b["result"]
    rows.append(("tiles", str(ra["tiles"]), str(rb["tiles"])))
    rows.append(("tiles (with partial)", f"{ra['tiles_fractional']:.2f}", f"{rb['tiles_fractional']:.2f}"))
    rows.append(("VMs", str(ra["vms"]), str(rb["vms"])))
    ratio = rb["score"] / ra["score"] if ra["score"] else float("nan")
    rows.append(("score", f"{ra['score']:.2f}", f"{rb['score']:.2f} ({ratio:.3f}x)"))
    rows.append(("limiting workload", str(ra["limiting_workload"]), str(rb["limiting_workload"])))
    wa = {w["name"]: w for w in ra["workloads"]}
    wb = {w["name"]: w for w in rb["workloads"]}
    for name in list(dict.fromkeys([*wa, *wb])):
        def m(w: dict[str, Any] | None) -> str:
            if w is None or w["qos_margin"] is None:
                return "-"
            return f"{w['qos_margin'] * 100:+.1f} % (p{w['qos_share'] * 100:g} {w['p_response_s'] * 1000:.0f} ms <= {w['qos_bound_s'] * 1000:.0f} ms)"
        rows.append((f"QoS margin {name}", m(wa.get(name)), m(wb.get(name))))
    return rows


def format_comparison(a: dict[str, Any], b: dict[str, Any], name_a: str = "A", name_b: str = "B") -> str:
    rows = comparison_rows(a, b)
    w0 = max(len(r[0]) for r in rows + [("", "", "")])
    w1 = max(len(r[1]) for r in rows + [(name_a, name_a, name_a)])
    lines = [f"{'':<{w0}}  {name_a:<{w1}}  {name_b}"]
    lines += [f"{lab:<{w0}}  {va:<{w1}}  {vb}" for lab, va, vb in rows]
    return "\n".join(lines)
