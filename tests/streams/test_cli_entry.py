"""The `predigest` entry point's weight: what each parse process imports before its own modules."""

from __future__ import annotations

import json
import subprocess
import sys

from streams.worker_process import PROJECT

# A parse process's first step (multiprocessing's spawn): the worker's main module imported as __mp_main__.
AS_A_PARSE_PROCESS = """
import json, sys
from multiprocessing import spawn
spawn.prepare({"init_main_from_name": "streams.cli"})
print(json.dumps(sorted(sys.modules)))
"""


def test_a_parse_process_starts_without_the_commands_imports() -> None:
    run = subprocess.run(
        [sys.executable, "-c", AS_A_PARSE_PROCESS],
        capture_output=True,
        text=True,
        cwd=PROJECT,
        check=True,
        timeout=20,
    )
    modules = json.loads(run.stdout)
    ours = [m for m in modules if m.split(".")[0] in ("streams", "sinks", "processors")]
    assert ours == ["streams"]  # its commands' modules cost ~0.35 s of CPU and ~16 MB a process before
    assert "pydantic" not in modules


def test_the_entry_point_runs_the_command() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "streams.cli", "worker", "--help"],
        capture_output=True,
        text=True,
        cwd=PROJECT,
        check=True,
        timeout=20,
    )
    assert run.stdout.startswith("usage: predigest worker")
