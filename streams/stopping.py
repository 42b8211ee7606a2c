"""SIGINT/SIGTERM stop a command within seconds, and what it started with it: the signal sets the stop event, a
process still alive `grace` seconds later (or, where asked, at a second signal) exits hard, and a child started
with `--parent-pid` dies with its parent even when that parent is SIGKILLed."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import logging
import os
import signal
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from types import FrameType
from typing import Any, TypeVar

from streams.errors import StoppedBySignalError, TerminatedError

log = logging.getLogger(__name__)

STOP_GRACE_SECONDS = 10.0
# A worker's own clean stop after SIGTERM (batches taken handled, the state checkpointed, its WAL gone) before it
# exits hard: what whoever stops a worker must wait (`predigest once`/`run`, compose's stop_grace_period).
WORKER_STOP_SECONDS = 15.0
PARENT_CHECK_SECONDS = 1.0
_PR_SET_PDEATHSIG = 1
T = TypeVar("T")


@dataclass
class Stopping:
    """The signal that asked the command to stop (None while none did), what a hard exit does first (kill a
    child it started: set once the child runs), and the hard exit's timer once a signal armed it."""

    signum: int | None = None
    before_exit: Callable[[], None] | None = None
    timer: threading.Timer | None = None
    disarmed: bool = False
    # Held by a firing timer from its check of `disarmed` to its exit: one already past `cancel` exits nothing.
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def disarm(self) -> None:
        """The stop the timer bounds is over (`predigest run`'s worker stopped): no hard exit at its end, nor at a
        later first signal; what the command does next has its own bound (the local broker's stop). A second
        signal still exits at once."""
        with self.lock:
            self.disarmed = True
        if self.timer is not None:
            self.timer.cancel()


# The signals whose exception `raise_on_sigterm`'s handler raised: DuckDB, checking for signals during a query in
# the main thread, swallows that exception and raises RuntimeError("Query interrupted") with no cause instead.
_RAISED: list[int] = []
_QUERY_INTERRUPTED = "Query interrupted"


def raise_on_signals() -> None:
    """Until a command installs its own handlers, SIGINT raises KeyboardInterrupt (Python's handler, over one that
    `streams.launch` set; an ignored SIGINT stays ignored) and SIGTERM TerminatedError (`raise_on_sigterm`)."""
    if sigint_answered():
        signal.signal(signal.SIGINT, signal.default_int_handler)
    raise_on_sigterm()


def sigint_answered() -> bool:
    """False in a process started with SIGINT ignored (`cmd &` in a script, a supervisor): a Ctrl-C is meant for
    the terminal's foreground job, and every handler here leaves it ignored, as Python itself does."""
    return signal.getsignal(signal.SIGINT) is not signal.SIG_IGN


def raise_on_sigterm() -> None:
    """Until a command installs its own handler, SIGTERM raises TerminatedError, as SIGINT raises KeyboardInterrupt:
    the command stops what it started and says so, where it died silently with 143. Remembered for `signal_behind`.
    SIGINT keeps Python's handler: asyncio.run installs its own only over that one, and its Ctrl-C cancels the main
    task, so a backfill's producer and ledger close as they should."""

    def on_signal(signum: int, frame: FrameType | None) -> None:
        _RAISED.append(signum)
        raised = TerminatedError()
        _read_when_done(raised)
        raise raised

    signal.signal(signal.SIGTERM, on_signal)


def _read_when_done(raised: TerminatedError) -> None:
    """The asyncio task this handler raises into (if any) keeps the exception, which nothing reads: asyncio would
    log it at exit as `Task exception was never retrieved`, with a traceback. Read once done (asyncio.run's close
    runs the loop again, and the callback with it), if the task ended with it."""
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no loop runs in this thread
        return
    if task is not None:
        task.add_done_callback(lambda done: _read_if_raised(done, raised))


def _read_if_raised(done: asyncio.Future[Any], raised: TerminatedError) -> None:
    # Looked at without reading it (`exception()` would): a task that took the signal and failed later, with its
    # own exception, keeps asyncio's report of it. `_exception` is both asyncio implementations' (C and Python).
    if not done.cancelled() and getattr(done, "_exception", None) is raised:
        done.exception()


def signal_behind(exc: BaseException) -> int | None:
    """The signal that stopped the command with `exc`: its own exception, or DuckDB's "Query interrupted" after
    `raise_on_sigterm`'s handler raised; None for anything else (an interrupted query no signal explains)."""
    if isinstance(exc, TerminatedError):
        return signal.SIGTERM
    if isinstance(exc, KeyboardInterrupt):
        return signal.SIGINT
    if isinstance(exc, RuntimeError) and str(exc) == _QUERY_INTERRUPTED and _RAISED:
        return _RAISED[-1]
    return None


def install_stop(
    stop: asyncio.Event,
    grace: float = STOP_GRACE_SECONDS,
    before_exit: Callable[[], None] | None = None,
    *,
    again_exits: bool = False,
    state: Stopping | None = None,
    doing: Callable[[], str] | None = None,
) -> Stopping:
    """Set `stop` on SIGINT/SIGTERM; exit with 128 + the signal if the process is still running `grace` s later
    (its line saying what the stop was `doing` then), or with `again_exits` at a second signal (an operator's
    second Ctrl-C: no more waiting). `state`, when given, is the one filled in (a caller that disarms the timer
    after the command's own stop).

    A Python-level handler, not the loop's: it runs in the main thread even while the loop is blocked in a
    system call (which the signal interrupts), where a loop callback would never run. Everything the watcher
    has not acknowledged is published again at the next start, so the hard exit loses nothing.
    """
    loop = asyncio.get_running_loop()
    if state is None:
        state = Stopping()
    if before_exit is not None:
        state.before_exit = before_exit
    arm = _hard_exit_timer(grace, state, doing)

    def on_signal(signum: int, frame: FrameType | None) -> None:
        if again_exits and state.signum is not None:
            _exit_hard(state, signum, f"{signal.Signals(signum).name} again: exiting now")
        state.signum = state.signum or signum
        with contextlib.suppress(RuntimeError):  # the loop is closed already: nothing left to stop
            loop.call_soon_threadsafe(stop.set)
        arm(signum)

    for sig in _answered():
        signal.signal(sig, on_signal)
    return state


async def until_stopped(work: Awaitable[T], stop: asyncio.Event, state: Stopping) -> T:
    """`work`'s result, unless a signal sets `stop` first: then `work` is cancelled, so that its `finally` blocks
    stop what it started, and StoppedBySignalError is raised."""
    task = asyncio.ensure_future(work)
    stopped = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({task, stopped}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopped.cancel()
    if not task.done():
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        raise StoppedBySignalError(state.signum or signal.SIGTERM)
    return task.result()


def hard_exit_after_signal(grace: float, doing: Callable[[], str] | None = None) -> None:
    """For a process whose event loop handles SIGINT/SIGTERM itself (the Faust worker): the loop still stops it
    gracefully, and if it is still running `grace` s later (its loop busy in a long computation) it exits, its
    line saying what the stop was `doing` then.

    The loop is told through the wakeup fd, which the C-level handler writes whatever the Python-level one is.
    """
    arm = _hard_exit_timer(grace, Stopping(), doing)
    for sig in _answered():
        previous = signal.getsignal(sig)

        def on_signal(signum: int, frame: FrameType | None, previous: Any = previous) -> None:
            arm(signum)
            if callable(previous):
                previous(signum, frame)

        signal.signal(sig, on_signal)


def _answered() -> tuple[int, ...]:
    return (signal.SIGINT, signal.SIGTERM) if sigint_answered() else (signal.SIGTERM,)


def _hard_exit_timer(
    grace: float, state: Stopping, doing: Callable[[], str] | None = None
) -> Callable[[int], None]:
    armed = threading.Event()

    def give_up(signum: int) -> None:
        step = f" ({doing()})" if doing is not None else ""
        why = f"still running {grace:.0f}s after {signal.Signals(signum).name}{step}: exiting now"
        with state.lock:
            if not state.disarmed:
                _exit_hard(state, signum, why)

    def arm(signum: int) -> None:
        if not armed.is_set() and not state.disarmed:
            armed.set()
            timer = threading.Timer(grace, give_up, args=(signum,))
            timer.daemon = True  # a process that stopped in time exits without waiting for it
            state.timer = timer
            timer.start()

    return arm


def _exit_hard(state: Stopping, signum: int, why: str) -> None:
    """Exit with 128 + `signum` now, after `state.before_exit` (a child killed), saying `why` in one line."""
    line = f"{why} (unacknowledged files are sent again at the next start)"
    try:
        try:
            log.error("%s", line)
        except Exception:  # a signal inside a write to stderr: "reentrant call" (rich's bar)
            os.write(2, f"ERROR {line}\n".encode())
        if state.before_exit is not None:
            state.before_exit()
    finally:
        os._exit(128 + signum)


def exit_with_parent(parent: int) -> None:
    """Die with the process that started this one, even when it is SIGKILLed and cannot stop its children.

    Linux kills this process when its parent dies (PR_SET_PDEATHSIG); elsewhere a thread watches the parent.
    """
    libc_name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(libc_name, use_errno=True)
        done = int(libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        done = False
    if os.getppid() != parent:  # it died before we asked
        os._exit(128 + signal.SIGKILL)
    if not done:

        def watch() -> None:
            while os.getppid() == parent:
                time.sleep(PARENT_CHECK_SECONDS)
            os._exit(128 + signal.SIGKILL)

        threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()
