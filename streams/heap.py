"""The worker's C heap: which blocks glibc's malloc maps on their own, and what it keeps of the memory a batch
freed (docs/performance.md).

Left alone, glibc raises its mmap threshold to the largest block freed so far, so the heap keeps the pages of the
worker's large buffers (fetched Kafka batches, documents records of ~0.4 MB, the parse processes' pickles): ~100
MiB of its resident set at 100k notes was free heap. Fixed at 128 KiB, every such buffer was mapped, faulted in
page by page and unmapped again: ~75 page faults a note, a quarter of the worker's CPU in the kernel. So while
ingesting, blocks up to 4 MiB come from the heap and a heap's top is given back only past 16 MiB; the trim after
a window batch (at most once a second, and once more when the worker has gone quiet) hands back the main heap's
free pages. A briefing runs with the small thresholds: its large blocks leave as they are freed, where its peak
is measured.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass

from sinks.clock import Clock

log = logging.getLogger(__name__)

M_TRIM_THRESHOLD = -1  # mallopt's parameters (malloc.h)
M_MMAP_THRESHOLD = -3
# A trim walks every free chunk of every arena: at most once a second, whatever the batches' pace.
TRIM_EVERY_SECONDS = 1.0


@dataclass(frozen=True)
class Thresholds:
    """Blocks at least `mmap_bytes` are mapped on their own; a free leaving `trim_bytes` at a heap's top shrinks it."""

    mmap_bytes: int
    trim_bytes: int


# Fixed (no dynamic growth): glibc's own starting values. A briefing's freed blocks go back to the system at once.
BRIEFING = Thresholds(mmap_bytes=128 * 1024, trim_bytes=128 * 1024)
# Fetched batches, records and pickles of a window batch reused from the heap instead of mapped and faulted anew
# (10k ingests: ~28 faults a note against ~73, the worker's system time ~0.6x). The trim threshold bounds what a
# thread's heap keeps: malloc_trim shrinks only the main heap's top, another thread's arena gives its top back at
# a free past this threshold (at 64 MiB a decode or store thread kept up to 64 MiB free, into the briefing).
INGEST = Thresholds(mmap_bytes=4 * 1024 * 1024, trim_bytes=16 * 1024 * 1024)


# `predigest backfill`: its 4 MiB record batches and the produce requests copied from them reused from the heap
# instead of mapped, faulted and unmapped per batch (10k: ~2 faults a note against ~10); a run's heap ends with it.
BULK = Thresholds(mmap_bytes=32 * 1024 * 1024, trim_bytes=64 * 1024 * 1024)
# A briefing of an axis of up to this many current documents (its window holds no more) keeps the ingest's
# thresholds: mapping and faulting its blocks one by one cost a 10k briefing ~0.2 s of its ~2, for no lower peak
# (~350 MiB at 10k either way); the peak the small thresholds bound is the 100k window's (docs/performance.md).
SMALL_AXIS = 20_000


def _libc() -> ctypes.CDLL | None:
    """The process's C library if it is glibc (mallopt and malloc_trim both there), else None."""
    try:
        libc = ctypes.CDLL(None)
    except OSError:
        return None
    return libc if hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim") else None


def set_thresholds(thresholds: Thresholds) -> bool:
    """Fix glibc's mmap and trim thresholds (no dynamic growth); False where the C library is not glibc or
    refused them."""
    libc = _libc()
    if libc is None:
        return False
    # mallopt is documented MT-Unsafe: glibc sets these under the main arena's lock while other threads read them
    # unlocked; at worst an allocation racing the change is served under the old threshold.
    if not (
        libc.mallopt(M_MMAP_THRESHOLD, thresholds.mmap_bytes)
        and libc.mallopt(M_TRIM_THRESHOLD, thresholds.trim_bytes)
    ):
        log.warning("mallopt refused the worker's heap thresholds; its heap keeps what large buffers freed")
        return False
    return True


class _Heap:
    """The thresholds this process set (None: glibc's own), and the briefings in progress."""

    thresholds: Thresholds | None = None
    briefings = 0


def keep_for_ingest() -> bool:
    """The worker's thresholds while it ingests (set once at its start); False where not glibc."""
    _Heap.thresholds = INGEST
    return set_thresholds(INGEST)


@contextlib.contextmanager
def briefing_heap(documents: int | None = None) -> Iterator[None]:
    """A briefing with glibc's small thresholds, the heap's free pages handed back first; the ingest's after.
    Nothing changes for an axis of at most SMALL_AXIS `documents`, or in a process that never set the ingest's
    (glibc's own dynamic ones cannot be set back)."""
    if _Heap.thresholds is None or (documents is not None and documents <= SMALL_AXIS):
        yield
        return
    if _Heap.briefings == 0:
        set_thresholds(BRIEFING)
        release_free_heap()
    _Heap.briefings += 1
    try:
        yield
    finally:
        _Heap.briefings -= 1
        if _Heap.briefings == 0:
            set_thresholds(_Heap.thresholds)


class HeapTrim:
    """Hands the pages a batch freed inside glibc's heap back to the system, at most once a `every` seconds."""

    def __init__(self, clock: Clock, every: float = TRIM_EVERY_SECONDS) -> None:
        self._clock = clock
        self._every = every
        self._libc = _libc()
        self._last = float("-inf")
        self._owed = False  # a batch ended since the last trim
        self._ended = float("-inf")  # when the last batch ended

    def after_batch(self) -> bool:
        """Trim if the last trim is `every` seconds old; whether it trimmed."""
        self._owed, self._ended = True, self._clock.monotonic()
        return self._trim_if_due()

    async def when_quiet(self) -> bool:
        """The trim a batch skipped (the last one came less than `every` seconds after a trim), once the batches
        stop: a worker gone quiet does not keep its last batch's pages; whether it trimmed. A timer's tick."""
        # Not while batches still end every second: the trim stays after a batch, not in the middle of the next.
        quiet = self._clock.monotonic() - self._ended >= self._every
        return self._owed and quiet and self._trim_if_due()

    def _trim_if_due(self) -> bool:
        now = self._clock.monotonic()
        if self._libc is None or now - self._last < self._every:
            return False
        self._last, self._owed = now, False
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


def resident_mib() -> int | None:
    """The process's resident set in MiB (Linux's /proc), None where it cannot be read."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            pages = int(statm.read().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE") >> 20
