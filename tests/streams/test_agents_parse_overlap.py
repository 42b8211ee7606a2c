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
from tests.clocks import ManualClock
from tests.streams.agent_support import END, InProcessWorker, Start, in_process_settings, raw_value, settled

OTHER = "inbox/tom/2026-09-27-1100-kv.md"


async def test_the_next_batch_is_routed_while_the_last_is_unacknowledged_and_acked_only_after_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, start: Start
) -> None:
    worker: InProcessWorker = start(in_process_settings(tmp_path), ManualClock(END + timedelta(minutes=10)))
    acknowledged = asyncio.Event()
    sent: list[int] = []
    routed: list[int] = []
    acked: list[int] = []  # raw offsets, as the parse agent acks them

    async def slow_broker(records: Sequence[tuple[bytes, bytes]]) -> None:
        sent.append(len(records))
        if len(sent) == 1:
            await acknowledged.wait()  # the broker has not acknowledged the first batch yet
        worker.outputs.documents.extend(records)

    route = worker.services.parser.route

    async def counted(values: Sequence[tuple[bytes, int | None]], seen_at: datetime) -> list[Routed]:
        routed.append(len(values))
        return await route(values, seen_at)

    real_ack = Stream.ack

    async def recorded_ack(self: Stream[bytes], event: EventT[bytes]) -> bool:
        acked.append(event.message.offset)  # every ack, whoever makes it: the batches' own or the agent's
        return await real_ack(self, event)

    monkeypatch.setattr(worker.outputs, "forward", slow_broker)
    monkeypatch.setattr(worker.services.parser, "route", counted)
    monkeypatch.setattr(Stream, "ack", recorded_ack)
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
