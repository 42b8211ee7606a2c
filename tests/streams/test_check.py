"""`predigest check`, run as an operator would before starting: what it finds, and its exit code."""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path
from typing import Any

import pytest

from streams.worker_process import free_port
from tests.streams.cli_support import PROJECT, predigest

# Each case runs the real command; one asks the session broker, which may be starting.
pytestmark = pytest.mark.timeout(180)


def rows(stdout: str) -> dict[str, dict[str, Any]]:
    return {r["what"]: r for r in json.loads(stdout)}


def ports() -> dict[str, str]:
    return {"PREDIGEST_WEB_PORT": str(free_port()), "PREDIGEST_WATCHER_METRICS_PORT": str(free_port())}


@pytest.mark.integration
def test_the_example_root_on_a_running_broker_is_all_well(kafka_bootstrap: str) -> None:
    done = predigest(
        "check", "--root", "examples/root", env={**ports(), "PREDIGEST_KAFKA__BOOTSTRAP": kafka_bootstrap}
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.rstrip().endswith("all is well")
    lines = done.stdout.splitlines()
    inference = next(line for line in lines if line.startswith("axis inference"))
    assert "living/inference.md v3.44" in inference and "section(s)" in inference
    risk = next(line for line in lines if line.startswith("axis risk"))
    assert "WARN" in risk and "living/risk.md not found" in risk  # the example has none: said, not failed
    assert any(line.startswith("kafka") and kafka_bootstrap in line for line in lines)


def test_what_is_wrong_is_named_and_the_exit_code_says_so(tmp_path: Path) -> None:
    root = tmp_path / "root"
    shutil.copytree(PROJECT / "examples/root", root)
    (root / "inbox/jay/reading-list.md").write_text("# Reading list\n\nvLLM 推理 notes.\n", encoding="utf-8")
    (root / "living/inference.md").unlink()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = {
            **ports(),
            "PREDIGEST_OUT_DIR": str(
                root / "inbox/jay/2026-09-27-1050-jay-engineering-filtering-inference-agent-eval-sep27.md/out"
            ),
            "PREDIGEST_STATE_DIR": str(tmp_path / "state"),
            "PREDIGEST_WEB_PORT": str(port),
            "PREDIGEST_KAFKA__BOOTSTRAP": f"127.0.0.1:{free_port()}",
        }
        done = predigest("check", "--json", "--root", str(root), env=env)
    assert done.returncode == 1, done.stderr
    found = rows(done.stdout)
    assert found["root"]["status"] == "ok"
    assert found["notes"]["status"] == "warn" and "inbox/jay/reading-list.md" in found["notes"]["detail"]
    assert found["axis inference"]["status"] == "warn"
    assert "living/inference.md not found" in found["axis inference"]["detail"]
    assert found["axis llm-infra"]["status"] == "ok" and "v2.10" in found["axis llm-infra"]["detail"]
    assert found["web_port"]["status"] == "fail" and f"port {port}" in found["web_port"]["detail"]
    assert found["watcher_metrics_port"]["status"] == "ok"
    assert found["out_dir"]["status"] == "fail" and "cannot be written" in found["out_dir"]["detail"]
    assert found["state_dir"]["status"] == "ok"
    assert found["kafka"]["status"] == "fail" and "cannot be reached" in found["kafka"]["detail"]
    assert done.stderr == ""  # no traceback, no aiokafka line: the findings are the answer


def test_a_root_that_does_not_exist_is_one_failed_row(tmp_path: Path) -> None:
    env = {**ports(), "PREDIGEST_KAFKA_CACHE": str(tmp_path / "no-kafka")}
    done = predigest("check", "--root", str(tmp_path / "nope"), env=env)
    assert done.returncode == 1
    assert f"root {tmp_path / 'nope'} does not exist" in done.stdout
    assert "axis " not in done.stdout  # the root's row says it all
    assert "kafka" in done.stdout and "start the local broker" in done.stdout  # and it started none
    assert not (tmp_path / "no-kafka").exists()
