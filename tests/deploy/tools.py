"""The deploy tests' external tools, installed by the project's own scripts (also run by `make test`)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]
DEPLOY = PROJECT / "deploy"


def ensure_promtool() -> str:
    """promtool (and the prometheus server beside it), from Debian's prometheus package."""
    subprocess.run(["bash", str(DEPLOY / "prometheus" / "ensure-promtool.sh")], check=True)
    found = shutil.which("promtool")
    assert found, "deploy/prometheus/ensure-promtool.sh ran but promtool is not on PATH"
    return found


def ensure_compose_check() -> Path:
    """The compose-go validator, built from deploy/compose-check."""
    subprocess.run(["bash", str(DEPLOY / "compose-check" / "ensure-compose-check.sh")], check=True)
    return PROJECT / ".cache" / "bin" / "compose-check"


def ensure_dockerfile_check() -> Path:
    """BuildKit's Dockerfile parser and linter, built from deploy/dockerfile-check."""
    subprocess.run(["bash", str(DEPLOY / "dockerfile-check" / "ensure-dockerfile-check.sh")], check=True)
    return PROJECT / ".cache" / "bin" / "dockerfile-check"
