"""`predigest run`'s second Ctrl-C: the worker is killed at once and the broker the run started, left running
(its stop waits up to 30 s), is named with the command that stops it."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest

from streams.oneshot import _kill_and_name_broker


def test_a_second_ctrl_c_kills_the_worker_and_names_the_broker_left_running(
    caplog: pytest.LogCaptureFixture,
) -> None:
    worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    with caplog.at_level(logging.WARNING):
        _kill_and_name_broker(worker)()
    assert worker.wait(timeout=5) != 0
    assert "`predigest kafka stop` stops it" in caplog.text
