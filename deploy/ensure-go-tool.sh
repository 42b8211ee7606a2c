#!/usr/bin/env bash
# Builds .cache/bin/NAME from deploy/NAME (a few lines of Go; its modules from the Go module proxy, pinned by its
# go.sum) unless it is already there and newer than its sources. Idempotent and quiet; run by `make tools` and
# tests/deploy for `compose-check` (compose-go, the loader of Docker Compose v2) and `dockerfile-check`
# (BuildKit's Dockerfile parser and linter).
# Usage: ensure-go-tool.sh NAME  — prints nothing on success.
set -euo pipefail

DEPLOY="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [ "$#" -ne 1 ] || [ ! -f "$DEPLOY/${1:-}/go.mod" ]; then
  echo "usage: ensure-go-tool.sh NAME  (a folder of deploy/ with a go.mod: compose-check, dockerfile-check)" >&2
  exit 2
fi
HERE="$DEPLOY/$1"
BIN="$DEPLOY/../.cache/bin/$1"

fresh=1
[ -x "$BIN" ] || fresh=0
for src in "$HERE/main.go" "$HERE/go.mod" "$HERE/go.sum"; do
  if [ "$fresh" = 1 ] && [ "$src" -nt "$BIN" ]; then fresh=0; fi
done
[ "$fresh" = 1 ] && exit 0

if ! command -v go >/dev/null 2>&1; then
  echo "ensure-go-tool.sh: Go is needed to build $1 (deploy/$1/go.mod says which version)" >&2
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
