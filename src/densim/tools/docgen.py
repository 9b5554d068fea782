"""Generate the reference pages from code: scenario and plan-file schemas, output columns, model registries,
and the unit convention of every input format.

    python -m densim.tools.docgen docs/reference
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from densim.atomic import write_text_atomic


def _registries_md() -> str:
    import densim.catalog.profiles  # noqa: F401  (catalog workload profiles)
    import densim.engine.stages as stages
    import densim.models.cpu  # noqa: F401
    import densim.models.memory  # noqa: F401  (miss-ratio models)
    import densim.models.power  # noqa: F401
    import densim.placement  # noqa: F401
    import densim.placement.prefabs  # noqa: F401  (placement filters, weighers and prefab policies)
    import densim.tools.sweep.runners  # noqa: F401  (sweep runners)
    import densim.workloads.readers  # noqa: F401
    from densim.registry import Registry

    stages.load_plugins()
    lines = ["# Model registry", "", "Generated from code by `make docs`; do not edit.", "",
             "Every model, policy and reader is chosen by name. `densim models` prints this table.", ""]
    for kind, reg in sorted(Registry.all().items()):
        lines += [f"## {kind}", "", f"Default: `{reg.default}`" if reg.default else "No default.", "", "| name | description | source |", "|---|---|---|"]
        for e in reg:
            if e.source.startswith("entry point "):
                continue  # installed plug-ins are not densim's own reference
            lines.append(f"| `{e.name}` | {e.description} | {e.source} |")
        lines.append("")
    return "\n".join(lines)


def _outputs_md() -> str:
    from densim.engine.result import (GPU_VM_COLUMNS, HOST_COLUMNS, HOST_STEP_COLUMNS, SCHEDULE_STEP_COLUMNS,
                                      SCHEDULE_VM_COLUMNS, VM_COLUMNS)

    lines = ["# Output columns", "", "Generated from code by `make docs`; do not edit.", "",
             "`densim run` writes `summary.json`, `vms.parquet`, `hosts.parquet`, `host_steps.parquet` and, for runs "
             "with at most 5 million VM-steps (or `output.vm_timeseries: on`), `vm_steps.parquet`. Stages (memory, "
             "storage, ...) add columns named `<metric>_<mean|sum|max>`.", ""]
    for title, cols in (("vms.parquet (one row per VM)", VM_COLUMNS), ("hosts.parquet (one row per host)", HOST_COLUMNS),
                        ("vms.parquet, when VMs arrive and leave (`scheduling.lifetimes`)", SCHEDULE_VM_COLUMNS),
                        ("vms.parquet, when VMs ask for GPUs (`vms[].gpu`)", GPU_VM_COLUMNS),
                        ("host_steps.parquet (one row per host per step)", HOST_STEP_COLUMNS),
                        ("schedule_steps.parquet (one row per step, when VMs arrive and leave)", SCHEDULE_STEP_COLUMNS)):
        lines += [f"## {title}", "", "| column | meaning |", "|---|---|"]
        lines += [f"| `{k}` | {v} |" for k, v in cols.items()]
        lines.append("")
    lines += ["## summary.json", "", "| key | meaning |", "|---|---|",
              "| `seed` | the seed of the run (same inputs + seed = identical results) |",
              "| `totals.cpu_demand_mhz_s` | CPU demand integrated over time |",
              "| `totals.cpu_delivered_mhz_s` | CPU delivered |",
              "| `totals.cpu_unserved_mhz_s` | demand - delivered |",
              "| `totals.cpu_ready_s` | CPU Ready, vCPU-seconds |",
              "| `totals.energy_j`, `totals.energy_kwh` | energy of all powered-on hosts |",
              "| `hosts_used`, `hosts_powered_on`, `vms_placed`, `vms_unplaced`, `unplaced_vms` | placement outcome |",
              "| `qos.*` | CPU Ready statistics over VMs |",
              "| `scheduling.*` | when VMs arrive and leave: completed / running / waiting / failed counts, scheduling delay "
              "(total, mean, max), peak concurrent VMs, simulated end, host power-ons and their boot energy |", ""]
    return "\n".join(lines)


def _model_md(model, title: str, schema_file: str, intro: str, top: str) -> str:
    """A field table per object of a pydantic model's JSON Schema."""
    schema = model.model_json_schema(by_alias=True)
    lines = [f"# {title}", "", f"Generated from code by `make docs`; do not edit. The JSON Schema is in "
             f"[{schema_file}]({schema_file}){intro}; point your editor's YAML plugin at it for completion.", "",
             "Quantities accept unit strings (`\"256 GiB\"`, `\"2.3 GHz\"`, `\"95 W\"`, `\"5 min\"`) or numbers in the canonical unit. "
             "Prefixes follow SI and IEC: `GB` is 10^9 bytes and `GiB` 2^30 bytes (`256 GB` = 238.4 GiB), except that a memory "
             "size (`memory`, `hypervisor_memory`) must use a binary prefix (`GB` there is refused as ambiguous); what traces and "
             "inventories mean by `KB`/`MB`/`GB` is listed per format in [units](units.md).", ""]
    defs = schema.get("$defs", {})

    def table(name: str, node: dict) -> None:
        lines.extend([f"## {name}", "", (node.get("description") or "").strip(), "", "| field | type | default | description |", "|---|---|---|---|"])
        for fname, f in node.get("properties", {}).items():
            t = f.get("type") or ("quantity" if "anyOf" in f and any(a.get("type") == "string" for a in f["anyOf"]) else "") or f.get("$ref", "").split("/")[-1]
            if not t and "anyOf" in f:
                t = " or ".join(a.get("type") or a.get("$ref", "").split("/")[-1] for a in f["anyOf"])
            desc = (f.get("description") or "").replace("\n", " ").replace("|", "\\|")
            default = json.dumps(f["default"]) if "default" in f else ""
            lines.append(f"| `{fname}` | {t} | {default} | {desc} |")
        lines.append("")

    table(top, schema)
    for name in sorted(defs):
        table(name, defs[name])
    return "\n".join(lines)


def _schema_md() -> str:
    from densim.spec.scenario import Scenario

    return _model_md(Scenario, "Scenario file reference", "scenario.schema.json", " (`densim schema`)", "Scenario (top level)")


def _plan_md() -> str:
    from densim.tools.plan.capacity import PlanSpec

    return _model_md(PlanSpec, "Capacity plan candidates file reference (`densim plan --candidates`)", "plan.schema.json", "",
                     "PlanSpec (top level)")


def _sweep_md() -> str:
    from densim.spec.sweep import SweepSpec

    return _model_md(SweepSpec, "Study file reference (`densim sweep STUDY`)", "sweep.schema.json", "",
                     "SweepSpec (top level)")


def _units_md() -> str:
    from densim.workloads.readers.conventions import reference_md

    return reference_md()


def generate(out_dir: str | Path) -> list[Path]:
    from densim.spec.scenario import Scenario
    from densim.spec.sweep import SweepSpec
    from densim.tools.plan.capacity import PlanSpec

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = {
        "scenario.md": _schema_md(),
        "scenario.schema.json": json.dumps(Scenario.model_json_schema(by_alias=True), indent=2),
        "plan.md": _plan_md(),
        "plan.schema.json": json.dumps(PlanSpec.model_json_schema(by_alias=True), indent=2),
        "sweep.md": _sweep_md(),
        "sweep.schema.json": json.dumps(SweepSpec.model_json_schema(by_alias=True), indent=2),
        "output-columns.md": _outputs_md(),
        "models.md": _registries_md(),
        "units.md": _units_md(),
    }
    return [write_text_atomic(out / n, t + "\n") for n, t in files.items()]


if __name__ == "__main__":  # pragma: no cover
    for p in generate(sys.argv[1] if len(sys.argv) > 1 else "docs/reference"):
        print(p)
