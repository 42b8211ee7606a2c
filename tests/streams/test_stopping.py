"""A SIGTERM before a command has installed its own handler (`stopping.raise_on_sigterm`): it ends the command
wherever it lands, with 143, as a Ctrl-C ends it with 130."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time

import pytest

from streams import stopping
from streams.errors import TerminatedError
from tests.conftest import PROJECT


async def _signalled_in_a_background_task() -> None:
    async def busy() -> None:
        os.kill(os.getpid(), signal.SIGTERM)
        deadline = time.monotonic() + 1
        # The handler runs here, in this task's step (as in aiokafka's reader or sender).
        while time.monotonic() < deadline:
            pass

    task = asyncio.create_task(busy())
    await asyncio.sleep(0.5)
    assert task.done()


def test_a_sigterm_that_lands_in_a_background_task_still_ends_the_command() -> None:
    # A plain BaseException raised in a task's step stays in that task (asyncio re-raises only SystemExit and
    # KeyboardInterrupt): the SIGTERM was lost, with a traceback, and `predigest watch` ensuring its topics or a
    # `predigest backfill` went on as if it had not come.
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    stopping.raise_on_sigterm()
    try:
        with pytest.raises(TerminatedError) as raised:
            asyncio.run(_signalled_in_a_background_task())
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    assert raised.value.code == 128 + signal.SIGTERM


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
