#!/usr/bin/env bash
# Installs Debian's prometheus package (promtool and the server the tests start on loopback) unless
# promtool is already on PATH. Idempotent and quiet; run by `make test` before pytest.
set -euo pipefail

if command -v promtool >/dev/null 2>&1 && command -v prometheus >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "ensure-promtool.sh: promtool is missing; run as root or: apt-get install --no-install-recommends prometheus" >&2
  exit 1
fi
echo "ensure-promtool.sh: installing Debian's prometheus package (promtool, prometheus)" >&2

# The package would start its own server on :9090 where an init system runs; tests start their own.
policy=/usr/sbin/policy-rc.d
added_policy=0
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod 755 "$policy" && added_policy=1
fi
trap 'if [ "$added_policy" = 1 ]; then rm -f "$policy"; fi' EXIT

export DEBIAN_FRONTEND=noninteractive
log="$(mktemp)"
if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends prometheus; } >"$log" 2>&1; then
  cat "$log" >&2
  rm -f "$log"
  exit 1
fi
rm -f "$log"
command -v promtool >/dev/null
