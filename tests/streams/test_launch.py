"""The `predigest` executable stopped while its modules are still imported: one line and 143 or 130, where SIGTERM
ended it silently and a Ctrl-C with a traceback (or a Rust panic's lines, within pydantic_core's import)."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import wait_for

PROJECT = Path(__file__).resolve().parents[2]


def _mapped(pid: int, library: str) -> bool:
    try:
        return library in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_while_the_command_starts_ends_it_in_one_line(sig: int) -> None:
    predigest = Path(sys.executable).parent / "predigest"
    with subprocess.Popen(
        [str(predigest), "status"],
        cwd=PROJECT,
        env={"PATH": "/usr/bin:/bin"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            # pydantic_core's library loaded: streams.cli's modules are half imported, no settings read yet.
            wait_for(
                lambda: proc.poll() is not None or _mapped(proc.pid, "pydantic_core"), 30, "the import", 0.002
            )
            proc.send_signal(sig)
            out, err = proc.communicate(timeout=30)
        finally:
            proc.kill()
    name = signal.Signals(sig).name
    assert proc.returncode == 128 + sig, err[-3000:]
    line = rf"\S+ \S+ ERROR predigest: interrupted by {name} while starting; nothing was started\n"
    assert re.fullmatch(line, err), err[-3000:]
    assert out == ""
