#!/usr/bin/env bash
# Create the virtual environment and install densim with every extra and the test tools.
set -euo pipefail
PY="${1:-python3}"
VENV="${2:-.venv}"
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
"$VENV/bin/python" -m pip install -q -e '.[all,dev]'
# densim is installed editable, so pip compiles no bytecode; where PYTHONDONTWRITEBYTECODE is set
# (as on the development machine) Python would then compile every densim module from source at
# each start (measured: 58 ms of the 100k rung's 0.44 s start-up). Compile it once here; a module
# edited later is recompiled in memory until the next set-up, as always.
"$VENV/bin/python" -m compileall -q src >/dev/null
