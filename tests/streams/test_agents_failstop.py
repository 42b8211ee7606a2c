"""A batch's task that fails (a bug outside must_finish's steps) stops the worker at once, though no further batch
comes, with one CRITICAL line and its records unacked, so Kafka delivers them again after the restart; in process,
the worker's halt recorded (`InProcessWorker.exits`)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import NoReturn

import pytest

from streams.failstop import EXIT_CODE, must_finish
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


class PanicException(BaseException):
    """As PyO3 raises a Rust panic: not an Exception."""


def _panic(*args: object, **kwargs: object) -> NoReturn:
    raise PanicException("a bug")


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


@pytest.mark.parametrize(
    ("where", "said", "bug"),
    [
        # In the store's task, outside must_finish: no further batch comes to raise it in the loop.
        ("streams.agents._note_outcomes", "storing a documents batch failed", _bug),
        ("streams.agents._note_outcomes", "storing a documents batch failed", _panic),
        # In the agent's loop, before any task: Faust's own handling commits and restarts the agent, whose next
        # batches are then acked past this one; a panic (a BaseException) would crash it, the worker left up.
        ("streams.agents._decode_all", "the window agent failed", _bug),
        ("streams.agents._decode_all", "the window agent failed", _panic),
    ],
)
async def test_a_window_agent_that_fails_on_a_quiet_stream_stops_the_worker_with_nothing_stored_or_acked(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    start: Start,
    caplog: pytest.LogCaptureFixture,
    where: str,
    said: str,
    bug: Callable[..., NoReturn],
) -> None:
    worker = owning_worker(tmp_path, start, ManualClock(END + timedelta(minutes=10)))
    [(key, value)] = await parsed(worker, raw_value())
    acked = acks_recorded(monkeypatch)
    monkeypatch.setattr(where, bug)
    async with worker.agents.window.test_context() as agent:
        await agent.put(value, key=key, partition=0)
        await settled(lambda: worker.exits == [EXIT_CODE], "the stop, with no further batch")
        await asyncio.sleep(0.05)  # nothing acked afterwards either
    assert acked == [] and worker.services.pipeline().state.document_count() == 0
    [line] = _stop_lines(caplog)
    assert line.startswith(f"{said}: a bug; stopping the worker (exit 75)")


async def test_a_step_that_keeps_failing_in_process_stops_through_the_injected_halt_not_os_exit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, start: Start
) -> None:
    # must_finish's own default stop is os._exit: in process it would end pytest, not record the stop.
    ended: list[int] = []

    def process_exit(code: int) -> NoReturn:
        ended.append(code)
        raise RuntimeError(f"the test process would exit {code}")

    monkeypatch.setattr("streams.failstop.os._exit", process_exit)
    monkeypatch.setattr("streams.agents.must_finish", partial(must_finish, attempts=2, backoff=0))
    worker = owning_worker(tmp_path, start, ManualClock(END + timedelta(minutes=10)))
    [(key, value)] = await parsed(worker, raw_value())
    monkeypatch.setattr("streams.agents.store_when_ready", _bug)  # the store step itself, under must_finish
    async with worker.agents.window.test_context() as agent:
        await agent.put(value, key=key, partition=0)
        await settled(lambda: bool(ended or worker.exits), "the stop")
    # The in-process halt raises, so the store's task fails with it and stops the worker a second time.
    assert (worker.exits[:1], ended) == ([EXIT_CODE], [])
