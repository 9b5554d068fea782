#!/usr/bin/env bash
# Browser tests drive Debian's Chromium through Playwright (no browser download needed).
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then exit 0; fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
else
  echo "install-browser: chromium not found and not root; browser tests will be skipped" >&2
fi
