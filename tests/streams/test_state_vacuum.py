"""The worker vacuums its state at a quiet moment: not behind the window agent's batches, nor during a briefing,
and its briefings read the same after it."""

from __future__ import annotations

import logging
from datetime import timedelta
from pathlib import Path

import pytest

from processors.models import AxisSpec
from sinks import vacuum
from sinks.state import Position
from streams import state_vacuum
from streams.assembly import Assembly
from streams.control import new_command
from streams.pipeline import Pipeline
from streams.state_vacuum import EXCESS_ROW_GROUPS, QUIET_SECONDS, QuietVacuum
from tests.clocks import ManualClock
from tests.state_support import document_record, parsed
from tests.streams.agent_support import END, InProcessWorker, Start, owning_worker


def _store_a_few(pipeline: Pipeline, first: int) -> None:
    """Two notes of the window, one batch, checkpointed (a quiet day's notes, or a restart's)."""
    items = []
    for offset in (first, first + 1):
        text = f"# vLLM KV cache {offset}\nServing LLM inference, arXiv:2609.{23100 + offset}, TTFT -{offset}%.\n"
        doc = parsed(f"inbox/jay/2026-09-27-1000-kv{offset}.md", text)
        items.append((document_record("inference", doc, offset), Position("p.documents", 0, offset)))
    pipeline.store_batch(items)
    pipeline.state._db.execute("CHECKPOINT")


def _fragmented(tmp_path: Path, start: Start) -> tuple[ManualClock, InProcessWorker, Pipeline]:
    """A worker whose state holds enough small checkpoints for the vacuum's rule (a few restarts' notes)."""
    clock = ManualClock(END + timedelta(minutes=10))
    worker = owning_worker(tmp_path, start, clock)
    pipeline = worker.services.pipeline()
    for n in range(EXCESS_ROW_GROUPS + 2):
        _store_a_few(pipeline, 2 * n)
    return clock, worker, pipeline


async def _briefing(pipeline: Pipeline, clock: ManualClock, axis: AxisSpec) -> str:
    reads = Assembly(pipeline.settings, pipeline.state, clock)
    briefing, _ = await reads.briefing(axis, new_command(axis.name, "flush", END, clock.now()))
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
