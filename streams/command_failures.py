"""A close/flush command whose answer keeps failing: retried with back-off (a transient cause passes), then
dead-lettered as `briefing_failed` so that the worker goes on with the next command, its offset committed.

Unless nothing could be briefed: a failure of the state's file (the sinks' `DuckFileError` family: locked, its
folder, damaged, another schema, out of memory), of DuckDB's database or disk, of the process (memory, the OS), or
a state that no longer answers a count after the retries. Then the worker stops (exit 75) without acknowledging the
command, and Kafka delivers it again after the restart, as before. Anything else (a bug hit by some state, a
processor's exception) is the command's own: a restart would fail it again and stall every axis with it.
"""

from __future__ import annotations

import asyncio
import logging
import traceback
from collections.abc import Awaitable, Callable
from pathlib import Path

import duckdb

from sinks.errors import DuckFileError
from streams.failstop import ATTEMPTS, BACKOFF_SECONDS, EXIT_CODE, PASSES_THROUGH, Halt, retried

log = logging.getLogger(__name__)

# The state, the database, its disk or the process: a briefing of any command would fail alike.
STOPS_THE_WORKER: tuple[type[BaseException], ...] = (
    DuckFileError,
    duckdb.IOException,
    duckdb.FatalException,
    duckdb.OutOfMemoryException,
    MemoryError,
    OSError,
)


def summary(exc: BaseException) -> str:
    """The exception in one line: its type, its message's first line, and where it was raised."""
    lines = str(exc).strip().splitlines()
    text = f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__
    frames = traceback.extract_tb(exc.__traceback__)
    if frames:
        last = frames[-1]
        text += f" (at {Path(last.filename).name}:{last.lineno} in {last.name})"
    return text[:500]


async def answer_or_fail(
    step: Callable[[], Awaitable[None]],
    what: str,
    *,
    count: Callable[[], object],
    stop: Halt,
    attempts: int = ATTEMPTS,
    backoff: float = BACKOFF_SECONDS,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> BaseException | None:
    """Run the answer `step` as `failstop.retried` does: None once it succeeds; its last exception when it failed
    every attempt on its own (to dead-letter); the worker stopped (`stop`) when nothing could be briefed (or the
    state's `count` of its documents fails too)."""
    try:
        await retried(step, what, attempts=attempts, backoff=backoff, sleep=sleep)
    # A Rust panic (PyO3's PanicException, a BaseException) is not retried (retried takes Exception only): it is
    # the command's own failure, as a bug's exception is.
    except BaseException as exc:
        if isinstance(exc, PASSES_THROUGH):
            raise
        if isinstance(exc, STOPS_THE_WORKER) or not await _answers(count):
            log.critical(
                "%s failed %d times (%s): the state or the process cannot brief; stopping the worker (exit %d) "
                "without acknowledging the command, which Kafka will deliver again after the restart",
                what,
                attempts,
                summary(exc),
                EXIT_CODE,
                exc_info=exc,
            )
            stop(EXIT_CODE)
        return exc
    return None


async def _answers(count: Callable[[], object]) -> bool:
    """Whether the state still answers `count` (in a thread: it waits for a store's transaction)."""
    try:
        await asyncio.to_thread(count)
    except Exception:
        log.exception("the state does not answer a count of its documents either")
        return False
    return True
