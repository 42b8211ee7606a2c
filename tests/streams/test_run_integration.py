"""`predigest run` on the example root, as an operator starts it: its worker's log is in the same terminal."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from uuid import uuid4

import pytest

from streams.worker_process import free_port

pytestmark = pytest.mark.integration

PROJECT = Path(__file__).resolve().parents[2]
END = "2026-09-27T22:20:00+08:00"


def test_run_logs_the_worker_on_its_stderr_all_json(kafka_bootstrap: str, tmp_path: Path) -> None:
    run_id = uuid4().hex[:8]
    env = {
        "PATH": "/usr/bin:/bin",
        "PREDIGEST_KAFKA__BOOTSTRAP": kafka_bootstrap,
        "PREDIGEST_KAFKA__TOPIC_PREFIX": f"run{run_id}",
        "PREDIGEST_APP_ID": f"run{run_id}",
        "PREDIGEST_STATE_DIR": str(tmp_path / "state"),
        "PREDIGEST_OUT_DIR": str(tmp_path / "out"),
        "PREDIGEST_WEB_PORT": str(free_port()),
        "PREDIGEST_WATCHER_METRICS_PORT": str(free_port()),
        "PREDIGEST_LOG_JSON": "true",
    }
    predigest = Path(sys.executable).parent / "predigest"
    done = subprocess.run(
        [str(predigest), "run", "--root", "examples/root", "--end", END, "--exit"],
        cwd=PROJECT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert done.stdout == ""
    records = [json.loads(line) for line in done.stderr.splitlines()]  # every line, the worker's included
    said = [r["message"] for r in records]
    assert any(m.startswith("emitted briefing inference") for m in said), said  # the worker's line
    assert any(m.startswith("stored inbox/") for m in said)
    assert not (tmp_path / "state" / "worker.log").exists()
    # The example has living/inference.md but no living/risk.md: a warning for the one that lacks it only.
    missing = [m for m in said if "without its living document" in m]
    assert any("briefing risk " in m for m in missing), said
    assert not [m for m in missing if "inference" in m or "llm-infra" in m], missing
    assert not [r for r in records if r["level"] in ("ERROR", "CRITICAL")], records
