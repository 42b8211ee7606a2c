"""`take_batches`: a trickle is handed over as soon as before, a backlog in batches that grow until full."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, cast

import faust
from faust.streams import Stream
from faust.types import EventT, StreamT

from sinks.clock import SYSTEM_CLOCK
from streams.batches import LINGER_SECONDS, Weight, one, take_batches

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
