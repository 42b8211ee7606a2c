#!/usr/bin/env bash
# rustfmt for `make lint`'s `cargo fmt --check` on native/. rustup's default profile installs it with the toolchain;
# one installed with the minimal profile (as the `rust` images do) gets the component added here. Idempotent and
# quiet: prints nothing when `cargo fmt` is there.
set -euo pipefail

cargo fmt --version >/dev/null 2>&1 && exit 0
if command -v rustup >/dev/null 2>&1; then
  echo "ensure-rustfmt.sh: adding the rustfmt component to rustup's toolchain" >&2
  rustup component add rustfmt >&2
  exit 0
fi
echo "ensure-rustfmt.sh: cargo fmt is missing and no rustup can add it: install rustfmt with the toolchain that" \
  "builds native/ (docs/development.md)" >&2
exit 1
