"""Python's cyclic collector paused around a burst of short-lived objects, and collecting young objects less often
while documents batches flow."""

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

# While batches flow: a young collection every this many new tracked objects (net of those freed), not 700.
FLOWING_YOUNG = 50_000


# A batch's rows outlive the decode's and store's pauses: a collection every 700 objects traversed them and their
# elders, ~27 µs a note of the worker's CPU in a 10k ingest (docs/performance.md). With this threshold they die at
# their store before one sees them; what the state keeps of each path is traversed once, a few thousand at a time.
class _Flow:
    """How many documents batches are in hand: the young threshold is raised while any is."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open = 0
        self._thresholds = gc.get_threshold()

    def begin(self) -> None:
        with self._lock:
            if self._open == 0:
                self._thresholds = gc.get_threshold()
                gc.set_threshold(FLOWING_YOUNG, *self._thresholds[1:])
            self._open += 1

    def end(self) -> None:
        with self._lock:
            self._open -= 1
            if self._open == 0:
                if gc.get_threshold()[0] == FLOWING_YOUNG:  # else set by someone else meanwhile: theirs stays
                    gc.set_threshold(*self._thresholds)
                # The flow's cycles freed now; not inside a pause (a briefing's): its end collects them.
                if gc.isenabled():
                    gc.collect(0)


_FLOW = _Flow()


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


def flow_began() -> None:
    """A documents batch taken in hand: young collections every `FLOWING_YOUNG` new objects until none is."""
    _FLOW.begin()


def flow_ended() -> None:
    """A batch stored or dropped: the last one in hand restores the thresholds and runs a young collection."""
    _FLOW.end()
