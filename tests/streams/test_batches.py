"""`take_batches`: a trickle is handed over as soon as before, a backlog in batches that grow until full."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import faust
from faust.events import Event
from faust.streams import Stream
from faust.transport.consumer import Consumer
from faust.types import TP, ChannelT, EventT, StreamT
from faust.types.tuples import ConsumerMessage

from sinks.clock import SYSTEM_CLOCK
from streams.app import faust_app
from streams.batches import LINGER_SECONDS, Weight, ack_all, one, take_batches
from streams.topics import stage_topic
from tests.streams.agent_support import in_process_settings

WITHIN = 0.05


async def _batches(
    backlog: int, records: int, every: float, max_records: int = 500, weight: Weight = one
) -> list[int]:
    """Sizes of the batches an agent takes of `records` values put `every` seconds apart (Faust's test_context)."""
    app = faust.App("test-batches", broker="kafka://127.0.0.1:9", store="memory://")  # never dialled
    sizes: list[int] = []
    done = asyncio.Event()

    def behind(stream: Stream[Any], events: Sequence[EventT[Any]]) -> int:
        return backlog

    async def take(stream: StreamT[Any]) -> None:
        async for events in take_batches(
            cast(Stream[Any], stream), max_records, WITHIN, SYSTEM_CLOCK, behind, weight
        ):
            sizes.append(len(events))
            if sum(sizes) >= records:
                done.set()

    agent = app.agent(app.channel(), name="test-batches.take")(take)
    try:
        async with agent.test_context() as context:
            for i in range(records):
                await context.put(i)
                await asyncio.sleep(every)
            await asyncio.wait_for(done.wait(), 5)
    finally:
        # The stream's first read made the app's consumer, whose aiokafka thread (never started: no broker here)
        # made an event loop of its own; left open, a later test's garbage collection warned of it.
        app.consumer._thread.thread_loop.close()  # type: ignore[attr-defined]
    return sizes


async def test_a_trickle_is_handed_over_within_batch_seconds() -> None:
    sizes = await _batches(backlog=0, records=20, every=0.02)
    assert len(sizes) >= 5 and max(sizes) <= 8  # ~2-3 per 50 ms, as take_events hands them over


async def test_a_batch_grows_while_a_backlog_waits_behind_it() -> None:
    sizes = await _batches(backlog=1000, records=40, every=0.005)
    # 40 values over ~0.2 s: one batch (LINGER_SECONDS is 0.5 s; two on a slow box), where a trickle would be
    # cut every 50 ms.
    assert LINGER_SECONDS >= 0.4 and len(sizes) <= 2 and sizes[0] >= 20


async def test_a_growing_batch_stops_at_max_records() -> None:
    sizes = await _batches(backlog=1000, records=30, every=0.002, max_records=10)
    assert sizes == [10, 10, 10]


async def test_a_batch_of_heavy_records_stops_at_max_records_of_weight() -> None:
    # The window agent weighs a documents record by its notes: a batch holds about batch_records notes.
    sizes = await _batches(backlog=1000, records=12, every=0.002, max_records=10, weight=lambda e: 4)
    assert sizes == [3, 3, 3, 3]


async def test_a_few_heavy_records_behind_a_batch_are_a_backlog() -> None:
    # 10 documents records of ~17 notes each wait: 170 notes, a backlog, though under BACKLOG_RECORDS records.
    sizes = await _batches(backlog=10, records=40, every=0.005, max_records=2000, weight=lambda e: 17)
    assert len(sizes) <= 2 and sizes[0] >= 20


async def test_the_next_batch_fills_while_one_is_handled() -> None:
    # The window agent's store of a batch took its time while nothing was read behind it: the next batch then
    # began empty, and the stage idled until it came.
    app = faust.App("test-batches-fill", broker="kafka://127.0.0.1:9", store="memory://")  # never dialled
    during: list[int] = []
    done = asyncio.Event()

    async def take(stream: StreamT[Any]) -> None:
        passed = 0

        def count(value: Any) -> Any:  # after take_batches' own processor: sees what it let through
            nonlocal passed
            passed += 1
            return value

        batches = take_batches(cast(Stream[Any], stream), 5, WITHIN, SYSTEM_CLOCK, lambda s, e: 0)
        async for _ in batches:
            if not during:
                stream.add_processor(count)
                await asyncio.sleep(0.3)  # handling the first batch
                during.append(passed)
            if len(during) and passed >= 10:
                done.set()

    agent = app.agent(app.channel(), name="test-batches-fill.take")(take)
    try:
        async with agent.test_context() as context:
            for i in range(15):
                await context.put(i)
            await asyncio.wait_for(done.wait(), 5)
    finally:
        app.consumer._thread.thread_loop.close()  # type: ignore[attr-defined]
    assert during == [5]  # a whole next batch read while the first was handled, and not one event more


def _consumed_batch(
    tmp_path: Path, offsets: Sequence[int]
) -> tuple[faust.App, Stream[Any], list[EventT[Any]]]:
    """A worker app's stream on its raw topic (no broker) and events of consumed records at `offsets`, each
    tracked by the consumer as Faust's stream tracks what it reads."""
    settings = in_process_settings(tmp_path)
    app = faust_app(settings)
    topic = stage_topic(app, settings, "raw")
    name = settings.kafka.topic("raw")
    app.topics.acking_topics.add(name)  # as subscribing to it does
    app.sensors.add(app.monitor)  # as the worker does
    stream = cast(Stream[Any], app.stream(topic))
    tp = TP(name, 0)
    events: list[EventT[Any]] = []
    for offset in offsets:
        message = ConsumerMessage(name, 0, offset, 0.0, 0, [], b"k", b"v", None, tp=tp)
        message.incref(1)  # one channel subscribes to it, as the conductor counts
        app.consumer.track_message(message)
        events.append(Event(app, b"k", b"v", [], message))
    return app, stream, events


def _acked(app: faust.App, events: Sequence[EventT[Any]]) -> tuple[object, ...]:
    """What acking left for the commit and the monitor to see."""
    consumer = cast(Consumer, app.consumer)
    tp = events[0].message.tp
    return (
        consumer._new_offset(tp),
        len(consumer.unacked),
        consumer._n_acked,
        [e.message.acked for e in events],
        app.monitor.messages_active,
    )


async def test_a_batch_acked_at_once_leaves_what_faust_s_own_acks_leave(tmp_path: Path) -> None:
    # ack_all acks consumed records through Faust's compiled stream iterator: the offset the next commit takes,
    # the unacked set, the ack count and the monitor's gauges are those of Stream.ack, event by event.
    offsets = [5, 6, 7, 8, 9]
    app, stream, events = _consumed_batch(tmp_path / "a", offsets)
    faust_app_, faust_stream, faust_events = _consumed_batch(tmp_path / "b", offsets)
    try:
        await ack_all(stream, events[:2])
        for event in faust_events[:2]:
            await faust_stream.ack(event)
        assert (
            _acked(app, events) == _acked(faust_app_, faust_events) == (7, 3, 2, [True] * 2 + [False] * 3, 3)
        )
        await ack_all(stream, events)  # the first two again: acked once only
        for event in faust_events:
            await faust_stream.ack(event)
        assert _acked(app, events) == _acked(faust_app_, faust_events) == (10, 0, 5, [True] * 5, 0)
    finally:
        for a in (app, faust_app_):
            a.consumer._thread.thread_loop.close()  # type: ignore[attr-defined]


async def test_records_buffered_before_a_rebalance_are_dropped_unread() -> None:
    # A rebalance (a new consumer generation) leaves records of the old one in the buffer: Faust's iteration drops
    # them, and the batch buffer, reading the buffer itself, does too; the new generation's are batched.
    app = faust.App(
        "test-batches-generation", broker="kafka://127.0.0.1:9", store="memory://"
    )  # never dialled
    batches: list[list[Any]] = []
    done = asyncio.Event()

    async def take(stream: StreamT[Any]) -> None:
        async for events in take_batches(cast(Stream[Any], stream), 3, WITHIN, SYSTEM_CLOCK, lambda s, e: 0):
            batches.append([e.value for e in events])
            if len(batches) == 1:
                await asyncio.sleep(0.3)  # the next batch fills, then three more records wait behind it
                app.consumer_generation_id += 1
            if len(batches) == 3:
                done.set()

    agent = app.agent(app.channel(), name="test-batches-generation.take")(take)
    try:
        async with agent.test_context() as context:
            for i in range(9):
                await context.put(i, wait=False)  # a dropped record is never processed
            await asyncio.sleep(0.5)
            for i in range(9, 12):
                await context.put(i, wait=False)
            await asyncio.wait_for(done.wait(), 5)
    finally:
        app.consumer._thread.thread_loop.close()  # type: ignore[attr-defined]
    assert batches == [[0, 1, 2], [3, 4, 5], [9, 10, 11]]


async def test_records_read_after_the_batches_end_are_not_acknowledged() -> None:
    # An agent's loop that ended (a failure stopping the worker) left the stream read in the background with
    # Faust's acks back on: records that came meanwhile were acknowledged, so committed, never handled.
    app = faust.App("test-batches-end", broker="kafka://127.0.0.1:9", store="memory://")  # never dialled
    ended = asyncio.Event()

    async def take(stream: StreamT[Any]) -> None:
        batches = take_batches(cast(Stream[Any], stream), 2, WITHIN, SYSTEM_CLOCK, lambda s, e: 0)
        async for _ in batches:
            break
        await batches.aclose()  # type: ignore[attr-defined]
        ended.set()
        await asyncio.sleep(5)  # the worker stopping

    agent = app.agent(app.channel(), name="test-batches-end.take")(take)
    try:
        async with agent.test_context() as context:
            for i in range(2):
                await context.put(i, wait=False)
            await asyncio.wait_for(ended.wait(), 5)
            later = [await context.put(i, wait=False) for i in range(2, 5)]
            await asyncio.sleep(0.3)
            assert [event.message.acked for event in later] == [False] * 3
    finally:
        app.consumer._thread.thread_loop.close()  # type: ignore[attr-defined]


async def test_partitions_paused_by_a_full_buffer_resume_once_it_is_drained() -> None:
    # Faust pauses a partition whose records fill the agent's buffer and resumes it as the buffer is read
    # (`maybe_endorse_pressure_drop` in the queue's gets): the batch buffer reads it, so it must resume them too.
    app = faust.App(
        "test-batches-pressure", broker="kafka://127.0.0.1:9", store="memory://", stream_buffer_maxsize=8
    )
    paused: list[int] = []
    resumed: list[int] = []
    taken: list[Any] = []
    streams: list[StreamT[Any]] = []
    release, done = asyncio.Event(), asyncio.Event()

    def resume() -> None:  # the conductor's callback for the partition
        resumed.append(1)

    async def take(stream: StreamT[Any]) -> None:
        streams.append(stream)
        async for events in take_batches(cast(Stream[Any], stream), 2, WITHIN, SYSTEM_CLOCK, lambda s, e: 0):
            await release.wait()  # the buffer fills behind the first batch
            taken.extend(e.value for e in events)
            if len(taken) == 20:
                done.set()

    agent = app.agent(app.channel(), name="test-batches-pressure.take")(take)
    try:
        async with agent.test_context() as context:
            for i in range(2):
                await context.put(i, wait=False)
            await asyncio.sleep(0.2)
            channel = cast(ChannelT[Any], streams[0].channel)
            queue = channel.queue
            for i in range(2, 20):  # as Faust's conductor delivers a fetched record (one partition)
                event = await channel.decode(context.to_message(None, i))
                queue.put_nowait_enhanced(
                    event, on_pressure_high=lambda: paused.append(1), on_pressure_drop=resume
                )
            assert paused
            release.set()
            await asyncio.wait_for(done.wait(), 5)
    finally:
        app.consumer._thread.thread_loop.close()  # type: ignore[attr-defined]
    assert taken == list(range(20))
    assert resumed and not queue._pending_pressure_drop_callbacks
