"""A large Kafka response read whole as it arrives (streams/fetch_read.py): the reader gives the bytes asyncio's
gives, however they are cut, and fails as it fails."""

from __future__ import annotations

import asyncio
import os
import struct

import pytest
from aiokafka import conn
from hypothesis import given, settings
from hypothesis import strategies as st

from streams.fetch_read import LARGE, WholeReader, read_large_responses_whole


def _frames(sizes: list[int]) -> tuple[bytes, list[bytes]]:
    bodies = [os.urandom(size) for size in sizes]
    return b"".join(struct.pack(">i", len(b)) + b for b in bodies), bodies


async def _read(reader: asyncio.StreamReader, stream: bytes, cuts: list[int], frames: int) -> list[bytes]:
    """Feed `stream` cut at `cuts` while reading `frames` frames as aiokafka's connection reads them."""

    async def feed() -> None:
        start = 0
        for end in [*sorted(set(cuts)), len(stream)]:
            if end > start:
                reader.feed_data(stream[start:end])
                start = end
            await asyncio.sleep(0)

    feeding = asyncio.ensure_future(feed())
    out = []
    for _ in range(frames):
        (size,) = struct.unpack(">i", await reader.readexactly(4))
        out.append(await reader.readexactly(size))
    await feeding
    return out


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from([0, 5, LARGE - 1, LARGE, LARGE + 3, 3 * LARGE + 7]), min_size=1, max_size=4),
    st.lists(st.integers(0, 4 * LARGE), max_size=12),
)
def test_frames_read_whole_are_the_bytes_asyncio_reads(sizes: list[int], cuts: list[int]) -> None:
    stream, bodies = _frames(sizes)
    cuts = [c % (len(stream) + 1) for c in cuts]

    async def both() -> tuple[list[bytes], list[bytes]]:
        plain = await _read(asyncio.StreamReader(limit=2**16), stream, cuts, len(sizes))
        return plain, await _read(WholeReader(limit=2**16), stream, cuts, len(sizes))

    plain, whole = asyncio.run(both())
    assert plain == whole == bodies


def test_a_connection_closed_within_a_large_response_fails_as_asyncio_fails() -> None:
    async def cut_short() -> None:
        reader = WholeReader(limit=2**16)
        reader.feed_data(b"x" * 1000)
        reading = asyncio.ensure_future(reader.readexactly(LARGE * 2))
        await asyncio.sleep(0)
        reader.feed_data(b"y" * LARGE)
        reader.feed_eof()
        with pytest.raises(asyncio.IncompleteReadError) as caught:
            await reading
        assert caught.value.partial == b"x" * 1000 + b"y" * LARGE
        failing = WholeReader(limit=2**16)
        reading = asyncio.ensure_future(failing.readexactly(LARGE * 2))
        await asyncio.sleep(0)
        failing.set_exception(ConnectionResetError())
        with pytest.raises(ConnectionResetError):
            await reading

    asyncio.run(cut_short())


def test_connections_opened_afterwards_read_whole() -> None:
    before = conn.AIOKafkaConnection._create_reader_task
    try:
        read_large_responses_whole()

        async def made() -> type:
            connection = conn.AIOKafkaConnection("127.0.0.1", 9)  # never connected: its reader set by hand
            connection._reader = asyncio.StreamReader()
            connection._create_reader_task().cancel()
            made = type(connection._reader)
            connection._reader = None
            return made

        assert asyncio.run(made()) is WholeReader
    finally:
        conn.AIOKafkaConnection._create_reader_task = before
