"""Parsing off the event loop: worker processes route chunks of a raw batch (processors.parse_stage.route_values).

Parsing is pure Python (~5-8 ms per note), so a thread would hold the GIL the agents need; a process uses
the other core and leaves the event loop free for the window agent, Kafka and the heartbeats.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from datetime import UTC, datetime
from multiprocessing import connection
from multiprocessing.context import SpawnContext, SpawnProcess
from typing import ParamSpec, TypeVar

from processors.parse_stage import Routed, RouteParams, refuse_value, route_value, route_values
from sinks.clock import SYSTEM_CLOCK, Clock
from streams.parse_process import HELD, Progress, Route, route_chunk, start_process

log = logging.getLogger(__name__)

CHUNKS_PER_PROCESS = 4
CHUNK_MIN = 8
NOTE_SECONDS = 30.0  # a 4 MiB note parses in a few seconds: a process this late on one note is stuck
POLL_SECONDS = 0.2  # how often the notes in progress are looked at
Values = Sequence[tuple[bytes, int | None]]
P = ParamSpec("P")
T = TypeVar("T")


@dataclass
class _Attempt:
    """What one pass of the pool over some notes of a batch came to."""

    routed: dict[int, Routed] = field(default_factory=dict)
    hung: set[int] = field(default_factory=set)  # ran longer than note_seconds: rejected
    suspects: set[int] = field(default_factory=set)  # in progress when a process died: tried again alone
    faulted: bool = False  # the pool broke or was killed under it


class ParsePool:
    """`processes` worker processes (spawned: the worker's threads and DuckDB must not be forked); 0 parses inline.

    A note that hangs its process or kills it costs only itself: the processes say which note they start, so
    the one past `note_seconds` is known and rejected, and the rest of the batch goes through a fresh pool at
    once (it waited ~90 s behind a 30 s timeout and a note-by-note retry before).

    Batches may be routed at once (the next one's chunks queue behind this one's); after a fault, only the
    oldest batch still routing tells which notes were suspects, and the others wait for their turn (`_turn`).
    """

    def __init__(
        self,
        params: RouteParams,
        processes: int,
        note_seconds: float = NOTE_SECONDS,
        route: Route = route_values,  # the function the processes run; tests inject one that crashes
        clock: Clock = SYSTEM_CLOCK,
        nice: int = 0,
    ) -> None:
        self._clock = clock
        self._nice = nice
        self._params = params
        self._processes = processes
        self._note_seconds = note_seconds
        self._route = route
        self._pool: ProcessPoolExecutor | None = None
        self._progress: Progress | None = None
        self._attempts = 0
        self._routes: dict[int, asyncio.Future[None]] = {}  # the routes in progress, oldest first: their ends
        self._using: dict[int, ProcessPoolExecutor] = {}  # the attempts in progress and their pools
        self._calls = 0

    @property
    def params(self) -> RouteParams:
        return self._params

    def _executor(self) -> tuple[ProcessPoolExecutor, Progress]:
        if (pool := self._pool) is not None and pool._broken:
            # Under an attempt, the death is that attempt's to say, with its suspects, at its next poll (0.2 s).
            if all(used is not pool for used in self._using.values()):
                log.warning("a parse process died while idle; the next batch goes to a fresh pool")
            self.close(kill=True)
        if self._pool is None or self._progress is None:
            self._pool, self._progress = _new_pool(self._processes, self._nice)
        return self._pool, self._progress

    async def start(self) -> None:
        """Start the processes now (they take a second to import): the first note should not wait for them."""
        if self._processes:
            loop = asyncio.get_running_loop()
            pool, epoch = (
                self._executor()[0],
                datetime.fromtimestamp(0, UTC),
            )  # routes nothing: any time will do
            calls = [
                loop.run_in_executor(pool, route_chunk, self._route, 0, [], self._params, epoch)
                for _ in range(self._processes)
            ]
            await asyncio.gather(*calls)

    async def route(self, values: Values, seen_at: datetime) -> list[Routed]:
        """Each (raw value, raw offset) routed, in order."""
        if self._processes == 0:
            out = []
            for value, offset in values:
                out.append(route_value(value, self._params, seen_at, offset))
                await asyncio.sleep(0)  # one note at a time, so the window agent is never starved
            return out
        self._calls += 1
        call = self._calls
        self._routes[call] = asyncio.get_running_loop().create_future()
        try:
            return await self._route_all(call, values, seen_at)
        finally:
            self._routes.pop(call).set_result(None)

    async def _route_all(self, call: int, values: Values, seen_at: datetime) -> list[Routed]:
        routed: dict[int, Routed] = {}
        todo = list(range(len(values)))
        while todo:
            attempt = await self._attempt(values, todo, seen_at)
            routed.update(attempt.routed)
            for index in attempt.hung:  # its own note ran too long: no other batch's fault
                routed[index] = self._refuse(values[index], seen_at, "hung")
            if attempt.faulted and next(iter(self._routes)) != call:
                # A process of the shared pool died: the note that killed it may be an older batch's, whose
                # notes in progress are the suspects. Ours are routed again once that batch is done.
                await self._turn(call)
                todo = [i for i in todo if i not in routed]
                continue
            for index in sorted(attempt.suspects):
                # Alone in a pool of its own: the note that kills its process again is the one that did.
                alone = await self._alone(values, index, seen_at)
                if index in alone.routed:
                    routed[index] = alone.routed[index]
                else:
                    routed[index] = self._refuse(values[index], seen_at, "hung" if alone.hung else "died")
            todo = [i for i in todo if i not in routed]
        return [routed[i] for i in range(len(values))]

    async def _turn(self, call: int) -> None:
        """Until every route older than `call` is done (their suspects tried)."""
        while (oldest := next(iter(self._routes))) != call:
            await asyncio.shield(self._routes[oldest])

    async def _alone(self, values: Values, index: int, seen_at: datetime) -> _Attempt:
        """One note routed in a process of its own, beside the shared pool that other batches may be using."""
        pool, progress = _new_pool(1, self._nice)
        try:
            return await self._attempt(values, [index], seen_at, (pool, progress))
        finally:
            _shut(pool, kill=True)

    def _refuse(self, item: tuple[bytes, int | None], seen_at: datetime, what: str) -> Routed:
        log.error("a parse process %s on one note; it is rejected and the rest of its batch parsed", what)
        return refuse_value(item[0], self._params, seen_at, item[1], f"its parse process {what}")

    def _chunks(self, todo: Sequence[int]) -> list[list[int]]:
        # A few chunks per process, so that one slow chunk does not leave the other processes idle.
        size = max(CHUNK_MIN, -(-len(todo) // (self._processes * CHUNKS_PER_PROCESS)))
        out: list[list[int]] = []
        for i in todo:  # never across a note routed elsewhere: a chunk's frames hold consecutive notes
            if out and len(out[-1]) < size and out[-1][-1] == i - 1:
                out[-1].append(i)
            else:
                out.append([i])
        return out

    async def _attempt(
        self,
        values: Values,
        todo: Sequence[int],
        seen_at: datetime,
        own: tuple[ProcessPoolExecutor, Progress] | None = None,
    ) -> _Attempt:
        """Route `todo` through the pool (or `own`) until done, or until a note hangs or a process dies (pool
        killed)."""
        loop = asyncio.get_running_loop()
        pool, progress = own or self._executor()
        self._attempts += 1
        token = self._attempts  # what a process says about an earlier batch is no news about this one
        futures = {
            loop.run_in_executor(
                pool,
                route_chunk,
                self._route,
                token,
                [(i, *values[i]) for i in chunk],
                self._params,
                seen_at,
            ): chunk
            for chunk in self._chunks(todo)
        }
        attempt, started = _Attempt(), dict[int, tuple[int, float]]()  # process → (note, since)
        pending: set[asyncio.Future[list[Routed]]] = set(futures)
        self._using[token] = pool
        try:
            while pending:
                done, pending = await asyncio.wait(pending, timeout=POLL_SECONDS)
                now, said = self._clock.monotonic(), progress.read()
                for pid, about, index in said:
                    if about == token and started.get(pid, (-1, now))[0] != index:
                        started[pid] = (index, now)  # since first seen on it
                broken = False
                for fut in done:
                    if fut.cancelled():  # another route's attempt killed the pool before this chunk started
                        broken = True
                        continue
                    try:
                        attempt.routed.update(zip(futures[fut], fut.result(), strict=True))
                    except BrokenProcessPool:
                        broken = True
                broken = broken or _lost(pool)
                running = {i: since for i, since in started.values() if i not in attempt.routed}
                attempt.hung = {i for i, since in running.items() if now - since > self._note_seconds}
                if broken or attempt.hung:
                    # The notes in progress when a process died are its suspects (none said: `_unannounced`).
                    if broken and not attempt.hung:
                        unfinished = {i for i in todo if i not in attempt.routed}
                        attempt.suspects = set(running) or _unannounced(unfinished, said, token)
                    log.warning(
                        "a parse process %s; the rest of its batch goes to a fresh pool", _what(broken)
                    )
                    attempt.faulted = True
                    if self._pool is pool:  # not replaced already by another route's attempt
                        self.close(kill=True)
                    break
        finally:
            del self._using[token]
            # Chunks left to a pool being killed (a fault) or to go on (the worker's stop cancelling the batch):
            # their notes not begun are skipped, and their outcome (BrokenProcessPool) is nobody's news, which
            # asyncio would log as an exception never retrieved. Not cancelled from here: the pool's thread,
            # failing the chunks of a pool it finds broken, raised on one cancelled meanwhile and logged a
            # traceback (CPython gh-107219, unfixed in 3.11); and those already queued to a process would run.
            if pending:
                progress.drop(token)
            for fut in pending:
                fut.add_done_callback(_unheeded)
        return attempt

    def close(self, kill: bool = False) -> None:
        """Stop the processes; with kill, also one still busy (hung) instead of letting it finish."""
        pool, self._pool, self._progress = self._pool, None, None
        if pool is not None:
            _shut(pool, kill)


class _Pool(ProcessPoolExecutor):
    """Its processes start with SIGINT and SIGTERM blocked, until their initializer ignores them: a Ctrl-C while
    they imported (~0.3 s) killed one, with a traceback, and the worker's pool with it."""

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        # Every process starts in here, in the caller's thread (spawn: fork and exec keep its signal mask), and
        # so does the pool's own thread, which keeps that mask; the worker's signal waits or goes to another thread.
        held = signal.pthread_sigmask(signal.SIG_BLOCK, HELD)
        try:
            return super().submit(fn, *args, **kwargs)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)


class _Process(SpawnProcess):
    def terminate(self) -> None:
        # The pool ends its other processes this way once one died (their queue's lock may be held by the dead
        # one, an idle process waiting on it forever); they ignore SIGTERM.
        self.kill()


class _Spawn(SpawnContext):
    Process = _Process


def _new_pool(processes: int, nice: int) -> tuple[ProcessPoolExecutor, Progress]:
    context = _Spawn()
    progress = Progress.new(context, processes)
    pool = _Pool(
        max_workers=processes,
        mp_context=context,
        initializer=start_process,
        initargs=(os.getpid(), progress, nice),
    )
    return pool, progress


def _shut(pool: ProcessPoolExecutor, kill: bool) -> None:
    if kill:
        for process in list((pool._processes or {}).values()):  # no public way before Python 3.14
            process.kill()
        if pool._result_queue is not None:
            # The pool's thread may be reading what a dead process had half sent (`_lost`), waiting for the rest
            # forever, and the interpreter's exit with it. Our end closed, the processes' ends close as they die.
            pool._result_queue._writer.close()  # type: ignore[attr-defined]
    pool.shutdown(wait=False, cancel_futures=True)


def _lost(pool: ProcessPoolExecutor) -> bool:
    """Whether a process of `pool` ended (or the pool was shut): the pool's thread never says so when the process
    was killed as it sent a result, stuck reading the rest, and its chunks never end."""
    processes = pool._processes
    return processes is None or bool(connection.wait([p.sentinel for p in processes.values()], timeout=0))


def _unannounced(unfinished: set[int], said: list[tuple[int, int, int]], token: int) -> set[int]:
    """The suspects of an attempt none of whose notes was in progress when a process died: none when the board shows
    a process on another batch's note (the killer's, or an idle process's), else all, one died before saying any."""
    return set() if any(about not in (0, token) for _, about, _ in said) else unfinished


def _unheeded(chunk: asyncio.Future[list[Routed]]) -> None:
    """A chunk no route waits for any more: its outcome read, so that asyncio does not log it."""
    if not chunk.cancelled():
        chunk.exception()


def _what(broken: bool) -> str:
    return "died" if broken else "hung"
