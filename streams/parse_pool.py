"""Parsing off the event loop: worker processes route chunks of a raw batch (processors.ingest.route_values).

Parsing is pure Python (~5-8 ms per note), so a thread would hold the GIL the agents need; a process uses
the other core and leaves the event loop free for the window agent, Kafka and the heartbeats.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from datetime import UTC, datetime

from processors.ingest import Routed, RouteParams, refuse_value, route_value, route_values

log = logging.getLogger(__name__)

ORPHAN_CHECK_SECONDS = 1.0
CHUNKS_PER_PROCESS = 4
CHUNK_MIN = 8
NOTE_SECONDS = 30.0  # a 4 MiB note parses in a few seconds: a process this late on one note is stuck
BATCH_NOTE_SECONDS = 1.0  # and ~7 ms is usual: a batch gets this much more per note and process
Route = Callable[[Sequence[tuple[bytes, int | None]], RouteParams, datetime], list[Routed]]


def _what(exc: BaseException) -> str:
    return "hung" if isinstance(exc, TimeoutError) else "died"


def _exit_with_parent(parent: int) -> None:
    """In each parse process: exit once the worker is gone (a SIGKILLed worker cannot stop its pool)."""
    # A Ctrl-C reaches the whole process group: the worker stops its pool, which must not die mid-note with
    # a KeyboardInterrupt traceback in the operator's terminal.
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(ORPHAN_CHECK_SECONDS)
        os._exit(0)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


class ParsePool:
    """`processes` worker processes (spawned: the worker's threads and DuckDB must not be forked); 0 parses inline."""

    def __init__(
        self,
        params: RouteParams,
        processes: int,
        note_seconds: float = NOTE_SECONDS,
        route: Route = route_values,  # the function the processes run; tests inject one that crashes
    ) -> None:
        self._params = params
        self._processes = processes
        self._note_seconds = note_seconds
        self._route = route
        self._pool: ProcessPoolExecutor | None = None

    def _executor(self) -> ProcessPoolExecutor:
        if self._pool is None:
            self._pool = ProcessPoolExecutor(
                max_workers=self._processes,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_exit_with_parent,
                initargs=(os.getpid(),),
            )
        return self._pool

    async def start(self) -> None:
        """Start the processes now (they take a second to import): the first note should not wait for them."""
        if self._processes:
            loop = asyncio.get_running_loop()
            pool, epoch = self._executor(), datetime.fromtimestamp(0, UTC)  # routes nothing: any time will do
            calls = [
                loop.run_in_executor(pool, route_values, [], self._params, epoch)
                for _ in range(self._processes)
            ]
            await asyncio.gather(*calls)

    async def route(self, values: Sequence[tuple[bytes, int | None]], seen_at: datetime) -> list[Routed]:
        """Each (raw value, raw offset) routed, in order."""
        if self._processes == 0:
            out = []
            for value, offset in values:
                out.append(route_value(value, self._params, seen_at, offset))
                await asyncio.sleep(0)  # one note at a time, so the window agent is never starved
            return out
        # A few chunks per process, so that one slow chunk does not leave the other processes idle.
        size = max(CHUNK_MIN, -(-len(values) // (self._processes * CHUNKS_PER_PROCESS)))
        chunks = [list(values[i : i + size]) for i in range(0, len(values), size)]
        loop = asyncio.get_running_loop()
        pool = self._executor()
        try:
            async with asyncio.timeout(self._timeout(len(values))):
                parts = await asyncio.gather(
                    *(loop.run_in_executor(pool, self._route, c, self._params, seen_at) for c in chunks)
                )
        except (BrokenProcessPool, TimeoutError) as exc:
            # A process died (OOM, a signal) or hung: find the note that does it, so that it alone is lost.
            log.warning("a parse process %s; parsing the batch note by note", _what(exc))
            self.close(kill=True)
            return await self._one_by_one(values, seen_at)
        return [r for part in parts for r in part]

    def _timeout(self, notes: int) -> float:
        return self._note_seconds + BATCH_NOTE_SECONDS * (notes - 1) / max(self._processes, 1)

    async def _one_by_one(
        self, values: Sequence[tuple[bytes, int | None]], seen_at: datetime
    ) -> list[Routed]:
        loop = asyncio.get_running_loop()
        out = []
        for value, offset in values:
            try:
                async with asyncio.timeout(self._timeout(1)):
                    part = await loop.run_in_executor(
                        self._executor(), self._route, [(value, offset)], self._params, seen_at
                    )
                out.append(part[0])
            except (BrokenProcessPool, TimeoutError) as exc:
                log.error("a parse process %s on one note; it is rejected", _what(exc))
                self.close(kill=True)
                out.append(
                    refuse_value(value, self._params, seen_at, offset, f"its parse process {_what(exc)}")
                )
        return out

    def close(self, kill: bool = False) -> None:
        """Stop the processes; with kill, also one still busy (hung) instead of letting it finish."""
        pool, self._pool = self._pool, None
        if pool is not None:
            if kill:
                for process in list(pool._processes.values()):  # no public way before Python 3.14
                    process.kill()
            pool.shutdown(wait=False, cancel_futures=True)
