"""What the CLI tests share: `predigest …` run as an operator runs it, in a subprocess of a bare environment."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]


def predigest(
    *args: str, env: dict[str, str] | None = None, cwd: Path = PROJECT, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/root")}
    return subprocess.run(
        [sys.executable, "-m", "streams.cli", *args],
        cwd=cwd,
        env={**base, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
