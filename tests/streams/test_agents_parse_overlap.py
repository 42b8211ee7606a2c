"""The parse agent routes the next batch while the last one's documents records wait for their acknowledgement,
and acks a batch's raw records only once all of them are acknowledged (docs/guarantees.md), in process."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from faust.streams import Stream
from faust.types import EventT

from processors.parse_stage import Routed
from processors.wire import decode_rows
from tests.clocks import ManualClock
from tests.streams.agent_support import (
    END,
    NOTE,
    InProcessWorker,
    Start,
    in_process_settings,
    raw_value,
    settled,
)

OTHER = "inbox/tom/2026-09-27-1100-kv.md"


def _acks_recorded(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The offsets of every ack, whoever makes it, in the order made."""
    acked: list[int] = []
    real_ack = Stream.ack

    async def recorded_ack(self: Stream[bytes], event: EventT[bytes]) -> bool:
        acked.append(event.message.offset)
        return await real_ack(self, event)

    monkeypatch.setattr(Stream, "ack", recorded_ack)
    return acked


def _routes_counted(
    monkeypatch: pytest.MonkeyPatch, worker: InProcessWorker, first_waits: asyncio.Event | None = None
) -> list[int]:
    """The size of each batch as its routing starts; with `first_waits`, the first batch's routing waits for it."""
    routed: list[int] = []
    route = worker.services.parser.route

    async def counted(values: Sequence[tuple[bytes, int | None]], seen_at: datetime) -> list[Routed]:
        routed.append(len(values))
        if first_waits is not None and len(routed) == 1:
            await first_waits.wait()
        return await route(values, seen_at)

    monkeypatch.setattr(worker.services.parser, "route", counted)
    return routed


async def test_the_next_batch_is_routed_while_the_last_is_unacknowledged_and_acked_only_after_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, start: Start
) -> None:
    worker: InProcessWorker = start(in_process_settings(tmp_path), ManualClock(END + timedelta(minutes=10)))
    acknowledged = asyncio.Event()
    sent: list[int] = []
    routed = _routes_counted(monkeypatch, worker)
    acked = _acks_recorded(monkeypatch)  # raw offsets, as the parse agent acks them

    async def slow_broker(records: Sequence[tuple[bytes, bytes]]) -> None:
        sent.append(len(records))
        if len(sent) == 1:
            await acknowledged.wait()  # the broker has not acknowledged the first batch yet
        worker.outputs.documents.extend(records)

    monkeypatch.setattr(worker.outputs, "forward", slow_broker)
    async with worker.agents.parse.test_context() as agent:
        await agent.put(raw_value(), key=b"path")
        await settled(lambda: len(sent) == 1, "the first batch's send")
        await agent.put(raw_value(OTHER), key=b"other")
        await settled(lambda: len(routed) == 2, "the second batch routed while the first waits")
        await asyncio.sleep(0.05)
        # Its records are not sent before the first batch's are acknowledged; neither batch is acked yet.
        assert len(sent) == 1 and acked == []
        acknowledged.set()
        await settled(lambda: acked == [0, 1], "both batches acked, in order")
    assert len(sent) == 2


async def test_a_batch_routed_beside_a_slower_one_is_forwarded_and_acked_only_after_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, start: Start
) -> None:
    # Two batches route at once (the processes stay fed): the second, done first, still waits its turn.
    worker: InProcessWorker = start(in_process_settings(tmp_path), ManualClock(END + timedelta(minutes=10)))
    first_routed = asyncio.Event()
    routing = _routes_counted(monkeypatch, worker, first_waits=first_routed)
    acked = _acks_recorded(monkeypatch)
    async with worker.agents.parse.test_context() as agent:
        await agent.put(raw_value(), key=b"path")
        await settled(lambda: len(routing) == 1, "the first batch routing")
        await agent.put(raw_value(OTHER), key=b"other")
        await settled(lambda: len(routing) == 2, "the second batch routed while the first still routes")
        await asyncio.sleep(0.05)
        assert worker.outputs.documents == [] and acked == []  # the second waits for the first
        first_routed.set()
        await settled(lambda: acked == [0, 1], "both batches acked, in order")
    paths = [row.header.path for _, value in worker.outputs.documents for row in decode_rows(value)]
    assert list(dict.fromkeys(paths)) == [NOTE, OTHER]  # forwarded in raw-offset order
