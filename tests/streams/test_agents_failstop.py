"""A batch's task that fails (a bug outside must_finish's steps) stops the worker at once, though no further batch
comes, with one CRITICAL line and its records unacked, so Kafka delivers them again after the restart; in process,
the worker's halt recorded (`InProcessWorker.exits`)."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path
from typing import NoReturn

import pytest

from streams.failstop import EXIT_CODE
from tests.clocks import ManualClock
from tests.streams.agent_support import (
    END,
    Start,
    acks_recorded,
    in_process_settings,
    owning_worker,
    parsed,
    raw_value,
    settled,
)


def _bug(*args: object, **kwargs: object) -> NoReturn:
    raise RuntimeError("a bug")


def _stop_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelname == "CRITICAL"]


async def test_a_parse_batch_that_fails_on_a_quiet_stream_stops_the_worker_with_its_records_unacked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, start: Start, caplog: pytest.LogCaptureFixture
) -> None:
    worker = start(in_process_settings(tmp_path), ManualClock(END + timedelta(minutes=10)))
    acked = acks_recorded(monkeypatch)
    monkeypatch.setattr("streams.agents.documents_records", _bug)  # after routing, outside must_finish
    async with worker.agents.parse.test_context() as agent:
        await agent.put(raw_value(), key=b"path")
        await settled(lambda: worker.exits == [EXIT_CODE], "the stop, with no further batch")
    assert worker.outputs.documents == [] and acked == []
    [line] = _stop_lines(caplog)
    assert line.startswith("a parse batch failed: a bug; stopping the worker (exit 75)")
    assert "without acknowledging its records, which Kafka will deliver again after the restart" in line


async def test_a_documents_batch_that_fails_on_a_quiet_stream_stops_the_worker_with_nothing_stored_or_acked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, start: Start, caplog: pytest.LogCaptureFixture
) -> None:
    worker = owning_worker(tmp_path, start, ManualClock(END + timedelta(minutes=10)))
    [(key, value)] = await parsed(worker, raw_value())
    acked = acks_recorded(monkeypatch)
    monkeypatch.setattr("streams.agents._note_outcomes", _bug)  # in the store's task, outside must_finish
    async with worker.agents.window.test_context() as agent:
        await agent.put(value, key=key, partition=0)
        await settled(lambda: worker.exits == [EXIT_CODE], "the stop, with no further batch")
        await asyncio.sleep(0.05)  # nothing acked afterwards either
    assert acked == [] and worker.services.pipeline().state.document_count() == 0
    [line] = _stop_lines(caplog)
    assert line.startswith("storing a documents batch failed: a bug; stopping the worker (exit 75)")


async def test_a_window_agent_that_fails_outside_a_batch_task_stops_the_worker_rather_than_restart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, start: Start, caplog: pytest.LogCaptureFixture
) -> None:
    # Faust's own handling commits and restarts the agent, whose next batches are then acked past this one.
    worker = owning_worker(tmp_path, start, ManualClock(END + timedelta(minutes=10)))
    [(key, value)] = await parsed(worker, raw_value())
    acked = acks_recorded(monkeypatch)
    monkeypatch.setattr("streams.agents._decode_all", _bug)  # in the agent's loop, before any task
    async with worker.agents.window.test_context() as agent:
        await agent.put(value, key=key, partition=0)
        await settled(lambda: worker.exits == [EXIT_CODE], "the stop")
    assert acked == [] and worker.services.pipeline().state.document_count() == 0
    [line] = _stop_lines(caplog)
    assert line.startswith("the window agent failed: a bug; stopping the worker (exit 75)")
