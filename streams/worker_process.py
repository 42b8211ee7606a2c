"""Run `predigest` commands as child processes (the worker for `once` and `run`, the tests, the benchmark) on free ports."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from streams.settings import Settings
from streams.stopping import WORKER_STOP_SECONDS

PROJECT = Path(__file__).resolve().parents[1]
# After SIGINT/SIGTERM: a worker still running this long after its SIGTERM is killed; its own clean stop, and a
# margin for its exit (its parse processes' end, the interpreter's).
STOP_CHILD_SECONDS = WORKER_STOP_SECONDS + 5.0


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (for a child's web or metrics server)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def dump_settings(settings: Settings, path: Path) -> Path:
    """Write the full settings (secrets included, mode 0600) for a child worker process."""
    data: dict[str, Any] = settings.model_dump(mode="json")
    if settings.token is not None:
        data["token"] = settings.token.get_secret_value()
    if settings.kafka.sasl_password is not None:
        data["kafka"]["sasl_password"] = settings.kafka.sasl_password.get_secret_value()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch(mode=0o600)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def load_dumped_settings(path: Path) -> Settings:
    """The settings a parent wrote with `dump_settings`."""
    return Settings(**json.loads(path.read_text(encoding="utf-8")))


def spawn_cli(
    settings: Settings,
    workdir: Path,
    name: str,
    *command: str,
    prefix: Sequence[str] = (),
    terminal: bool = False,
    with_parent: bool = False,
) -> subprocess.Popen[bytes]:
    """`predigest <command>` as a child process with these settings; its output goes to `<workdir>/<name>.log`,
    or with `terminal` to this process's stderr (where `predigest run` logs: the operator reads one stream).

    `prefix` goes between the interpreter and `-m streams.cli` (the benchmark's profiler); `with_parent` makes
    the child die with this process, even when this one is SIGKILLed (the worker of `once` and `run`).
    """
    cfg = dump_settings(settings, workdir / f"{name}-settings.json")
    parent = ["--parent-pid", str(os.getpid())] if with_parent else []
    argv = [sys.executable, *prefix, "-m", "streams.cli", "--settings-json", str(cfg), *parent, *command]
    if terminal:
        return subprocess.Popen(argv, stdout=sys.stderr, stderr=subprocess.STDOUT, cwd=PROJECT)
    # The child holds its own copy of the log's descriptor: this process's copy is closed at once.
    with (workdir / f"{name}.log").open("ab") as log_file:
        return subprocess.Popen(argv, stdout=log_file, stderr=subprocess.STDOUT, cwd=PROJECT)


def spawn_worker(
    settings: Settings,
    workdir: Path,
    *,
    name: str = "worker",
    terminal: bool = False,
    with_parent: bool = False,
) -> subprocess.Popen[bytes]:
    """Start `predigest worker` with these settings; its output and parent as `spawn_cli` says."""
    return spawn_cli(settings, workdir, name, "worker", terminal=terminal, with_parent=with_parent)


def stop_process(proc: subprocess.Popen[bytes], timeout: float = 30.0) -> int:
    """SIGTERM, then SIGKILL after `timeout`; returns the exit code."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return int(proc.returncode)
