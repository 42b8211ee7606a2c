"""A close/flush command whose answer keeps failing: retried with back-off (a transient cause passes), then
dead-lettered as `briefing_failed` so that the worker goes on with the next command, its offset committed.

Unless nothing could be briefed: a failure of the state's file (the sinks' `DuckFileError` family: locked, its
folder, damaged, another schema), of DuckDB's database or disk, of the OS, or a state that no longer answers a
count after the retries. Then the worker stops (exit 75) without acknowledging the command, and Kafka delivers it
again after the restart, as before. Anything else (a bug hit by some state, a processor's exception) is the
command's own: a restart would fail it again and stall every axis with it. So is running out of memory (an axis's
window too large for the limits) once the heap is collected and trimmed and the state's cache shed, the process can
allocate again (within its cgroup's limit too) and the state answers a count: dead-lettered as `briefing_memory`;
else the worker stops as for the state.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import traceback
from collections.abc import Awaitable, Callable
from pathlib import Path

import duckdb

from processors.dead_letters import Failure
from sinks.errors import DuckFileError, StateMemoryError
from streams.cgroup_memory import CgroupMemory, Cgroups
from streams.failstop import ATTEMPTS, BACKOFF_SECONDS, EXIT_CODE, PASSES_THROUGH, Halt, retried
from streams.heap import release_free_heap, resident_mib

log = logging.getLogger(__name__)

# The command's own window too large for DuckDB's limit or the process's memory: dead-lettered once the memory is
# back (`memory_back`), or the worker stops as for the state's failures below.
OUT_OF_MEMORY: tuple[type[BaseException], ...] = (MemoryError, duckdb.OutOfMemoryException, StateMemoryError)
# The state, the database, its disk or the OS: a briefing of any command would fail alike.
STOPS_THE_WORKER: tuple[type[BaseException], ...] = (
    DuckFileError,
    duckdb.IOException,
    duckdb.FatalException,
    OSError,
)
# What the process must be able to map again after a command ran out of memory: a batch of notes, the next
# command's briefing of a small axis (a mapping not touched: its pages cost nothing, so it fails only under an
# address-space limit or strict overcommit, where a MemoryError comes from; never under a container's limit, which
# is why the headroom under the cgroup's memory.max is read too).
HEADROOM_BYTES = 64 << 20
CGROUPS = Cgroups()


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
    shed: Callable[[], object],
    stop: Halt,
    backoff: float = BACKOFF_SECONDS,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    cgroups: Cgroups = CGROUPS,
) -> BaseException | None:
    """Run the answer `step` as `failstop.retried` does: None once it succeeds; its last exception when it failed
    every attempt on its own (to dead-letter); the worker stopped (`stop`) when nothing could be briefed (or the
    state's `count` of its documents fails too). Out of memory, the state's cache is `shed` before memory is judged
    (within the tightest of `cgroups`' limits)."""
    try:
        await retried(step, what, attempts=ATTEMPTS, backoff=backoff, sleep=sleep)
    # A Rust panic (PyO3's PanicException, a BaseException) is not retried (retried takes Exception only): it is
    # the command's own failure, as a bug's exception is.
    except BaseException as exc:
        if isinstance(exc, PASSES_THROUGH):
            raise
        if isinstance(exc, OUT_OF_MEMORY):
            usable = await memory_back(exc, count, shed, cgroups)
        else:
            usable = not isinstance(exc, STOPS_THE_WORKER) and await _answers(count)
        if not usable:
            log.critical(
                "%s failed %d times (%s): the state or the process cannot brief; stopping the worker (exit %d) "
                "without acknowledging the command, which Kafka will deliver again after the restart",
                what,
                ATTEMPTS,
                summary(exc),
                EXIT_CODE,
                exc_info=exc,
            )
            stop(EXIT_CODE)
        return exc
    return None


def failure_of(exc: BaseException) -> Failure:
    """What a command's dead letter carries when its answer failed every attempt: the reason and the one line."""
    return Failure("briefing_memory" if isinstance(exc, OUT_OF_MEMORY) else "briefing_failed", summary(exc))


async def memory_back(
    exc: BaseException, count: Callable[[], object], shed: Callable[[], object], cgroups: Cgroups
) -> bool:
    """After `exc` ran out of memory: whether the process can allocate again once what the failed answer held is
    collected, the state's cache `shed` and the heap trimmed, and the state still answers `count`."""
    _clear_frames(exc)
    gc.collect()
    shed_done = await _shed(shed)
    release_free_heap()
    try:
        bytes(HEADROOM_BYTES)  # calloc: mapped, not touched
    except MemoryError:
        log.error("the worker cannot allocate %d MiB after the heap was trimmed", HEADROOM_BYTES >> 20)
        return False
    limit = cgroups.tightest()
    if limit is not None and limit.headroom < HEADROOM_BYTES:
        log.error(
            "the worker's cgroup has %s: under %d MiB left after the %s and the heap trimmed",
            _figures(limit),
            HEADROOM_BYTES >> 20,
            "state's cache was shed" if shed_done else "state's cache could not be shed",
        )
        return False
    if not await _answers(count):
        return False
    log.info(
        "memory back after a command ran out of it: the worker's resident set is %s MiB%s",
        resident_mib(),
        "" if limit is None else f"; its cgroup has {_figures(limit)}",
    )
    return True


def _clear_frames(exc: BaseException) -> None:
    """Clear the frames of `exc` and of its causes: they hold the window (their lines stay known)."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        traceback.clear_frames(cause.__traceback__)
        cause = cause.__cause__ or cause.__context__


async def _shed(shed: Callable[[], object]) -> bool:
    """Ask the state to evict its cached blocks (in a thread: it waits for a store's transaction); whether it did
    (`StateStore.shed_cache` answers False while a read's cursor is open or DuckDB refuses)."""
    try:
        done = await asyncio.to_thread(shed)
    except Exception:  # the count that follows judges the state
        log.warning("the state could not shed its cache after a command ran out of memory", exc_info=True)
        return False
    if done is False:
        log.warning(
            "the state could not shed its cache after a command ran out of memory (a read's cursor was open, or "
            "DuckDB refused): the memory is judged with DuckDB's cache in it"
        )
        return False
    return True


def _figures(limit: CgroupMemory) -> str:
    """The cgroup's two figures (and the cache the kernel reclaims first) in MiB, for a log line."""
    return (
        f"memory.current {limit.current >> 20} MiB ({limit.reclaimable >> 20} MiB of it clean file cache) "
        f"of memory.max {limit.limit >> 20} MiB ({limit.path})"
    )


async def _answers(count: Callable[[], object]) -> bool:
    """Whether the state still answers `count` (in a thread: it waits for a store's transaction)."""
    try:
        await asyncio.to_thread(count)
    except Exception:
        log.exception("the state does not answer a count of its documents either")
        return False
    return True
