"""The worker's C heap: what glibc's malloc keeps of the memory a batch freed (docs/performance.md).

Left alone, glibc raises its mmap threshold to the largest block freed so far, so the worker's large buffers
(fetched Kafka batches, documents records of ~0.4 MB, the parse processes' pickles) come from the heap, and
the heap keeps the pages they freed: ~100 MiB of the worker's resident set at 100k notes was free heap.
"""

from __future__ import annotations

import ctypes
import logging

from sinks.clock import Clock

log = logging.getLogger(__name__)

M_MMAP_THRESHOLD = -3  # mallopt's parameter (malloc.h)
# glibc's own starting threshold, kept fixed: larger blocks are mapped on their own and unmapped when freed.
MMAP_THRESHOLD_BYTES = 128 * 1024
# A trim walks every free chunk of every arena: at most once a second, whatever the batches' pace.
TRIM_EVERY_SECONDS = 1.0


def _libc() -> ctypes.CDLL | None:
    """The process's C library if it is glibc (mallopt and malloc_trim both there), else None."""
    try:
        libc = ctypes.CDLL(None)
    except OSError:
        return None
    return libc if hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim") else None


def keep_large_blocks_off_heap() -> bool:
    """Fix glibc's mmap threshold (no dynamic growth), so large freed blocks go back to the system at once.

    False where the C library is not glibc (nothing to do there).
    """
    libc = _libc()
    if libc is None:
        return False
    if not libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES):
        log.warning("mallopt(M_MMAP_THRESHOLD) refused; the worker's heap keeps what large buffers freed")
        return False
    return True


class HeapTrim:
    """Hands the pages a batch freed inside glibc's heap back to the system, at most once a `every` seconds."""

    def __init__(self, clock: Clock, every: float = TRIM_EVERY_SECONDS) -> None:
        self._clock = clock
        self._every = every
        self._libc = _libc()
        self._last = float("-inf")

    def after_batch(self) -> bool:
        """Trim if the last trim is `every` seconds old; whether it trimmed."""
        now = self._clock.monotonic()
        if self._libc is None or now - self._last < self._every:
            return False
        self._last = now
        self._libc.malloc_trim(0)
        return True


def release_free_heap() -> bool:
    """Hand the pages glibc's heap holds free back to the system now (after a briefing dropped its model);
    whether it could."""
    libc = _libc()
    if libc is None:
        return False
    libc.malloc_trim(0)
    return True
