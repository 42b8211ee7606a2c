"""Agent steps that must finish before their record is acknowledged: retry, else stop without acking.

Faust acknowledges a record when the agent's loop moves on, even when the body raised (the stream's
`finally`, faust-streaming #315, robinhood/faust #604), and then commits past it. A step that keeps
failing therefore ends the process on the spot: the offset is not committed and Kafka redelivers the
record to the restarted worker; every write downstream is idempotent, so the replay is harmless. A batch's task
that fails otherwise (a bug outside the steps must_finish runs) stops it the same way, as soon as it fails.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Awaitable, Callable
from typing import Any, NoReturn, TypeVar

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential,
)

from processors.errors import PROCESS_EXITS

log = logging.getLogger(__name__)

T = TypeVar("T")
Halt = Callable[[int], NoReturn]  # how the worker stops: `halt`, or what a test records instead

EXIT_CODE = 75  # EX_TEMPFAIL: the supervisor (compose `restart:`) starts the worker again
ATTEMPTS = 5
BACKOFF_SECONDS = 0.5
MAX_BACKOFF_SECONDS = 8.0


def halt(code: int = EXIT_CODE) -> NoReturn:
    """End the process now: no `finally`, so no acknowledgement and no offset commit."""
    for handler in logging.getLogger().handlers:
        handler.flush()
    os._exit(code)


# Never a failure of the work: the worker stopping (the stop's cancellation; a revocation waits) or the process
# exiting. Any other BaseException is (a Rust panic, processors.errors.PROCESS_EXITS): Faust would crash the agent,
# the worker left up.
PASSES_THROUGH: tuple[type[BaseException], ...] = (asyncio.CancelledError, *PROCESS_EXITS)


def stop_unless_stopping(what: str, exc: BaseException, stop: Halt) -> None:
    """An agent loop's exception: re-raised when the worker is stopping (`PASSES_THROUGH`), else `stop_worker`."""
    if isinstance(exc, PASSES_THROUGH):
        raise exc
    stop_worker(what, exc, stop)


def stop_worker(what: str, exc: BaseException, stop: Halt) -> NoReturn:
    """One CRITICAL line, then the worker's end (`stop`): what `what` was doing stays unacked, and Kafka delivers
    it again after the restart."""
    log.critical(
        "%s failed: %s; stopping the worker (exit %d) without acknowledging its records, which Kafka will "
        "deliver again after the restart; if it fails again, fix the cause this traceback shows",
        what,
        exc,
        EXIT_CODE,
        exc_info=exc,
    )
    stop(EXIT_CODE)


def stop_on_failure(what: str, stop: Halt) -> Callable[[asyncio.Task[Any]], None]:
    """A done-callback for a batch's task: its failure stops the worker at once, the batch unacked (a quiet stream
    brings no next batch whose turn in the agent's loop would raise it)."""

    def check(task: asyncio.Task[Any]) -> None:
        if not task.cancelled() and (exc := task.exception()) is not None:
            stop_worker(what, exc, stop)

    return check


async def retried(
    step: Callable[[], Awaitable[T]],
    what: str,
    *,
    attempts: int = ATTEMPTS,
    backoff: float = BACKOFF_SECONDS,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> T:
    """Run `step` until it succeeds, `attempts` times with doubling back-off; then raise its last exception."""

    def retrying(state: RetryCallState) -> None:
        log.warning(
            "%s failed (attempt %d of %d): %s; retrying in %.1fs",
            what,
            state.attempt_number,
            attempts,
            state.outcome.exception() if state.outcome else None,
            state.next_action.sleep if state.next_action else 0.0,
        )

    # Exception only: a cancellation (the worker stopping) is a BaseException and goes through.
    retry = AsyncRetrying(
        stop=stop_after_attempt(attempts),
        wait=wait_exponential(multiplier=backoff, max=MAX_BACKOFF_SECONDS),
        retry=retry_if_exception_type(Exception),
        sleep=sleep,
        before_sleep=retrying,
        reraise=True,
    )
    result: T = await retry(step)
    return result


async def must_finish(
    step: Callable[[], Awaitable[T]],
    what: str,
    *,
    attempts: int = ATTEMPTS,
    backoff: float = BACKOFF_SECONDS,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    stop: Halt = halt,
) -> T:
    """Run `step` until it succeeds, `attempts` times with doubling back-off; then stop the process."""
    try:
        return await retried(step, what, attempts=attempts, backoff=backoff, sleep=sleep)
    except Exception as exc:
        log.critical(
            "%s failed %d times; stopping the worker without acknowledging the record, "
            "which Kafka will deliver again after the restart",
            what,
            attempts,
            exc_info=exc,
        )
        stop(EXIT_CODE)


async def to_thread_to_the_end(step: Callable[[], T], what: str) -> T:
    """`step` in a thread; a cancellation (the worker stopping) waits for it to end first, so nothing acks or
    closes what it writes (a batch's records, the state) before it is done, and nothing runs beside it."""
    task = asyncio.ensure_future(asyncio.to_thread(_let_go(step)))
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        while not task.done():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait({task})
        if not task.cancelled() and (exc := task.exception()) is not None:
            # Not retried now: the next start's catch-up applies what the state lacks, or vacuums it.
            log.error("%s, which the worker's stop waited for, failed", what, exc_info=exc)
        raise


def _let_go(step: Callable[[], T]) -> Callable[[], T]:
    """`step`, dropped by its thread as it returns: the executor's thread holds what it ran (a batch's rows) until its
    `del work_item`, a few bytecodes after the result is set, but the event loop it wakes often takes the GIL first
    (~1 in 10 in a loop of 200): the task awaiting it may have ended, and a young collection then traversed them."""
    held = [step]

    def run() -> T:
        return held.pop()()

    return run
