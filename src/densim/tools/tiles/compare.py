"""Side-by-side comparison of two tile benchmark results."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from densim.errors import InputError


def load_result(path: str | Path) -> dict[str, Any]:
    """Read a result file and check it against the published schema; one-line error otherwise."""
    from densim.textio import parse_json, read_text_file

    p = Path(path)
    doc = parse_json(read_text_file(p, "tile benchmark result"), p)
    try:
        import jsonschema

        from densim.tools.tiles.core import schema

        jsonschema.validate(doc, schema())
    except ImportError:  # pragma: no cover
        if not isinstance(doc, dict) or doc.get("schema") != "densim-bench-tiles/1":
            raise InputError(p, "schema", "not a densim tile benchmark result") from None
    except Exception as exc:  # jsonschema.ValidationError
        where = "/".join(str(x) for x in getattr(exc, "absolute_path", [])) or "(top)"
        raise InputError(p, where, f"does not match the tile result schema: {getattr(exc, 'message', exc)}") from None
    return doc


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
