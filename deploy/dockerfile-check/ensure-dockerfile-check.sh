#!/usr/bin/env bash
# Builds .cache/bin/dockerfile-check (BuildKit's Dockerfile parser and linter, from the Go module proxy)
# unless it is already there and newer than its sources. Idempotent and quiet; run by tests/deploy.
# Usage: ensure-dockerfile-check.sh  — prints nothing on success.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BIN="$HERE/../../.cache/bin/dockerfile-check"

fresh=1
[ -x "$BIN" ] || fresh=0
for src in "$HERE/main.go" "$HERE/go.mod" "$HERE/go.sum"; do
  if [ "$fresh" = 1 ] && [ "$src" -nt "$BIN" ]; then fresh=0; fi
done
[ "$fresh" = 1 ] && exit 0

if ! command -v go >/dev/null 2>&1; then
  echo "ensure-dockerfile-check.sh: Go is needed to build the Dockerfile checker (go.mod says which version)" >&2
  exit 1
fi
mkdir -p "$(dirname "$BIN")"
log="$(mktemp)"
# GOFLAGS=-mod=readonly: go.sum pins every module; a checksum mismatch fails instead of rewriting it.
if ! (cd "$HERE" && GOFLAGS="-mod=readonly -buildvcs=false" go build -o "$BIN" .) >"$log" 2>&1; then
  cat "$log" >&2
  rm -f "$log"
  exit 1
fi
rm -f "$log"
