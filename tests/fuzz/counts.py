"""Print the table of README.md from the counts a run wrote: ``python -m tests.fuzz.counts FOLDER``.

Run the harness with ``DENSIM_FUZZ_COUNTS=FOLDER`` first (each pytest worker writes its own file).
"""

from __future__ import annotations

import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

GROUPS = {
    "bytes": ("truncate", "flip", "nul", "encoding", "crlf"),
    "file kind": ("kind",),
    "cells, rows, columns": ("cell", "drop-row", "dup-row", "drop-col", "dup-col", "separator", "zero-rows", "bad-ref",
                             "as-text", "rename-sheet"),
    "keys, values, nesting": ("leaf", "drop-key", "unknown-key", "dup-key", "deep", "bomb", "not-a-mapping"),
}


def table(folder: Path) -> str:
    tot: Counter = Counter()
    for f in sorted(folder.glob("counts-*.json")):
        for k, v in json.loads(f.read_text()).items():
            tot[k] += v
    rows: dict[str, Counter] = defaultdict(Counter)
    options: Counter = Counter()
    for key, v in tot.items():
        fmt, cls = key.split("|", 1)
        if fmt == "options":
            options[cls] += v
            continue
        group = next((g for g, members in GROUPS.items() if cls in members), cls)
        rows[fmt][group] += v
    cols = [*GROUPS, "corpus", "known-bug"]
    out = ["| input (entry point) | " + " | ".join(cols) + " | total |", "|---" * (len(cols) + 2) + "|"]
    grand = Counter()
    for fmt in sorted(rows):
        r = rows[fmt]
        grand.update(r)
        out.append(f"| {fmt} | " + " | ".join(str(r[c]) if r[c] else "" for c in cols) + f" | {sum(r.values())} |")
    opt_total = sum(options.values())
    out.append(f"| command-line options and arguments ({len(options)} kinds) | " + " | ".join("" for _ in cols) + f" | {opt_total} |")
    out.append("| **all** | " + " | ".join(str(grand[c]) if grand[c] else "" for c in cols) +
               f" | **{sum(grand.values()) + opt_total}** |")
    return "\n".join(out)


if __name__ == "__main__":
    print(table(Path(sys.argv[1])))
