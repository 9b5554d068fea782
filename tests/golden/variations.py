"""Which golden figures move with the BLAS kernel, the thread counts or the CPU? (issue 29)

Runs every golden case (or those named) once per environment variation, each in a fresh process,
and prints, per variation, the figures that differ from the snapshot and by how much, and whether
the case's tolerance rules (``tests/golden/tolerances.py``) still accept them::

    PYTHONPATH=$PWD/src python -m tests.golden.variations --out /tmp/variations [CASE ...]

The variations approximate another machine without one: ``OPENBLAS_CORETYPE`` forces another
OpenBLAS kernel set (``Zen`` is what an AMD EPYC gets; ``Haswell`` the AVX2 kernels; ``Nehalem`` and
``Prescott`` SSE-only kernels with other blocking and summation orders), ``OPENBLAS_NUM_THREADS``
and ``NUMBA_NUM_THREADS`` change how reductions are split. MKL is not used (numpy and scipy link
OpenBLAS), so ``MKL_CBWR`` has nothing to vary. Slow: a full pass of the golden suite per
variation (2-13 min each on a loaded 2-core machine). Results are kept per variation in ``--out``
(``<variation>.json``), so a second call only summarises (``--rerun`` runs again).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

VARIATIONS: dict[str, dict[str, str]] = {
    "default": {},
    "openblas-threads-1": {"OPENBLAS_NUM_THREADS": "1"},
    "openblas-threads-2": {"OPENBLAS_NUM_THREADS": "2"},
    "coretype-zen": {"OPENBLAS_CORETYPE": "Zen"},
    "coretype-haswell": {"OPENBLAS_CORETYPE": "Haswell"},
    "coretype-sandybridge": {"OPENBLAS_CORETYPE": "SandyBridge"},
    "coretype-nehalem": {"OPENBLAS_CORETYPE": "Nehalem"},
    "coretype-prescott": {"OPENBLAS_CORETYPE": "Prescott"},
    "numba-threads-1": {"NUMBA_NUM_THREADS": "1"},
    "numba-threads-2": {"NUMBA_NUM_THREADS": "2"},
}


def _corename() -> str:
    """The OpenBLAS kernel set numpy uses in this process (``OPENBLAS_CORETYPE`` applied)."""
    import ctypes

    import numpy as np

    libs = Path(np.__file__).parent.parent / "numpy.libs"
    for lib in sorted(libs.glob("*openblas*")):
        dll = ctypes.CDLL(str(lib))
        for sym in ("scipy_openblas_get_corename64_", "openblas_get_corename64_", "openblas_get_corename"):
            fn = getattr(dll, sym, None)
            if fn is not None:
                fn.restype = ctypes.c_char_p
                return fn().decode()
    return "?"


def worker(cases: list[str], out: Path) -> None:
    """Run ``cases`` in this process and write their figures (and errors) to ``out``."""
    from tests.golden.cases import CASES

    doc: dict = {"corename": _corename(), "env": {k: v for k, v in os.environ.items()
                                                  if k.startswith(("OPENBLAS_", "NUMBA_", "MKL_", "OMP_"))},
                 "figures": {}, "errors": {}, "seconds": {}}
    for case in cases:
        t0 = time.perf_counter()
        with tempfile.TemporaryDirectory() as tmp:
            try:
                doc["figures"][case] = CASES[case](Path(tmp))
            except Exception as exc:  # noqa: BLE001 - reported, the other cases still run
                doc["errors"][case] = f"{type(exc).__name__}: {exc}"[:2000]
        doc["seconds"][case] = round(time.perf_counter() - t0, 2)
        print(f"  {case}: {doc['seconds'][case]} s", file=sys.stderr, flush=True)
    out.write_text(json.dumps(doc, indent=1, sort_keys=True))


def _rel(g, n) -> float | None:
    if isinstance(g, bool) or isinstance(n, bool) or not isinstance(g, (int, float)) or not isinstance(n, (int, float)):
        return None
    if g == n:
        return 0.0
    return abs(n - g) / max(abs(g), abs(n))


def _identical(a, b) -> bool:
    return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


def summarise(results: dict[str, dict]) -> str:
    from tests.golden.cases import diff, load_snapshot
    from tests.golden.tolerances import compare, rule_for

    lines = []
    for name, doc in results.items():
        moved_cases = []
        for case, figs in sorted(doc["figures"].items()):
            golden = load_snapshot(case) or {}
            exact = [k for k in sorted(set(golden) | set(figs)) if not _identical(golden.get(k, "(gone)"), figs.get(k, "(gone)"))]
            if not exact:
                continue
            fails = compare(case, golden, figs)
            before = diff(golden, figs, rel=1e-6)  # the single tolerance the suite had before issue 29
            worst = max((r for k in exact if (r := _rel(golden.get(k), figs.get(k))) is not None), default=0.0)
            moved_cases.append((case, exact, fails, worst, before))
        head = f"{name} (OpenBLAS {doc['corename']}, {sum(doc['seconds'].values()):.0f} s)"
        if doc["errors"]:
            head += f", errors: {doc['errors']}"
        lines.append(head + (": every figure identical to the snapshots" if not moved_cases else ""))
        for case, exact, fails, worst, before in moved_cases:
            lines.append(f"  {case}: {len(exact)} figure(s) differ, largest {worst:.3g} relative; "
                         f"{len(before)} outside the old 1e-6; "
                         f"{'all within their rules' if not fails else f'{len(fails)} OUTSIDE THEIR RULES'}")
            for k, g, n, r in fails:
                lines.append(f"    outside {r.name if r else '-'}: {k}: {g!r} -> {n!r}")
            for k in exact[:12]:
                g, n = load_snapshot(case).get(k), doc["figures"][case].get(k)
                r = _rel(g, n)
                lines.append(f"    {k}: {g!r} -> {n!r}" + (f" ({r:.3g}, rule {rule_for(case, k).name})" if r is not None else ""))
            if len(exact) > 12:
                lines.append(f"    ... and {len(exact) - 12} more")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cases", nargs="*")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--only", nargs="*", help="variations to run (default: all)")
    ap.add_argument("--rerun", action="store_true")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    from tests.golden.cases import CASES

    cases = a.cases or list(CASES)
    if a.worker:
        worker(cases, a.out)
        return 0
    a.out.mkdir(parents=True, exist_ok=True)
    results = {}
    for name in a.only or list(VARIATIONS):
        f = a.out / f"{name}.json"
        if a.rerun or not f.exists():
            print(f"{name}: running {len(cases)} case(s) with {VARIATIONS[name] or 'the default environment'}", file=sys.stderr)
            env = os.environ | VARIATIONS[name]
            subprocess.run([sys.executable, "-m", "tests.golden.variations", "--worker", name, "--out", str(f), *cases],
                           env=env, check=True)
        results[name] = json.loads(f.read_text())
    print(summarise(results))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
