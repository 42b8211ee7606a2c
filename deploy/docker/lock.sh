#!/usr/bin/env bash
# Regenerates deploy/docker/requirements.lock: every runtime dependency of pyproject.toml and its build backend,
# pinned with the sha256 of each file PyPI serves for that version, so `docker build` installs the same bytes
# (pip --require-hashes) until the lock is regenerated. Resolved for the image's Python (3.11, Linux): run it
# on Linux with python3.11. Existing pins are kept while they still satisfy pyproject.toml.
# Usage: bash deploy/docker/lock.sh [--upgrade | --upgrade-package NAME ...]   (pip-compile's own flags)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PROJECT="$(cd "$HERE/../.." && pwd)"
PY="${PY:-python3.11}"
VENV="$PROJECT/.cache/lock-venv"
PIP_TOOLS="pip-tools==7.6.2"

if ! "$PY" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; then
  echo "lock.sh: needs Python 3.11 (the image's), as \$PY (now: $PY)" >&2
  exit 1
fi
if ! "$VENV/bin/pip-compile" --version 2>/dev/null | grep -q "${PIP_TOOLS#pip-tools==}"; then
  "$PY" -m venv "$VENV"
  "$VENV/bin/pip" install -q "$PIP_TOOLS"
fi
cd "$PROJECT"
unset PIP_FIND_LINKS  # only PyPI's files may feed the lock, not a local wheel folder
# --allow-unsafe and --build-deps-for wheel: setuptools and wheel are locked too, so that the image builds
# predigest itself with --no-build-isolation from hashed files as well; and maturin, the build backend of the
# compiled extension (native/pyproject.toml), which the image's extension stage installs from the lock.
CUSTOM_COMPILE_COMMAND="bash deploy/docker/lock.sh" "$VENV/bin/pip-compile" --quiet --generate-hashes \
  --allow-unsafe --strip-extras --build-deps-for wheel --no-emit-index-url --no-emit-find-links \
  --output-file deploy/docker/requirements.lock "$@" pyproject.toml native/pyproject.toml
