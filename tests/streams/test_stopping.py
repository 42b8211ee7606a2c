"""A SIGTERM before a command has installed its own handler (`stopping.raise_on_sigterm`): it ends the command
wherever it lands, with 143, as a Ctrl-C ends it with 130."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

from streams import stopping
from tests.conftest import PROJECT

# A command whose background task takes the SIGTERM (as in aiokafka's reader or sender): the handler runs in
# that task's step, which spins past it; the main task would sleep 30 s.
IN_A_BACKGROUND_TASK = """
import asyncio, os, signal, time
from streams import stopping

async def busy():
    os.kill(os.getpid(), signal.SIGTERM)
    deadline = time.monotonic() + 1
    while time.monotonic() < deadline:
        pass

async def command():
    task = asyncio.create_task(busy())
    await asyncio.sleep(30)

stopping.raise_on_sigterm()
asyncio.run(command())
"""


def _python(script: str) -> subprocess.CompletedProcess[str]:
    """The script run by a fresh interpreter from the project's root: its exit code and what it printed."""
    return subprocess.run(
        [sys.executable, "-c", script], cwd=PROJECT, capture_output=True, text=True, timeout=60, check=False
    )


def test_a_sigterm_that_lands_in_a_background_task_ends_the_command_without_a_traceback() -> None:
    # A plain BaseException raised in a task's step stays in that task (asyncio re-raises only SystemExit and
    # KeyboardInterrupt): the SIGTERM was lost, with a traceback, and `predigest watch` ensuring its topics or a
    # `predigest backfill` went on as if it had not come. Then the task kept the exception, unread: asyncio
    # logged `Task exception was never retrieved` and its traceback at the exit.
    started = time.monotonic()
    done = _python(IN_A_BACKGROUND_TASK)
    assert (done.returncode, done.stderr) == (128 + signal.SIGTERM, "")
    assert time.monotonic() - started < 20  # not the main task's 30 s sleep


# A background task that takes the SIGTERM as its own stop (catches it) and then fails with a fault of its own.
TAKEN_THEN_FAILED = """
import asyncio, gc, os, signal, threading, time
from streams import stopping

async def busy():
    try:
        deadline = time.monotonic() + 1
        while time.monotonic() < deadline:
            pass
    except SystemExit:
        pass
    raise ValueError("the task's own fault")

async def command():
    task = asyncio.create_task(busy())
    threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGTERM)).start()
    await asyncio.sleep(1.5)
    del task
    gc.collect()

stopping.raise_on_sigterm()
asyncio.run(command())
"""


def test_a_task_s_own_exception_after_it_took_the_sigterm_is_still_reported() -> None:
    # The SIGTERM's exception is marked read, not every exception of the task it landed in: this one, which
    # nothing awaited, was silently dropped (no `Task exception was never retrieved`, no traceback).
    done = _python(TAKEN_THEN_FAILED)
    assert done.returncode == 0
    assert "Task exception was never retrieved" in done.stderr
    assert "ValueError: the task's own fault" in done.stderr


def test_a_sigterm_before_the_command_s_try_exits_143_without_a_traceback() -> None:
    # Between the handler's install and `main`'s try (arguments parsed, logging set up) it was a traceback, exit 1.
    code = "import os, signal\nfrom streams import stopping\nstopping.raise_on_sigterm()\n"
    code += "os.kill(os.getpid(), signal.SIGTERM)\nimport time\ntime.sleep(5)\n"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=PROJECT, capture_output=True, text=True, timeout=60
    )
    assert (done.returncode, done.stderr) == (128 + signal.SIGTERM, "")


def test_an_interrupted_query_is_the_signal_only_after_one_was_raised(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # DuckDB's "Query interrupted" has no cause: the signal our handler raised is what the operator sent.
    interrupted = RuntimeError("Query interrupted")
    monkeypatch.setattr("streams.stopping._RAISED", [])
    assert stopping.signal_behind(interrupted) is None  # no signal came: an error, as it is
    monkeypatch.setattr("streams.stopping._RAISED", [signal.SIGTERM])
    assert stopping.signal_behind(interrupted) == signal.SIGTERM
    assert stopping.signal_behind(RuntimeError("another failure")) is None


# While a backfill's bar is live, sys.stderr is rich's proxy: a second signal that lands inside its write to the
# terminal finds every write to stderr refused ("reentrant call"), the logging handler's and its error report's.
SECOND_SIGNAL_INSIDE_A_WRITE = """
import asyncio, io, logging, os, signal, sys
from streams import stopping

class Reentered(io.TextIOBase):
    def write(self, text):
        raise RuntimeError("reentrant call inside <_io.BufferedWriter name='<stderr>'>")

async def command():
    stopping.install_stop(asyncio.Event(), again_exits=True, state=stopping.Stopping(signum=signal.SIGTERM))
    logging.basicConfig(stream=Reentered(), level=logging.INFO)
    sys.stderr = Reentered()
    os.kill(os.getpid(), signal.SIGINT)
    await asyncio.sleep(10)

asyncio.run(command())
"""


def test_a_second_signal_inside_a_write_to_stderr_still_exits_with_its_line() -> None:
    # Before: the hard exit's log line raised "RuntimeError: reentrant call" out of the handler (logging's own
    # error report wrote to the same stderr), and `predigest backfill` exited 1 with a traceback (a fresh clone's
    # test_backfill_cli, the second signal while the bar is drawn).
    done = _python(SECOND_SIGNAL_INSIDE_A_WRITE)
    assert done.returncode == 128 + signal.SIGINT, done.stderr[-500:]
    assert "SIGINT again: exiting now" in done.stderr
