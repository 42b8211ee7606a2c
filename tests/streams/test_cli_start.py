"""What `predigest backfill` loads before it publishes: its start is the ingest's serial part, with the worker and
its parse processes waiting (docs/performance.md, "The backfill's start")."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from streams.worker_process import free_port
from tests.streams.cli_support import PROJECT

pytestmark = pytest.mark.timeout(120)

# The briefing logic, the bar, Faust and the dead-letter tools: a backfill without a terminal uses none of them.
NOT_LOADED = (
    "processors.briefing_request",
    "processors.increments",
    "processors.relevance",
    "streams.dead_admin",
)
NOT_LOADED_PACKAGES = ("rich", "mode", "faust", "prometheus_client")


def _loaded(importtime: str) -> set[str]:
    """The modules named by `-X importtime` lines."""
    return {
        line.rsplit("|", 1)[-1].strip() for line in importtime.splitlines() if line.startswith("import time:")
    }


def test_a_backfill_starts_without_the_briefing_logic_the_bar_or_faust(tmp_path: Path) -> None:
    bootstrap = f"127.0.0.1:{free_port()}"  # nothing listens: the backfill stops where it first asks Kafka
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PREDIGEST_KAFKA__BOOTSTRAP": bootstrap,
        "PREDIGEST_STATE_DIR": str(tmp_path / "state"),
    }
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "streams.cli", "backfill", "--root", "examples/root"],
        cwd=PROJECT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert f"Kafka at {bootstrap} cannot be reached" in done.stderr
    loaded = _loaded(done.stderr)
    assert {"sinks.ledger", "aiokafka", "streams.settings"} <= loaded  # it got as far as the ledger and Kafka
    assert not loaded & set(NOT_LOADED)
    assert not {m for m in loaded if m.split(".")[0] in NOT_LOADED_PACKAGES}
