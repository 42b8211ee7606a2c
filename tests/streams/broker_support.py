"""Stand-in local brokers: processes `kafka.sh` takes for the broker of a data dir, as it takes the real one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def stand_in_broker(data: Path, code: str = "") -> Iterator[subprocess.Popen[str]]:
    """A process that runs `code` (its signal handlers), prints `up` and sleeps, written as the broker of `data`
    in its `kafka.pid`; its command line ends as the real broker's does (`kafka.Kafka <data>/server.properties`),
    which is what `kafka.sh` checks before it trusts or signals that pid. Killed after."""
    data.mkdir(parents=True, exist_ok=True)
    script = f"import signal, sys, time\n{code}\nprint('up', flush=True)\ntime.sleep(60)"
    argv = [sys.executable, "-c", script, "kafka.Kafka", f"{data.resolve()}/server.properties"]
    broker = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    try:
        assert broker.stdout is not None and broker.stdout.readline().strip() == "up"
        (data / "kafka.pid").write_text(f"{broker.pid}\n")
        yield broker
    finally:
        broker.kill()
        broker.communicate()


def _foreground_job(argv: list[str], cwd: Path, env: dict[str, str] | None) -> subprocess.Popen[str]:
    """`argv` in a process group of its own, as a terminal runs a foreground job; stdout and stderr together."""
    return subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def ctrl_c_once_it_stops(
    broker: subprocess.Popen[str], argv: list[str], cwd: Path, env: dict[str, str] | None = None
) -> tuple[int, str]:
    """Run `argv` in its own process group, as a terminal's foreground job, and Ctrl-C that group once the
    stand-in `broker` says `term` (its stop began): the SIGINT reaches the command and kafka.sh alike.
    The command's exit code and its output (stdout and stderr)."""
    with _foreground_job(argv, cwd, env) as proc:
        try:
            assert broker.stdout is not None and broker.stdout.readline().strip() == "term"
            os.killpg(proc.pid, signal.SIGINT)
            code = proc.wait(timeout=20)
        finally:
            proc.kill()
        return code, proc.stdout.read() if proc.stdout else ""


def fresh_cache(tmp_path: Path, kafka_cache: Path) -> Path:
    """A Kafka cache of its own (its broker's data dir `run` not made yet), sharing the fetched libraries."""
    cache = tmp_path / "cache"
    cache.mkdir()
    for libs in kafka_cache.glob("libs-*"):
        (cache / libs.name).symlink_to(libs.resolve())
    return cache


def signal_once_it_launches(
    argv: list[str], data: Path, signum: int, env: dict[str, str], cwd: Path
) -> tuple[int, str, int]:
    """Run `argv` in its own process group and, once it has launched the real broker of `data` (its kafka.pid
    written, the broker not answering yet), send `signum`: SIGINT to the group (a terminal's Ctrl-C), SIGTERM to
    the command alone (`kill`). The command's exit code, its output (stdout and stderr), the broker's pid."""
    with _foreground_job(argv, cwd, env) as proc:
        broker = 0
        try:
            broker = launched_broker(data, proc)
            if signum == signal.SIGINT:
                os.killpg(proc.pid, signum)
            else:
                proc.send_signal(signum)
            code = proc.wait(timeout=60)
        finally:
            proc.kill()
            if broker and b"kafka.Kafka" in _cmdline(broker):  # a failing test leaves no JVM behind
                os.kill(broker, signal.SIGKILL)
        return code, proc.stdout.read() if proc.stdout else "", broker


def launched_broker(data: Path, proc: subprocess.Popen[str]) -> int:
    """The pid of the broker `proc` launched, once its kafka.pid holds it (the file is there before its pid)."""
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            return int((data / "kafka.pid").read_text())
        except (OSError, ValueError):
            time.sleep(0.02)
    raise AssertionError(f"no broker was launched in {data} (the command exited {proc.poll()})")


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def runs(pid: int) -> bool:
    """Whether `pid` is a running process (not a zombie: those have an empty command line)."""
    return _cmdline(pid) != b""
