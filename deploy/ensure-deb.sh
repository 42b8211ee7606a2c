#!/usr/bin/env bash
# Installs a Debian package unless every binary named is already on PATH. Idempotent and quiet; run by
# `make tools` for the tools the tests use: `prometheus promtool prometheus` (promtool and the server the tests
# start on loopback) and `chromium chromium` (the headless browser of tests/streams/test_browser_chromium.py).
# Usage: ensure-deb.sh PACKAGE BINARY...  — prints nothing when the binaries are there.
set -euo pipefail

if [ "$#" -lt 2 ]; then
  echo "usage: ensure-deb.sh PACKAGE BINARY...  (e.g. ensure-deb.sh prometheus promtool prometheus)" >&2
  exit 2
fi
package="$1"
shift

missing=()
for binary in "$@"; do
  command -v "$binary" >/dev/null 2>&1 || missing+=("$binary")
done
[ "${#missing[@]}" -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "ensure-deb.sh: ${missing[*]} missing; run as root or: apt-get install --no-install-recommends $package" >&2
  exit 1
fi
echo "ensure-deb.sh: installing Debian's $package package ($*)" >&2

# A package may start its own service where an init system runs (prometheus on :9090); the tests start their own.
policy=/usr/sbin/policy-rc.d
added_policy=0
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod 755 "$policy" && added_policy=1
fi
trap 'if [ "$added_policy" = 1 ]; then rm -f "$policy"; fi' EXIT

export DEBIAN_FRONTEND=noninteractive
log="$(mktemp)"
if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends "$package"; } >"$log" 2>&1; then
  cat "$log" >&2
  rm -f "$log"
  exit 1
fi
rm -f "$log"
for binary in "$@"; do
  if ! command -v "$binary" >/dev/null 2>&1; then
    echo "ensure-deb.sh: $package is installed but $binary is not on PATH" >&2
    exit 1
  fi
done
