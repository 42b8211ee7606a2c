"""`predigest run` on the example root, as an operator starts it: its worker's log is in the same terminal."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from uuid import uuid4

import httpx
import pytest

from sinks.ledger import Ledger
from streams.worker_process import free_port
from tests.support import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.timeout(360)]  # a run, and a broker started

PROJECT = Path(__file__).resolve().parents[2]
PREDIGEST = Path(sys.executable).parent / "predigest"
END = "2026-09-27T22:20:00+08:00"


def run_env(tmp_path: Path, bootstrap: str | None, **more: str) -> dict[str, str]:
    """The environment of a `predigest run` of this test's own: its state, output and ports, and on the given
    broker its own topics and group (with no bootstrap, the run starts the local broker)."""
    env = {
        "PATH": "/usr/bin:/bin",
        "PREDIGEST_STATE_DIR": str(tmp_path / "state"),
        "PREDIGEST_OUT_DIR": str(tmp_path / "out"),
        "PREDIGEST_WEB_PORT": str(free_port()),
        "PREDIGEST_WATCHER_METRICS_PORT": str(free_port()),
    }
    if bootstrap is not None:
        run_id = uuid4().hex[:8]
        env["PREDIGEST_KAFKA__BOOTSTRAP"] = bootstrap
        env["PREDIGEST_KAFKA__TOPIC_PREFIX"] = env["PREDIGEST_APP_ID"] = f"run{run_id}"
    return env | more


def run_to_the_end(env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    """`predigest run --exit` on the example root: its window briefed, then it stops."""
    return subprocess.run(
        [str(PREDIGEST), "run", "--root", "examples/root", "--end", END, "--exit"],
        cwd=PROJECT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_run_logs_the_worker_on_its_stderr_all_json(kafka_bootstrap: str, tmp_path: Path) -> None:
    done = run_to_the_end(run_env(tmp_path, kafka_bootstrap, PREDIGEST_LOG_JSON="true"), timeout=240)
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


def _wait_for_line(log: Path, needle: str, proc: subprocess.Popen[bytes], timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, log.read_text(errors="replace")[-4000:]
        for line in log.read_text(errors="replace").splitlines():
            if needle in line:
                return line
        time.sleep(0.5)
    raise AssertionError(f"no {needle!r} in {log.read_text(errors='replace')[-4000:]}")


def test_make_runs_hint_briefs_an_edit_and_ctrl_c_stops_it(kafka_bootstrap: str, tmp_path: Path) -> None:
    """What `make run` does on the example root, then what its printed hint tells a new user to do."""
    root = tmp_path / "root"
    shutil.copytree(PROJECT / "examples/root", root)
    env = run_env(tmp_path, kafka_bootstrap)
    log = tmp_path / "run.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(PREDIGEST), "run", "--root", str(root), "--end", END], cwd=PROJECT, env=env, stderr=out
        )
    try:
        hint = _wait_for_line(log, "to brief an edit", proc, 180)
        note = Path(re.search(r"\(e\.g\. (\S+)\)", hint)[1])  # type: ignore[index]
        url = re.search(r"'(http://\S+)'", hint)[1]  # type: ignore[index]
        assert "axis=inference" in url and "end=2026-09-27T22%3A21%3A00%2B08%3A00" in url
        stored = f"stored {note.relative_to(root).as_posix()} for axis inference"
        before = log.read_text(errors="replace").count(stored)
        note.write_text(note.read_text(encoding="utf-8") + "\n## Edited\nvLLM 推理 EDITED-MARK 4.2× TTFT.\n")
        # Quiet, published, stored: the flush after it briefs the edit (a 3 s sleep was too short under load).
        wait_for(lambda: log.read_text(errors="replace").count(stored) > before, 90, "the edit stored")
        answer = httpx.post(url, headers={"X-Predigest-Request": "1"}, timeout=10)
        assert answer.status_code == 202, answer.text
        again = tmp_path / "out/inference/2026-09-27-inference-e1prep-flush-2221.md"
        _wait_for_line(log, "emitted briefing inference ending 2026-09-27T22:21:00+08:00", proc, 90)
        briefing = json.loads(again.with_suffix(".json").read_text(encoding="utf-8"))
        listed = {
            s["status"]: s for s in briefing["sources"] if s["path"] == note.relative_to(root).as_posix()
        }
        assert listed.keys() == {"used", "superseded"}, listed.keys()
        assert listed["used"]["bytes"] == note.stat().st_size  # the edited version, the first one superseded
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    briefed = sorted(p.name for p in (tmp_path / "out").rglob("*.md"))
    assert all("-flush-" in name for name in briefed), briefed  # no close of today's (empty) window
    assert "Traceback" not in log.read_text(errors="replace")


def test_run_stops_the_local_broker_it_started(tmp_path: Path) -> None:
    cache = tmp_path / "kafka"
    for libs in (PROJECT / ".cache/kafka").glob("libs-*"):
        shutil.copytree(libs, cache / libs.name)  # the jars only: no broker runs in this cache
    done = run_to_the_end(run_env(tmp_path, None, PREDIGEST_KAFKA_CACHE=str(cache)), timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    assert "local Kafka broker started at" in done.stderr
    assert "stopping the local Kafka broker this run started" in done.stderr
    assert not (cache / "run" / "kafka.pid").exists()  # kafka.sh stop removes it once the JVM is gone


def test_a_run_started_with_sigint_ignored_keeps_running_at_a_ctrl_c(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    # `predigest run &` in a script, then a Ctrl-C for the terminal's foreground job: run and its worker stopped.
    env = run_env(tmp_path, kafka_bootstrap)
    log = tmp_path / "run.log"

    def in_the_background() -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    argv = [str(PREDIGEST), "run", "--root", "examples/root", "--end", END]
    with log.open("wb") as out:
        proc = subprocess.Popen(  # a session of its own: the Ctrl-C to its group reaches no test
            argv, cwd=PROJECT, env=env, stderr=out, start_new_session=True, preexec_fn=in_the_background
        )
    healthz = f"http://127.0.0.1:{env['PREDIGEST_WEB_PORT']}/healthz"
    try:
        _wait_for_line(log, "running; SIGTERM stops the watcher and the worker", proc, 180)
        os.killpg(proc.pid, signal.SIGINT)
        time.sleep(3)
        assert proc.poll() is None, log.read_text(errors="replace")[-4000:]
        assert httpx.get(healthz, timeout=5).status_code == 200  # its worker too
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    said = log.read_text(errors="replace")
    assert "Traceback" not in said and "SIGINT" not in said, said[-4000:]


def _parse_processes(session: int) -> list[int]:
    """The worker's parse processes in `session` (spawned: `python -c '… spawn_main(…)'`)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            ours = (
                entry.name.isdigit()
                and int((entry / "stat").read_text().rsplit(")", 1)[1].split()[3]) == session
            )
            if ours and b"spawn_main" in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except (OSError, IndexError, ValueError):
            continue
    return found


def test_a_ctrl_c_as_the_workers_parse_processes_start_is_runs_one_line(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    # The Ctrl-C reaches the whole group: a parse process took it before its initializer ignored it (a
    # KeyboardInterrupt traceback, or a silent death), the worker logged `starting the parse processes failed` with
    # a traceback, and its stop then hung on the broken pool until its hard exit (`still running 15s after SIGINT`).
    log = tmp_path / "run.log"
    argv = [str(PREDIGEST), "run", "--root", "examples/root", "--end", END]
    with log.open("wb") as out:
        proc = subprocess.Popen(  # a session of its own: the Ctrl-C to its group reaches no test
            argv, cwd=PROJECT, env=run_env(tmp_path, kafka_bootstrap), stderr=out, start_new_session=True
        )
    try:
        wait_for(
            lambda: proc.poll() is not None or bool(_parse_processes(proc.pid)), 180, "parse processes", 0.002
        )
        os.killpg(proc.pid, signal.SIGINT)
        code = proc.wait(timeout=60)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    said = log.read_text(errors="replace")
    assert code == 128 + signal.SIGINT, said[-4000:]
    assert said.rstrip().endswith("ERROR predigest: interrupted by SIGINT; what it started is stopped"), said[
        -4000:
    ]
    assert "Traceback" not in said and "KeyboardInterrupt" not in said and "exiting now" not in said, said[
        -4000:
    ]


def test_a_run_whose_watcher_is_refused_at_its_start_ends_with_that_line(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    # A `predigest watch` already on this state: the run's watcher is refused its ledger. The run went on without
    # it, its worker up, "running; Ctrl-C stops the watcher and the worker" said, the root's edits never published,
    # and the refusal said only at the Ctrl-C.
    held = Ledger(tmp_path / "state" / "watcher-ledger.duckdb")
    argv = [str(PREDIGEST), "run", "--root", "examples/root", "--end", END]
    try:
        done = subprocess.run(
            argv,
            cwd=PROJECT,
            env=run_env(tmp_path, kafka_bootstrap),
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        held.close()
    assert done.returncode == 2, done.stderr[-4000:]
    last = done.stderr.rstrip().splitlines()[-1]
    assert f"is held by another process (PID {os.getpid()})" in last, done.stderr[-4000:]
    assert "running;" not in done.stderr and "Traceback" not in done.stderr, done.stderr[-4000:]
    assert not list((tmp_path / "out").rglob("*.md"))  # no briefing of a window no watcher fed
