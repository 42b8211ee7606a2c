"""Python's cyclic collector paused around a burst of short-lived objects."""

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
