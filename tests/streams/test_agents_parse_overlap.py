"""The parse agent routes the next batch while the last one's documents records wait for their acknowledgement,
and acks a batch's raw records only once all of them are acknowledged (docs/guarantees.md), in process."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from processors.parse_stage import Routed
from processors.wire import decode_rows
from streams.failstop import EXIT_CODE
from tests.clocks import ManualClock
from tests.streams.agent_support import (
    END,
    NOTE,
    InProcessWorker,
    Start,
    acks_recorded,
    in_process_settings,
    raw_value,
    settled,
)

OTHER = "inbox/tom/2026-09-27-1100-kv.md"


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


def _first_route_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, start: Start
) -> tuple[InProcessWorker, asyncio.Event, list[int], list[int]]:
    """A worker whose first batch's routing waits for the event; the batches' sizes as they route, and its acks."""
    worker: InProcessWorker = start(in_process_settings(tmp_path), ManualClock(END + timedelta(minutes=10)))
    first_routed = asyncio.Event()
    routing = _routes_counted(monkeypatch, worker, first_waits=first_routed)
    return worker, first_routed, routing, acks_recorded(monkeypatch)


async def _second_routes_beside_the_first(agent: Any, routing: list[int]) -> None:
    """A batch put and held routing (`_routes_counted`'s `first_waits`), then a second put, routing beside it."""
    await agent.put(raw_value(), key=b"path")
    await settled(lambda: len(routing) == 1, "the first batch routing")
    await agent.put(raw_value(OTHER), key=b"other")
    await settled(lambda: len(routing) == 2, "the second batch routed while the first still routes")


async def test_the_next_batch_is_routed_while_the_last_is_unacknowledged_and_acked_only_after_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, start: Start
) -> None:
    worker: InProcessWorker = start(in_process_settings(tmp_path), ManualClock(END + timedelta(minutes=10)))
    acknowledged = asyncio.Event()
    sent: list[int] = []
    routed = _routes_counted(monkeypatch, worker)
    acked = acks_recorded(monkeypatch)  # raw offsets, as the parse agent acks them

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
    worker, first_routed, routing, acked = _first_route_held(tmp_path, monkeypatch, start)
    async with worker.agents.parse.test_context() as agent:
        await _second_routes_beside_the_first(agent, routing)
        await asyncio.sleep(0.05)
        assert worker.outputs.documents == [] and acked == []  # the second waits for the first
        first_routed.set()
        await settled(lambda: acked == [0, 1], "both batches acked, in order")
    paths = [row.header.path for _, value in worker.outputs.documents for row in decode_rows(value)]
    assert list(dict.fromkeys(paths)) == [NOTE, OTHER]  # forwarded in raw-offset order


async def test_a_batch_routed_beside_one_that_fails_is_neither_forwarded_nor_acked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, start: Start
) -> None:
    worker, first_routed, routing, acked = _first_route_held(tmp_path, monkeypatch, start)
    handled = worker.services.pipeline().note

    def first_fails(routed: Routed) -> None:  # a bug on the first batch's note, outside must_finish
        if routed.path == NOTE:
            raise RuntimeError("a bug")
        handled(routed)

    monkeypatch.setattr(worker.services.pipeline(), "note", first_fails)
    async with worker.agents.parse.test_context() as agent:
        await _second_routes_beside_the_first(agent, routing)
        first_routed.set()
        await settled(lambda: worker.exits[:1] == [EXIT_CODE], "the stop")
        await asyncio.sleep(0.05)
    assert worker.outputs.documents == [] and acked == []


async def test_a_stop_returns_once_the_batches_in_flight_have_ended(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, start: Start
) -> None:
    worker: InProcessWorker = start(in_process_settings(tmp_path), ManualClock(END + timedelta(minutes=10)))
    routing: list[str] = []

    async def ends_slowly(values: Sequence[tuple[bytes, int | None]], seen_at: datetime) -> list[Routed]:
        routing.append("routing")
        try:
            await asyncio.Event().wait()  # still routing when the agent stops
            raise AssertionError("unreachable")
        finally:
            await asyncio.sleep(0.05)  # a cleanup that takes a while
            routing.append("ended")

    monkeypatch.setattr(worker.services.parser, "route", ends_slowly)
    async with worker.agents.parse.test_context() as agent:
        await agent.put(raw_value(), key=b"path")
        await settled(lambda: routing == ["routing"], "the first batch routing")
        await agent.put(raw_value(OTHER), key=b"other")
        await settled(lambda: routing == ["routing"] * 2, "the second batch routing")
    # Both were cancelled by the stop, and the agent returned after their `finally` blocks: unacked, ended.
    assert routing == ["routing"] * 2 + ["ended"] * 2
