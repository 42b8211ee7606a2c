"""A large Kafka response read whole as it arrives, not through asyncio's growing buffer (the worker's fetches).

aiokafka (0.14) reads each response with `StreamReader.readexactly(size)`: every received chunk is appended to one
`bytearray` (regrown as it fills, past 4 MiB a fresh mapping faulted page by page), then copied out whole. A raw
fetch of the bench is one 4 MiB backfill batch. Here a read of `LARGE` bytes or more keeps the chunks as they come
and joins them once: one copy instead of two and the regrowth (a bare consumer of the raw topic ~0.8x the CPU a
note; docs/performance.md, "The documents topic's bytes, end to end"). Smaller reads are asyncio's own.
"""

from __future__ import annotations

import asyncio
from typing import Any

from aiokafka import conn

LARGE = 256 * 1024

_create_reader_task = conn.AIOKafkaConnection._create_reader_task


class WholeReader(asyncio.StreamReader):
    """asyncio's reader whose large `readexactly` collects the chunks fed meanwhile and joins them once."""

    _parts: list[bytes] | None = None
    _left = 0  # bytes the large read in progress still waits for

    def feed_data(self, data: bytes) -> None:  # type: ignore[override]  # asyncio feeds the bytes received
        if not self._left:
            super().feed_data(data)
            return
        take = min(len(data), self._left)
        assert self._parts is not None
        self._parts.append(data if take == len(data) else data[:take])
        self._left -= take
        if not self._left:
            self._wakeup_waiter()  # type: ignore[attr-defined]  # asyncio's own, private
        if take < len(data):
            super().feed_data(data[take:])  # the next response's first bytes

    async def readexactly(self, n: int) -> bytes:
        held = len(self._buffer)  # type: ignore[attr-defined]
        if n < LARGE or held >= n or self._exception is not None:  # type: ignore[attr-defined]
            return await super().readexactly(n)
        parts = [bytes(self._buffer)]  # type: ignore[attr-defined]
        self._buffer.clear()  # type: ignore[attr-defined]
        self._maybe_resume_transport()  # type: ignore[attr-defined]
        self._parts, self._left = parts, n - held
        try:
            while self._left:
                if self._exception is not None:  # type: ignore[attr-defined]
                    raise self._exception
                if self._eof:  # type: ignore[attr-defined]
                    raise asyncio.IncompleteReadError(b"".join(parts), n)
                await self._wait_for_data("readexactly")  # type: ignore[attr-defined]
        except asyncio.CancelledError:  # as asyncio's: the bytes received stay, in order, for the next read
            self._buffer[:0] = b"".join(parts)  # type: ignore[attr-defined]
            raise
        finally:
            self._parts, self._left = None, 0
        return b"".join(parts)


def _whole_reads(self: Any) -> Any:
    if type(self._reader) is asyncio.StreamReader:
        self._reader.__class__ = WholeReader  # the connection just made it; nothing was read yet
    return _create_reader_task(self)


def read_large_responses_whole() -> None:
    """Make every aiokafka connection of this process opened from now on read large responses whole (idempotent)."""
    conn.AIOKafkaConnection._create_reader_task = _whole_reads
