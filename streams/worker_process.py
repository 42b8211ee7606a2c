"""Run the Faust worker as a child process: the CLI's `once` and `run`, and the integration tests."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from streams.settings import Settings

PROJECT = Path(__file__).resolve().parents[1]


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


def spawn_worker(settings: Settings, workdir: Path, *, name: str = "worker") -> subprocess.Popen[bytes]:
    """Start `predigest worker` with these settings; its output goes to `<workdir>/<name>.log`."""
    cfg = dump_settings(settings, workdir / f"{name}-settings.json")
    log_file = (workdir / f"{name}.log").open("ab")
    return subprocess.Popen(
        [sys.executable, "-m", "streams.cli", "--settings-json", str(cfg), "worker"],
        stdout=log_file,
        stderr=subprocess.STDOUT,
        cwd=PROJECT,
    )


def stop_worker(proc: subprocess.Popen[bytes], timeout: float = 30.0) -> int:
    """SIGTERM, then SIGKILL after `timeout`; returns the exit code."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return int(proc.returncode)
