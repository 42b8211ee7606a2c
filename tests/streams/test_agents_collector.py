"""Python's collector while the window agent stores batches: young collections rarer, then as before once it has
no batch in hand, which is what a briefing starts with (docs/performance.md), in process on a real DuckDB file."""

from __future__ import annotations

import gc
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

import pytest

from processors.models import ControlCommand
from processors.wire import DocumentRecord, notes_in
from sinks import collector
from sinks.state import Position, StateStore
from streams.control import new_command
from streams.emission import Emission
from streams.pipeline import Pipeline
from tests.clocks import ManualClock
from tests.streams.agent_support import (
    END,
    TEXT,
    InProcessWorker,
    Start,
    owning_worker,
    parsed,
    raw_value,
    settled,
)


@pytest.fixture
def worker(tmp_path: Path, start: Start) -> InProcessWorker:
    return owning_worker(tmp_path, start, ManualClock(END + timedelta(minutes=10)))


async def test_young_collections_are_rarer_while_batches_are_stored_and_as_before_for_the_briefing_after(
    worker: InProcessWorker, monkeypatch: pytest.MonkeyPatch
) -> None:
    raws = [raw_value(f"inbox/jay/2026-09-27-10{i:02d}-kv.md", f"{TEXT}note {i}\n") for i in range(30)]
    await parsed(worker, *raws)
    out = worker.outputs.documents
    await settled(lambda: sum(notes_in(value) for _, value in out) == len(raws), "every note parsed", 30)
    records = list(out)
    before = gc.get_threshold()
    storing: list[int] = []
    briefing: list[tuple[int, int, int]] = []
    apply, brief = StateStore.apply_batch, Pipeline._brief

    def recorded(state: StateStore, items: Sequence[tuple[DocumentRecord, Position | None]]) -> list[bool]:
        storing.append(gc.get_threshold()[0])
        return apply(state, items)

    async def recorded_brief(
        pipeline: Pipeline, command: ControlCommand, at: Position | None
    ) -> Emission | None:
        briefing.append(gc.get_threshold())
        return await brief(pipeline, command, at)

    monkeypatch.setattr(StateStore, "apply_batch", recorded)
    monkeypatch.setattr(Pipeline, "_brief", recorded_brief)
    pipeline = worker.services.pipeline()
    async with worker.agents.window.test_context() as agent:
        for key, value in records:
            await agent.put(value, key=key, partition=0)
        await settled(lambda: pipeline.state.document_count("inference") == len(raws), "the notes stored", 30)
        await settled(lambda: pipeline.activity.quiet_for(0), "no batch in hand", 30)
    assert storing and set(storing) == {collector.FLOWING_YOUNG}
    assert gc.get_threshold() == before  # an idle worker's
    assert await pipeline.brief(new_command("inference", "flush", END, worker.clock.now())) is not None
    assert briefing == [before]
