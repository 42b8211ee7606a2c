"""The `predigest` executable stopped while its modules are still imported: one line and 143 or 130, where SIGTERM
ended it silently and a Ctrl-C with a traceback (or a Rust panic's lines, within pydantic_core's import); the same
for the worker `predigest run` starts, and nothing at all for a `predigest` started with SIGINT ignored."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from streams.settings import KafkaSettings, Settings
from streams.worker_process import spawn_worker
from tests.support import wait_for

PROJECT = Path(__file__).resolve().parents[2]
STARTING = r"\S+ \S+ ERROR predigest: interrupted by {} while starting; nothing was started\n"


def _mapped(pid: int, library: str) -> bool:
    try:
        return library in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


def _signal_while_it_imports(proc: subprocess.Popen[bytes] | subprocess.Popen[str], sig: int) -> None:
    # pydantic_core's library loaded: streams.cli's modules are half imported, no settings read yet.
    wait_for(lambda: proc.poll() is not None or _mapped(proc.pid, "pydantic_core"), 30, "the import", 0.002)
    proc.send_signal(sig)


@contextmanager
def _predigest(args: list[str], *, ignore_sigint: bool = False) -> Iterator[subprocess.Popen[str]]:
    """The `predigest` executable, as a shell starts it (with `cmd &` in a script: SIGINT ignored)."""
    predigest = Path(sys.executable).parent / "predigest"

    def ignored() -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    with subprocess.Popen(
        [str(predigest), *args],
        cwd=PROJECT,
        env={"PATH": "/usr/bin:/bin", "PREDIGEST_WEB_PORT": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=ignored if ignore_sigint else None,
    ) as proc:
        try:
            yield proc
        finally:
            proc.kill()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_while_the_command_starts_ends_it_in_one_line(sig: int) -> None:
    with _predigest(["status"]) as proc:
        _signal_while_it_imports(proc, sig)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + sig, err[-3000:]
    assert re.fullmatch(STARTING.format(signal.Signals(sig).name), err), err[-3000:]
    assert out == ""


@pytest.mark.parametrize("args", [["--help"], ["no-such-command"]], ids=["help", "usage-error"])
def test_a_sigterm_while_it_imports_ends_it_before_the_help_or_a_usage_error(args: list[str]) -> None:
    # The signal, remembered, was lost behind argparse's own exit: the help and 0, or the usage error and 2.
    with _predigest(args) as proc:
        _signal_while_it_imports(proc, signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + signal.SIGTERM, err[-3000:]
    assert re.fullmatch(STARTING.format("SIGTERM"), err), err[-3000:]
    assert out == ""


def test_the_worker_predigest_run_starts_ends_in_one_line_at_a_ctrl_c_while_it_imports(
    tmp_path: Path,
) -> None:
    # The Ctrl-C reaches the whole process group: the worker `run` started (`python -m streams.cli`, unguarded)
    # printed a KeyboardInterrupt traceback (or a Rust panic's lines) in the operator's terminal.
    settings = Settings(state_dir=tmp_path, kafka=KafkaSettings(bootstrap="127.0.0.1:9"))
    worker = spawn_worker(settings, tmp_path, with_parent=True)
    try:
        _signal_while_it_imports(worker, signal.SIGINT)
        code = worker.wait(timeout=30)
    finally:
        worker.kill()
    said = (tmp_path / "worker.log").read_text()
    assert code == 128 + signal.SIGINT, said[-3000:]
    assert re.fullmatch(STARTING.format("SIGINT"), said), said[-3000:]


def test_a_predigest_started_with_sigint_ignored_ignores_a_ctrl_c_while_it_imports() -> None:
    # `predigest status &` in a script: the Ctrl-C meant for the terminal's foreground job ended it with 130.
    with _predigest(["status"], ignore_sigint=True) as proc:
        _signal_while_it_imports(proc, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, err[-3000:]  # its own answer: no worker answered
    assert "(no worker answered for it)" in out and "SIGINT" not in err, err[-3000:]


def test_a_signal_just_before_the_command_s_try_is_its_one_line() -> None:
    # Between `streams.launch` setting the final handlers and `command_line.main`'s try (arguments parsed,
    # logging set up) a Ctrl-C was a KeyboardInterrupt traceback. Sent here as the last step before the try.
    code = (
        "import signal, sys\nfrom streams import command_line, launch\nconfigure = command_line.logs.configure\n"
        "def configured(**kwargs):\n    configure(**kwargs)\n    signal.raise_signal(signal.SIGINT)\n"
        "command_line.logs.configure = configured\nsys.argv = ['predigest', 'status']\nsys.exit(launch.main())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=PROJECT, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 128 + signal.SIGINT, done.stderr[-3000:]
    assert re.fullmatch(STARTING.format("SIGINT"), done.stderr), done.stderr[-3000:]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
@pytest.mark.parametrize("args", [["--help"], ["no-such-command"]], ids=["help", "usage-error"])
def test_a_signal_while_argparse_parses_ends_it_before_the_help_or_a_usage_error(
    args: list[str], sig: int
) -> None:
    # Remembered by launch's handler, the signal was lost behind argparse's own exit: the help and 0, or the
    # usage error and 2. Sent here as argparse starts its parse, once the imports are done.
    code = (
        "import argparse, signal, sys\nfrom streams import launch\nparse = argparse.ArgumentParser.parse_known_args\n"
        f"def parsing(*args, **kwargs):\n    signal.raise_signal({int(sig)})\n    return parse(*args, **kwargs)\n"
        f"argparse.ArgumentParser.parse_known_args = parsing\nsys.argv = ['predigest', *{args!r}]\n"
        "sys.exit(launch.main())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=PROJECT, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 128 + sig, done.stderr[-3000:]
    assert re.fullmatch(STARTING.format(signal.Signals(sig).name), done.stderr), done.stderr[-3000:]
    assert done.stdout == ""
