"""The worker vacuums its state at a quiet moment: not behind the window agent's batches, nor during a briefing,
and its briefings read the same after it."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from processors.models import AxisSpec
from processors.wire import DocumentRecord
from sinks import vacuum
from sinks.state import Position, StateStore, Vacuumed
from streams import state_vacuum
from streams.assembly import Assembly
from streams.control import new_command
from streams.pipeline import Pipeline
from streams.state_vacuum import EXCESS_ROW_GROUPS, QUIET_SECONDS, QuietVacuum
from tests.clocks import ManualClock
from tests.state_support import document_record, parsed
from tests.streams.agent_support import END, TEXT, InProcessWorker, Start, owning_worker, raw_value, settled
from tests.streams.agent_support import parsed as forwarded


def _store_a_few(pipeline: Pipeline, first: int) -> None:
    """Two notes of the window, one batch, checkpointed (a quiet day's notes, or a restart's)."""
    items = []
    for offset in (first, first + 1):
        text = f"# vLLM KV cache {offset}\nServing LLM inference, arXiv:2609.{23100 + offset}, TTFT -{offset}%.\n"
        doc = parsed(f"inbox/jay/2026-09-27-1000-kv{offset}.md", text)
        items.append((document_record("inference", doc, offset), Position("p.documents", 0, offset)))
    pipeline.store_batch(items)
    pipeline.state._db.execute("CHECKPOINT")


def _fragmented(
    tmp_path: Path, start: Start, **overrides: Any
) -> tuple[ManualClock, InProcessWorker, Pipeline]:
    """A worker whose state holds enough small checkpoints for the vacuum's rule (a few restarts' notes)."""
    clock = ManualClock(END + timedelta(minutes=10))
    worker = owning_worker(tmp_path, start, clock, **overrides)
    pipeline = worker.services.pipeline()
    for n in range(EXCESS_ROW_GROUPS + 2):
        _store_a_few(pipeline, 2 * n)
    return clock, worker, pipeline


async def _briefing(pipeline: Pipeline, clock: ManualClock, axis: AxisSpec) -> str:
    reads = Assembly(pipeline.settings, pipeline.state, clock)
    briefing, _ = await reads.briefing(
        axis, new_command(axis.name, "flush", END, clock.now()), threading.Event()
    )
    return briefing.model_copy(update={"generated_at": END}).model_dump_json()


async def test_the_worker_vacuums_its_state_once_quiet_and_briefs_the_same(
    tmp_path: Path, start: Start
) -> None:
    clock, worker, pipeline = _fragmented(tmp_path, start)
    axis = worker.settings.axes[0]
    before, fragmented = await _briefing(pipeline, clock, axis), pipeline.state.excess_row_groups()
    assert fragmented >= EXCESS_ROW_GROUPS and "kv19.md" in before
    vacuum = QuietVacuum(worker.services.pipeline, clock)

    clock.advance(QUIET_SECONDS / 2)
    await vacuum.tick()
    assert pipeline.state.excess_row_groups() == fragmented, "the window agent stored a batch a moment ago"
    clock.advance(QUIET_SECONDS / 2)
    async with pipeline.briefing_lock:
        await vacuum.tick()
    assert pipeline.state.excess_row_groups() == fragmented, "a briefing was running"

    await vacuum.tick()
    assert pipeline.state.excess_row_groups() == 0
    assert await _briefing(pipeline, clock, axis) == before
    assert pipeline.state.document_count() == 2 * (EXCESS_ROW_GROUPS + 2)


async def test_a_state_with_few_row_groups_is_left_as_it_is(tmp_path: Path, start: Start) -> None:
    clock = ManualClock(END + timedelta(minutes=10))
    worker = owning_worker(tmp_path, start, clock)
    pipeline = worker.services.pipeline()
    for n in range(3):
        _store_a_few(pipeline, 2 * n)
    fragmented = pipeline.state.excess_row_groups()
    clock.advance(QUIET_SECONDS)
    await QuietVacuum(worker.services.pipeline, clock).tick()
    assert pipeline.state.excess_row_groups() == fragmented > 0


@pytest.mark.parametrize(
    ("module", "name", "remedy"),
    [(state_vacuum, "MAX_NOTES", "predigest rebuild"), (vacuum, "VECTOR_ROWS", "duckdb.memory_limit_mib")],
    ids=["too many notes to merge on the event loop", "notes too large to read once merged"],
)
async def test_a_state_the_vacuum_must_not_merge_is_left_and_the_remedy_named_once(
    tmp_path: Path,
    start: Start,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    module: object,
    name: str,
    remedy: str,
) -> None:
    clock, worker, pipeline = _fragmented(tmp_path, start)
    fragmented = pipeline.state.excess_row_groups()
    # One note past the cap; or a vector of these notes as large as 2 048 of 80 KB (tests/sinks/test_state_vacuum).
    monkeypatch.setattr(module, name, pipeline.state.document_count() - 1 if name == "MAX_NOTES" else 2**40)
    quiet = QuietVacuum(worker.services.pipeline, clock)
    clock.advance(QUIET_SECONDS)
    with caplog.at_level(logging.INFO, logger="streams.state_vacuum"):
        await quiet.tick()
        await quiet.tick()
    assert pipeline.state.excess_row_groups() == fragmented
    assert [r.getMessage().count(remedy) for r in caplog.records] == [1]


class _Spans:
    """When each vacuum of the state started and ended (the real one runs in between)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.spans: list[tuple[float, float]] = []
        self.started = threading.Event()
        run = StateStore.vacuum

        def timed(state: StateStore) -> Vacuumed | None:
            began = time.monotonic()
            self.started.set()
            try:
                return run(state)
            finally:
                self.spans.append((began, time.monotonic()))

        monkeypatch.setattr(StateStore, "vacuum", timed)


async def test_the_event_loop_goes_on_while_the_state_is_vacuumed(
    tmp_path: Path, start: Start, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock, worker, pipeline = _fragmented(tmp_path, start)
    vacuum, spans, ticks = QuietVacuum(worker.services.pipeline, clock), _Spans(monkeypatch), []

    async def tick() -> None:  # what the loop otherwise does: heartbeats, fetches, /healthz and /metrics
        while True:
            ticks.append(time.monotonic())
            await asyncio.sleep(0.002)

    ticking = asyncio.create_task(tick())
    clock.advance(QUIET_SECONDS)
    try:
        await vacuum.tick()
    finally:
        ticking.cancel()
    assert pipeline.state.excess_row_groups() == 0
    [(began, ended)] = spans.spans
    assert [t for t in ticks if began < t < ended], f"no tick in the {ended - began:.3f} s vacuum"


async def test_a_stop_during_the_vacuum_waits_for_its_end(
    tmp_path: Path, start: Start, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock, worker, pipeline = _fragmented(tmp_path, start)
    spans = _Spans(monkeypatch)
    clock.advance(QUIET_SECONDS)
    ticking = asyncio.create_task(QuietVacuum(worker.services.pipeline, clock).tick())
    assert await asyncio.to_thread(spans.started.wait, 30)
    ticking.cancel()  # what the worker's stop does to its timers
    with pytest.raises(asyncio.CancelledError):
        await ticking
    # Returned only once the vacuum was done: the state's close (next in a stop) never meets it half-way.
    assert len(spans.spans) == 1
    assert pipeline.state.excess_row_groups() == 0


class _HeldStore:
    """The window agent's next batch held in its thread before its transaction, until released."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.started, self.release = threading.Event(), threading.Event()
        apply = StateStore.apply_batch

        def held(state: StateStore, items: Sequence[tuple[DocumentRecord, Position | None]]) -> list[bool]:
            self.started.set()
            self.release.wait(30)
            return apply(state, items)

        monkeypatch.setattr(StateStore, "apply_batch", held)


async def test_no_vacuum_starts_while_the_window_agent_stores_a_batch(
    tmp_path: Path, start: Start, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock, worker, pipeline = _fragmented(tmp_path, start)
    fragmented = pipeline.state.excess_row_groups()
    records = await forwarded(
        worker, raw_value("inbox/jay/2026-09-27-1000-burst.md", TEXT + "a burst begins\n")
    )
    vacuum, store = QuietVacuum(worker.services.pipeline, clock), _HeldStore(monkeypatch)
    async with worker.agents.window.test_context() as agent:
        for key, value in records:
            await agent.put(value, key=key, partition=0)
        assert await asyncio.to_thread(store.started.wait, 30)
        # A quiet minute by the clock since the last store ended, but a burst's batch is under way: a vacuum now
        # would hold its transaction (and every batch behind it) for as long as it runs.
        clock.advance(QUIET_SECONDS)
        try:
            await vacuum.tick()
            assert pipeline.state.excess_row_groups() == fragmented
        finally:
            store.release.set()  # the agent's stop waits for its store
        await settled(
            lambda: pipeline.state.document_count() > 2 * (EXCESS_ROW_GROUPS + 2), "the burst stored"
        )
    clock.advance(QUIET_SECONDS)
    await vacuum.tick()
    assert pipeline.state.excess_row_groups() == 0, "quiet again"


async def test_no_vacuum_starts_while_a_record_waits_for_its_batch(tmp_path: Path, start: Start) -> None:
    # A batch is handed over batch_seconds after its first record (longer behind a backlog): a vacuum started
    # meanwhile would hold up the burst that record begins.
    clock, worker, pipeline = _fragmented(tmp_path, start, batch_seconds=1.0)
    fragmented = pipeline.state.excess_row_groups()
    records = await forwarded(
        worker, raw_value("inbox/jay/2026-09-27-1000-burst.md", TEXT + "a burst begins\n")
    )
    clock.advance(QUIET_SECONDS)
    vacuum = QuietVacuum(worker.services.pipeline, clock)
    async with worker.agents.window.test_context() as agent:
        for key, value in records:
            await agent.put(value, key=key, partition=0)
        await vacuum.tick()  # well within batch_seconds: the record waits in the batch buffer
        assert pipeline.state.excess_row_groups() == fragmented
        await settled(
            lambda: pipeline.state.document_count() > 2 * (EXCESS_ROW_GROUPS + 2), "the burst stored", 30
        )
