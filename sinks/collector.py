"""Python's cyclic collector paused around a burst of short-lived objects."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused() -> Iterator[None]:
    """The collector off for the block, on again after it (if it was), whatever happens.

    A batch's rows are tens of thousands of tuples freed by reference counting: each few hundred of them set off
    a collection, and the older ones traverse the worker's whole heap, a tenth of `apply_batch`'s CPU. Pauses
    that overlap (a briefing's in another thread) leave it on once the outer one ends.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
