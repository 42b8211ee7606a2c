"""Python's cyclic collector paused around a burst of short-lived objects, and set for a process that ingests."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class _Pauses:
    """How many pauses are open, in any thread: the collector comes back on when the last one ends."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open = 0
        self._was_enabled = False

    def begin(self) -> None:
        with self._lock:
            if self._open == 0:
                self._was_enabled = gc.isenabled()
                gc.disable()
            self._open += 1

    def end(self) -> None:
        with self._lock:
            self._open -= 1
            if self._open == 0 and self._was_enabled:
                gc.enable()


_PAUSES = _Pauses()

# New objects a young collection waits for while ingesting (Python's default: 700). A window batch's rows, made
# under the pauses (up to ~24 000 objects at 10k), live until its store and die there: at 700 the next collection
# traversed and promoted them, for nothing; ~0.2 objects a note are cyclic garbage (docs/performance.md).
INGEST_YOUNG = 50_000


def for_ingest() -> None:
    """What the process holds once started (modules, classes, the app) left out of every later collection, and
    young collections every INGEST_YOUNG objects: the worker's and each parse process's setting while ingesting."""
    gc.collect()  # the start's own cycles are freed, not frozen for good
    gc.freeze()
    gc.set_threshold(INGEST_YOUNG, *gc.get_threshold()[1:])


def for_exit() -> None:
    """What `for_ingest` froze given back to the collector: the process's end then finalises it as before (the
    state's DuckDB connection is closed and checkpointed; frozen, it was never freed and its data left in the WAL)."""
    gc.unfreeze()


@contextmanager
def paused() -> Iterator[None]:
    """The collector off for the block, on again once every overlapping pause has ended (if it was), whatever
    happens.

    A batch's rows are tens of thousands of tuples freed by reference counting: each few hundred of them set off
    a collection, and the older ones traverse the worker's whole heap, a tenth of `apply_batch`'s CPU. A briefing
    pauses it too, on the event loop, while batches are stored in a thread: neither ends the other's pause.
    """
    _PAUSES.begin()
    try:
        yield
    finally:
        _PAUSES.end()


@contextmanager
def briefing(collect_first: bool) -> Iterator[None]:
    """A briefing under the collector's pause, its cycles (all young: made under the pause) freed as it ends;
    with `collect_first` every cycle not frozen freed before it (a large axis's: kept out of its peak)."""
    if collect_first:
        gc.collect()  # the ingest's cycles, up to INGEST_YOUNG objects uncollected
    try:
        with paused():
            yield
    finally:
        # Past the ingest's threshold they could stay for long. Only here: the files and the send are not paused.
        gc.collect(0)
