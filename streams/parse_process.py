"""What runs in each parse process of the pool (streams.parse_pool): its start, and a chunk's notes routed one by
one, each announced on a board the worker reads, those of a batch nobody waits for any more skipped."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from multiprocessing.context import SpawnContext
from multiprocessing.sharedctypes import Synchronized
from typing import TYPE_CHECKING

from processors.parse_stage import Routed, RouteParams, packed
from streams import heap

ORPHAN_CHECK_SECONDS = 1.0
# Attempts whose cancellation the processes can tell apart at once: far more than ever have chunks queued (two
# batches routing, a suspect's own pool).
DROPPED_SLOTS = 16
Route = Callable[[Sequence[tuple[bytes, int | None]], RouteParams, datetime], list[Routed]]
Chunk = list[tuple[int, bytes, int | None]]  # (index in the batch, raw value, raw offset)
HELD = {signal.SIGINT, signal.SIGTERM}  # the worker's to answer: its parse processes ignore them

if TYPE_CHECKING:
    from ctypes import Array, c_longlong

    Board = Array[c_longlong]
else:
    Board = object


@dataclass(frozen=True)
class Progress:
    """Where each parse process says which note it starts: its slot of a shared array holds its process id and
    (attempt << 32 | index in the batch), one 8-byte store, in memory that outlives a process dying right after.
    The worker looks at it each poll, not at a message per note (a pipe read, a lock and a pickle: ~6-20 µs a
    note on its event loop). `dropped` says the other way which attempts nobody waits for any more."""

    board: Board  # [pid, attempt << 32 | index] per slot
    claimed: Synchronized[int]  # slots handed out, one per process as it starts
    dropped: Board  # each cancelled attempt at its slot, attempt % DROPPED_SLOTS

    @classmethod
    def new(cls, context: SpawnContext, processes: int) -> Progress:
        """A fresh board for a pool of `processes`: its processes take its slots from the first."""
        return cls(
            context.RawArray("q", 2 * processes), context.Value("i", 0), context.RawArray("q", DROPPED_SLOTS)
        )

    def read(self) -> list[tuple[int, int, int]]:
        """(process id, attempt, index) of each process that has said anything."""
        out = []
        for slot in range(len(self.board) // 2):
            pid, said = self.board[2 * slot], self.board[2 * slot + 1]
            if pid:
                out.append((pid, said >> 32, said & 0xFFFFFFFF))
        return out

    def drop(self, attempt: int) -> None:
        """The notes of `attempt` not begun yet are skipped: nobody waits for them (its batch was cancelled)."""
        self.dropped[attempt % len(self.dropped)] = attempt

    def dropped_now(self, attempt: int) -> bool:
        return self.dropped[attempt % len(self.dropped)] == attempt


_progress: tuple[Progress, int] | None = None  # in a parse process: the board and its slot


def start_process(parent: int, progress: Progress, nice: int) -> None:
    """In each parse process: take a slot of the progress board, yield the CPU to the worker by `nice` steps, and
    exit once the worker is gone (a SIGKILLed worker cannot stop its pool)."""
    global _progress
    os.nice(nice)
    with progress.claimed.get_lock():
        slot = progress.claimed.value
        progress.claimed.value += 1
    progress.board[2 * slot] = os.getpid()
    _progress = (progress, slot)
    # glibc's own thresholds gave a chunk's large buffers (its pickles in and out, the zstd input) back to the
    # system and faulted them in again: ~12 page faults and ~30 µs of system time a note; ~0.5 and ~10 with the
    # worker's ingest thresholds, for the same resident set (docs/performance.md).
    heap.keep_for_ingest()
    # A Ctrl-C reaches the whole process group (a SIGTERM too, where the group is signalled): the worker stops
    # its pool (SIGKILL), which must not die mid-note or mid-start, with a KeyboardInterrupt traceback in the
    # operator's terminal. Blocked since the process's first instruction (`_Pool.submit`): one that came is dropped.
    for sig in HELD:
        signal.signal(sig, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, HELD)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(ORPHAN_CHECK_SECONDS)
        os._exit(0)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


def route_chunk(
    route: Route, attempt: int, chunk: Chunk, params: RouteParams, seen_at: datetime
) -> list[Routed]:
    """In a parse process: each note of the chunk routed on its own, announced before it starts; their records
    compressed together here, where a core is to spare (the worker's producer compressed them before). Nothing
    once its attempt is dropped: a batch the worker's stop cancelled kept the processes busy until their kill."""
    out = []
    for index, value, offset in chunk:
        if _progress is not None:
            progress, slot = _progress
            if progress.dropped_now(attempt):
                return []
            progress.board[2 * slot + 1] = attempt << 32 | index
        out.extend(route([(value, offset)], params, seen_at))
    return packed(out, params)
