#!/usr/bin/env bash
# Installs Debian's chromium package (the headless browser tests/streams/test_browser_chromium.py runs with
# --dump-dom: the page as Chromium built it, scripts run) unless a chromium is already on PATH. Idempotent and
# quiet; run by `make tools`. No chromedriver is needed.
set -euo pipefail

for name in chromium chromium-browser; do
  if command -v "$name" >/dev/null 2>&1; then
    exit 0
  fi
done
if [ "$(id -u)" -ne 0 ]; then
  echo "ensure-chromium.sh: chromium is missing; run as root or: apt-get install --no-install-recommends chromium" >&2
  exit 1
fi
echo "ensure-chromium.sh: installing Debian's chromium package (headless browser for the web tests)" >&2

export DEBIAN_FRONTEND=noninteractive
log="$(mktemp)"
if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium; } >"$log" 2>&1; then
  cat "$log" >&2
  rm -f "$log"
  exit 1
fi
rm -f "$log"
command -v chromium >/dev/null
