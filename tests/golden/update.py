"""Rewrite golden snapshots and print what moved: ``make golden`` (all) or ``make golden CASES="a b"``.

A commit that changes snapshots must say which figures moved and why; paste this output into it.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from tests.golden.cases import CASES, diff, format_diff, load_snapshot, write_snapshot


def main(argv: list[str]) -> int:
    names = argv or list(CASES)
    unknown = [n for n in names if n not in CASES]
    if unknown:
        print(f"unknown golden case(s): {', '.join(unknown)}; known: {', '.join(CASES)}", file=sys.stderr)
        return 2
    moved = 0
    quiet = 0
    for name in names:
        with tempfile.TemporaryDirectory() as tmp:
            now = CASES[name](Path(tmp))
        old = load_snapshot(name)
        rows = diff(old or {}, now, name)
        if old is None:
            print(f"{name}: new snapshot ({len(now)} figures)")
        elif rows:
            moved += 1
            print(format_diff(name, rows, limit=200))
        else:
            # below the test's tolerance, but not the same floats: say so, so that drift is seen and explained
            exact = diff(old, now, rel=0.0)
            if exact:
                quiet += 1
                print(f"{name}: {len(exact)} figure(s) moved below the tolerance, largest {_largest(exact):.2g} relative "
                      f"({', '.join(r[0] for r in exact[:3])}{', ...' if len(exact) > 3 else ''})")
            else:
                print(f"{name}: no change")
        write_snapshot(name, now)
    print(f"\n{len(names)} case(s) written, {moved} with moved figures, {quiet} moved only below the tolerance")
    return 0


def _largest(rows) -> float:
    """The largest relative move among ``diff`` rows of numbers."""
    out = 0.0
    for _, g, n, _ch, _rule in rows:
        if isinstance(g, (int, float)) and isinstance(n, (int, float)) and not isinstance(g, bool) and g != n:
            out = max(out, abs(n - g) / max(abs(g), abs(n)))
    return out


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
