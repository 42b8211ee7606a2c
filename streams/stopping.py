"""SIGINT/SIGTERM stop a long-running command within seconds, even one whose loop is stuck: the signal sets the
stop event, and a process still alive `grace` seconds later exits hard."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import threading
from collections.abc import Callable
from types import FrameType

log = logging.getLogger(__name__)

STOP_GRACE_SECONDS = 10.0


def install_stop(
    stop: asyncio.Event,
    grace: float = STOP_GRACE_SECONDS,
    before_exit: Callable[[], None] | None = None,
) -> None:
    """Set `stop` on SIGINT/SIGTERM; exit with 128 + the signal if the process is still running `grace` s later.

    A Python-level handler, not the loop's: it runs in the main thread even while the loop is blocked in a
    system call (which the signal interrupts), where a loop callback would never run. Everything the watcher
    has not acknowledged is published again at the next start, so the hard exit loses nothing.
    """
    loop = asyncio.get_running_loop()
    armed = threading.Event()

    def give_up(signum: int) -> None:
        log.error(
            "still running %.0fs after %s: exiting now (unacknowledged files are sent again at the next start)",
            grace,
            signal.Signals(signum).name,
        )
        if before_exit is not None:
            before_exit()
        os._exit(128 + signum)

    def on_signal(signum: int, frame: FrameType | None) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed already: nothing left to stop
            loop.call_soon_threadsafe(stop.set)
        if not armed.is_set():
            armed.set()
            timer = threading.Timer(grace, give_up, args=(signum,))
            timer.daemon = True  # a process that stopped in time exits without waiting for it
            timer.start()

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, on_signal)
