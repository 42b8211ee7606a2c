"""Parsing off the event loop: worker processes route chunks of a raw batch (processors.ingest.route_values).

Parsing is pure Python (~5-8 ms per note), so a thread would hold the GIL the agents need; a process uses
the other core and leaves the event loop free for the window agent, Kafka and the heartbeats.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from datetime import UTC, datetime

from processors.ingest import Routed, RouteParams, route_value, route_values

log = logging.getLogger(__name__)

ORPHAN_CHECK_SECONDS = 1.0
CHUNKS_PER_PROCESS = 4
CHUNK_MIN = 8


def _exit_with_parent(parent: int) -> None:
    """In each parse process: exit once the worker is gone (a SIGKILLed worker cannot stop its pool)."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(ORPHAN_CHECK_SECONDS)
        os._exit(0)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


class ParsePool:
    """`processes` worker processes (spawned: the worker's threads and DuckDB must not be forked); 0 parses inline."""

    def __init__(self, params: RouteParams, processes: int) -> None:
        self._params = params
        self._processes = processes
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
            parts = await asyncio.gather(
                *(loop.run_in_executor(pool, route_values, c, self._params, seen_at) for c in chunks)
            )
        except BrokenProcessPool:
            # A worker process died (OOM, a signal): the next attempt starts a fresh pool.
            log.warning("a parse process died; starting a new pool")
            self.close()
            raise
        return [r for part in parts for r in part]

    def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
