#!/usr/bin/env bash
# Create the virtual environment and install densim into it, in one of two steps:
#   bootstrap.sh PYTHON VENV core   what `make demo` needs: densim and its own dependencies (no extras,
#                                   no test tools), then the numba kernels compiled into their cache
#   bootstrap.sh PYTHON VENV test   what `make test` adds: every optional extra and the test tools
# Each step says what it does and how long it took (pip itself runs quietly).
set -euo pipefail
PY="${1:-python3}"
VENV="${2:-.venv}"
STEP="${3:-core}"
case "$STEP" in
  core|test) ;;
  *) echo "bootstrap: unknown step '$STEP' (core or test)" >&2; exit 2 ;;
esac
say() { echo "bootstrap: $*" >&2; }

if [ ! -x "$VENV/bin/python" ]; then
  if ! "$PY" -m venv "$VENV" 2>/dev/null; then
    # Debian's python3 ships venv separately
    if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
      apt-get update -qq && apt-get install -y -qq python3-venv
      "$PY" -m venv "$VENV"
    else
      echo "bootstrap: '$PY -m venv' failed; install the python3-venv package" >&2
      exit 1
    fi
  fi
  "$VENV/bin/python" -m pip install -q --upgrade pip
fi

if [ "$STEP" = "test" ]; then
  t0=$SECONDS
  say "installing the optional extras and the test tools into $VENV (one time, ~1 min)..."
  "$VENV/bin/python" -m pip install -q -e '.[all,dev]'
  say "test tools installed in $((SECONDS - t0)) s"
  exit 0
fi

t0=$SECONDS
say "installing densim and its dependencies into $VENV (one time, ~1 min)..."
"$VENV/bin/python" -m pip install -q -e .
say "installed in $((SECONDS - t0)) s"
# densim is installed editable, so pip compiles no bytecode; where PYTHONDONTWRITEBYTECODE is set
# (as on the development machine) Python would then compile every densim module from source at
# each start (measured: 58 ms of the 100k rung's 0.44 s start-up). Compile it once here; a module
# edited later is recompiled in memory until the next set-up, as always.
"$VENV/bin/python" -m compileall -q src >/dev/null
# numba compiles each kernel on its first call and caches the machine code (densim._jit); do it now,
# with a line saying so, instead of silently inside the first run. `densim warmup` prints its own lines.
t0=$SECONDS
"$VENV/bin/python" -m densim.cli.main warmup
say "kernels ready in $((SECONDS - t0)) s"
