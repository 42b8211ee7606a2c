"""The deploy tests' external tools, installed by the project's own scripts (also run by `make test`)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]
DEPLOY = PROJECT / "deploy"


def ensure_promtool() -> str:
    """promtool (and the prometheus server beside it), from Debian's prometheus package."""
    subprocess.run(
        ["bash", str(DEPLOY / "ensure-deb.sh"), "prometheus", "promtool", "prometheus"], check=True
    )
    found = shutil.which("promtool")
    assert found, "deploy/ensure-deb.sh ran but promtool is not on PATH"
    return found


def ensure_compose_check() -> Path:
    """The compose-go validator, built from deploy/compose-check."""
    return _go_tool("compose-check")


def ensure_dockerfile_check() -> Path:
    """BuildKit's Dockerfile parser and linter, built from deploy/dockerfile-check."""
    return _go_tool("dockerfile-check")


def _go_tool(name: str) -> Path:
    subprocess.run(["bash", str(DEPLOY / "ensure-go-tool.sh"), name], check=True)
    return PROJECT / ".cache" / "bin" / name
