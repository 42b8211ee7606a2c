"""The window agent's DuckDB transaction runs in a thread: the event loop goes on meanwhile, and a stop waits for
the commit before the batch can be acked (docs/guarantees.md), in process on a real DuckDB file."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path

import pytest

from processors.wire import DocumentRecord, Notes, decode_rows, notes_in
from sinks.state import Position, StateStore
from streams import agents
from streams.agents import T
from streams.failstop import to_thread_to_the_end
from tests.clocks import ManualClock
from tests.streams.agent_support import (
    END,
    TEXT,
    InProcessWorker,
    Records,
    Start,
    owning_worker,
    parsed,
    raw_value,
    settled,
)

NOTES = 400  # a transaction of ~0.1-0.2 s: long beside the loop's 2 ms ticks


class Timed:
    """When each of the state's batch transactions started and ended (the real one runs in between)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.spans: list[tuple[float, float]] = []
        self.rows = 0
        self.started = threading.Event()
        apply = StateStore.apply_batch

        def timed(state: StateStore, items: Sequence[tuple[DocumentRecord, Position | None]]) -> list[bool]:
            began = time.monotonic()
            self.started.set()
            try:
                return apply(state, items)
            finally:
                self.spans.append((began, time.monotonic()))
                self.rows += len(items)

        monkeypatch.setattr(StateStore, "apply_batch", timed)


async def _many_notes(worker: InProcessWorker) -> Records:
    """The documents records of NOTES notes, as the parse agent forwards them."""
    body = TEXT + "".join(f"KV cache paging, line {i} of a long note about serving.\n" for i in range(60))
    out = worker.outputs.documents
    async with worker.agents.parse.test_context() as agent:
        for i in range(NOTES):
            path = f"inbox/jay/2026-09-27-{i // 60:02d}{i % 60:02d}-kv.md"
            await agent.put(raw_value(path, f"{body}note {i}\n"), key=b"path")
        await settled(
            lambda: sum(notes_in(value) for _, value in out) >= NOTES, "the parse agent's records", 60
        )
    return list(out)


def _rows(records: Records) -> int:
    return sum(len(decode_rows(value)) for _, value in records)


@pytest.fixture
def worker(tmp_path: Path, start: Start) -> InProcessWorker:
    return owning_worker(tmp_path, start, ManualClock(END + timedelta(minutes=10)))


async def test_the_event_loop_goes_on_while_the_window_agent_stores_a_batch(
    worker: InProcessWorker, monkeypatch: pytest.MonkeyPatch
) -> None:
    records = await _many_notes(worker)
    timed = Timed(monkeypatch)
    ticks: list[float] = []

    async def tick() -> None:  # what the loop otherwise does: parse results, fetches, HTTP answers
        while True:
            ticks.append(time.monotonic())
            await asyncio.sleep(0.002)

    ticking = asyncio.create_task(tick())
    state = worker.services.pipeline().state
    try:
        async with worker.agents.window.test_context() as agent:
            for key, value in records:
                await agent.put(value, key=key, partition=0)
            # Not polled through the state: its users on the loop wait for the lock the transaction holds.
            await settled(lambda: timed.rows == _rows(records), "the notes stored", 60)
    finally:
        ticking.cancel()
    assert state.document_count("inference") == NOTES
    began, ended = max(timed.spans, key=lambda span: span[1] - span[0])
    assert ended - began > 0.05, "too short a transaction to show anything"
    during = [t for t in ticks if began < t < ended]
    # On the event loop the transaction leaves no tick between its start and its end; in its thread the loop runs
    # at least while DuckDB commits (the GIL released), if not while the rows are built.
    assert during, f"no tick in {ended - began:.3f} s"


async def test_a_stop_during_a_store_waits_for_its_commit(
    worker: InProcessWorker, monkeypatch: pytest.MonkeyPatch
) -> None:
    records = await _many_notes(worker)
    timed = Timed(monkeypatch)
    state = worker.services.pipeline().state
    async with worker.agents.window.test_context() as agent:
        for key, value in records:
            await agent.put(value, key=key, partition=0)
        assert await asyncio.to_thread(timed.started.wait, 30)
    # The agent was stopped (cancelled) mid-transaction: it returned only once the commit was done.
    assert len(timed.spans) == 1
    assert state.document_count() == timed.rows > 0


async def test_a_store_whose_state_is_replaced_before_its_thread_runs_leaves_the_replacement_to_its_catch_up(
    worker: InProcessWorker, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A damaged state replaced while a batch waits for a thread: the batch must not land in the fresh state
    before its catch-up, which would then replay only from after it and lose every earlier note for good."""
    first = await parsed(worker, raw_value("inbox/jay/2026-09-27-1000-a.md", TEXT + "first\n"))
    second = await parsed(worker, raw_value("inbox/jay/2026-09-27-1001-b.md", TEXT + "second\n"))
    services = worker.services
    old = services.pipeline().state
    run = to_thread_to_the_end
    replaced: list[StateStore] = []

    async def replaced_first(step: Callable[[], T], what: str) -> T:
        if old.applied_offset("predigest.documents", 0) is not None and not replaced:
            # What StateSync.replace_damaged does, while the store waits for an executor thread.
            services.ownership.assign(sorted(services.ownership.owned_partitions))
            services.pipeline.replace_damaged()
            replaced.append(services.pipeline().state)
        return await run(step, what)

    monkeypatch.setattr(agents, "to_thread_to_the_end", replaced_first)
    async with worker.agents.window.test_context() as agent:
        for key, value in first:
            await agent.put(value, key=key, partition=0)
        await settled(
            lambda: old.applied_offset("predigest.documents", 0) is not None, "the first stored", 30
        )
        for key, value in second:
            await agent.put(value, key=key, partition=0)
        await settled(lambda: bool(replaced), "the state replaced", 30)
        # The store ran on the replaced state, failed, and waits for the catch-up (no fixed sleep: CI is loaded).
        await settled(lambda: services.ownership.catching_up() == {0}, "the partition catching up", 30)
        assert replaced[0].applied_offset("predigest.documents", 0) is None
        assert replaced[0].document_count() == 0


async def test_the_next_batch_is_decoded_while_one_is_stored(
    worker: InProcessWorker, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Decoding a batch waited for the store of the one before: behind a backlog the window agent then set the
    # ingest's pace with a core to spare (docs/performance.md).
    records = await _many_notes(worker)
    assert len(records) >= 2
    decodes: list[tuple[float, float]] = []
    stores: list[tuple[float, float]] = []
    started = threading.Event()
    decode, apply = agents._decode_all, StateStore.apply_batch

    def timed_decode(values: list[bytes]) -> list[Notes | ValueError]:
        began = time.monotonic()
        try:
            return decode(values)
        finally:
            decodes.append((began, time.monotonic()))

    def slow_apply(state: StateStore, items: Sequence[tuple[DocumentRecord, Position | None]]) -> list[bool]:
        began = time.monotonic()
        started.set()
        time.sleep(0.3)
        try:
            return apply(state, items)
        finally:
            stores.append((began, time.monotonic()))

    monkeypatch.setattr(agents, "_decode_all", timed_decode)
    monkeypatch.setattr(StateStore, "apply_batch", slow_apply)
    half = len(records) // 2
    async with worker.agents.window.test_context() as agent:
        for key, value in records[:half]:
            await agent.put(value, key=key, partition=0)
        assert await asyncio.to_thread(started.wait, 30)
        for key, value in records[half:]:
            await agent.put(value, key=key, partition=0)
        await settled(lambda: len(stores) >= 2, "both batches stored", 60)
    assert worker.services.pipeline().state.document_count("inference") == NOTES
    first_began, first_ended = stores[0]
    assert any(first_began < b and e < first_ended for b, e in decodes[1:]), (decodes, stores)
