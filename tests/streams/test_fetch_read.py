"""A large Kafka response read whole as it arrives (streams/fetch_read.py): the reader gives the bytes asyncio's
gives, however they are cut, and fails as it fails."""

from __future__ import annotations

import asyncio
import os
import struct
from collections.abc import Callable

import pytest
from aiokafka import AIOKafkaProducer, conn
from aiokafka.consumer import fetcher
from hypothesis import given, settings
from hypothesis import strategies as st
from predigest_native import record_batches_intact

from streams import fetch_crc, kafka_io
from streams.app import faust_app
from streams.fetch_read import LARGE, WholeReader, read_large_responses_whole
from streams.settings import Settings
from tests.support import read_topic


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


def test_a_large_read_cancelled_midway_leaves_the_bytes_as_asyncio_leaves_them() -> None:
    stream = os.urandom(3 * LARGE)

    async def cancelled(kind: type[asyncio.StreamReader], fed: int) -> bytes:
        reader = kind(limit=2**16)
        reader.feed_data(stream[:1000])
        reading = asyncio.ensure_future(reader.readexactly(2 * LARGE))
        await asyncio.sleep(0)
        reader.feed_data(stream[1000:fed])  # part of the read's bytes, or them and the next read's first
        reading.cancel()
        with pytest.raises(asyncio.CancelledError):
            await reading
        reader.feed_data(stream[fed:])
        return await asyncio.wait_for(reader.readexactly(3 * LARGE), 5)

    for fed in (LARGE, 2 * LARGE, 2 * LARGE + 10):
        assert asyncio.run(cancelled(asyncio.StreamReader, fed)) == stream
        assert asyncio.run(cancelled(WholeReader, fed)) == stream


def test_frames_over_a_real_socket_are_read_whole() -> None:
    """Through asyncio's transport and protocol (its pauses included), not bytes fed by hand."""
    stream, bodies = _frames([5, 3 * LARGE + 7, 100, LARGE, 4 * 1024 * 1024 + 1])

    async def served() -> list[bytes]:
        async def send(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            for at in range(0, len(stream), 100_000):
                writer.write(stream[at : at + 100_000])
                await writer.drain()
            writer.close()

        server = await asyncio.start_server(send, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        reader = WholeReader(limit=2**16)
        transport, _ = await asyncio.get_running_loop().create_connection(
            lambda: asyncio.StreamReaderProtocol(reader), "127.0.0.1", port
        )

        async def frames() -> list[bytes]:
            out = []
            for _ in bodies:
                (size,) = struct.unpack(">i", await reader.readexactly(4))
                out.append(await reader.readexactly(size))
            return out

        try:
            return await asyncio.wait_for(frames(), 10)
        finally:
            transport.close()
            server.close()
            await server.wait_closed()

    assert asyncio.run(served()) == bodies


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


@pytest.mark.integration
@pytest.mark.timeout(120)
async def test_a_consumer_of_the_worker_process_reads_large_fetches_whole_and_checks_them_natively(
    make_settings: Callable[..., Settings], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both changes in use on the real broker (a renamed aiokafka or asyncio internal fails here, not quietly)."""
    for owner, name in ((conn.AIOKafkaConnection, "_create_reader_task"), (fetcher, "MemoryRecords")):
        monkeypatch.setattr(owner, name, getattr(owner, name))  # put back after the test
    monkeypatch.setattr(fetcher, "PartitionRecords", fetcher.PartitionRecords)
    checked: list[bool] = []

    def check(data: bytes) -> bool:
        checked.append(record_batches_intact(data))
        return checked[-1]

    monkeypatch.setattr(fetch_crc, "record_batches_intact", check)
    read: list[int] = []
    readexactly = WholeReader.readexactly

    async def counted(self: WholeReader, n: int) -> bytes:
        read.append(n)
        return await readexactly(self, n)

    monkeypatch.setattr(WholeReader, "readexactly", counted)
    s = make_settings()
    await kafka_io.ensure_topics(s)
    faust_app(s)
    values = [os.urandom(120_000) for _ in range(6)]  # a batch each, one fetch of ~720 KB
    producer = AIOKafkaProducer(**kafka_io.client_kwargs(s))
    await producer.start()
    try:
        for value in values:
            await producer.send_and_wait(s.kafka.topic("documents"), value, key=b"k", partition=0)
    finally:
        await producer.stop()

    assert [v for _, v in await read_topic(s, "documents")] == values
    assert max(read) >= LARGE and checked and all(checked)
