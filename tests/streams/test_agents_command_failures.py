"""In process: a command whose briefing raises at every attempt is dead-lettered (`briefing_failed`), counted and
acknowledged, and the next command answered; re-driven after the fix it is answered once. A failure outside the
briefing is dead-lettered too, never acked silently; a state that cannot be used stops the worker instead. One out
of memory is dead-lettered as `briefing_memory`; one the dead-letter limit stops is neither logged nor counted as
dead-lettered."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any, NoReturn

import pytest

from processors.briefing import briefing_of
from processors.briefing_request import BriefingRequest
from processors.models import Briefing, ControlCommand
from sinks.errors import StateUnreadableError
from streams.command_failures import answer_or_fail
from streams.control import new_command
from streams.failstop import EXIT_CODE
from streams.kafka_settings import DeadLetterSettings
from tests.clocks import ManualClock
from tests.streams.agent_support import END, InProcessWorker, Start, owning_worker, settled


@pytest.fixture
def worker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, start: Start) -> InProcessWorker:
    monkeypatch.setattr("streams.agents.answer_or_fail", partial(answer_or_fail, backoff=0))  # no real waits
    return owning_worker(tmp_path, start, ManualClock(END + timedelta(minutes=10)))


def flush(worker: InProcessWorker, axis: str) -> bytes:
    command: ControlCommand = new_command(axis, "flush", END, worker.clock.now())
    return command.model_dump_json().encode()


class PanicException(BaseException):
    """As PyO3 raises a Rust panic (pyromark, predigest_native): not an Exception."""


def fails_for_inference(request: BriefingRequest, reads: Any) -> Briefing:
    if request.axis.name == "inference":
        raise ZeroDivisionError("a bug this state hits")
    return briefing_of(request, reads)


def panics_for_inference(request: BriefingRequest, reads: Any) -> Briefing:
    if request.axis.name == "inference":
        raise PanicException("a note makes the Markdown parser panic")
    return briefing_of(request, reads)


def runs_out_for_inference(request: BriefingRequest, reads: Any) -> Briefing:
    if request.axis.name == "inference":
        raise MemoryError  # its window too large for the worker's memory
    return briefing_of(request, reads)


def _raises(*args: object, **kwargs: object) -> NoReturn:
    raise RuntimeError("a bug outside the briefing")


def answered(worker: InProcessWorker) -> list[str]:
    return [axis for axis, _ in worker.outputs.briefings]


@pytest.mark.parametrize(
    ("fails", "error"),
    [
        (fails_for_inference, "ZeroDivisionError: a bug this state hits"),
        # A panic went through `except Exception` everywhere: Faust crashed the control agent (the worker up, the
        # command neither answered nor dead-lettered, no command answered any more).
        (panics_for_inference, "PanicException: a note makes the Markdown parser panic"),
    ],
)
async def test_a_command_whose_briefing_always_raises_is_dead_lettered_and_the_next_one_answered(
    worker: InProcessWorker,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    fails: Callable[[BriefingRequest, Any], Briefing],
    error: str,
) -> None:
    monkeypatch.setattr("streams.assembly.briefing_of", fails)
    async with worker.agents.control.test_context() as agent:
        await agent.put(flush(worker, "inference"), key=b"inference", partition=0)
        await agent.put(flush(worker, "risk"), key=b"risk", partition=0)
        await settled(lambda: answered(worker) == ["risk"], "the next command")
    [letter] = worker.outputs.dead_letters
    assert (letter.stage, letter.reason, letter.key, letter.offset) == (
        "control",
        "briefing_failed",
        b"inference",
        0,
    )
    assert letter.error.startswith(f"{error} (at ")
    assert worker.metric("predigest_commands_failed_total", axis="inference", trigger="flush") == 1
    assert worker.metric("predigest_dead_letters_total", stage="control", reason="briefing_failed") == 1
    assert worker.exits == []
    [said] = [
        r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")
    ]  # one line, with the traceback
    assert f"failed at every attempt (briefing_failed): {error}" in said.getMessage() and said.exc_info

    # The fix is deployed; the dead letter, re-driven twice, is answered once.
    monkeypatch.setattr("streams.assembly.briefing_of", briefing_of)
    repeated = "predigest_briefing_commands_repeated_total"
    async with worker.agents.control.test_context() as agent:
        for _ in range(2):
            await agent.put(letter.value, key=b"inference", partition=0)
        await settled(lambda: worker.metric(repeated, axis="inference", trigger="flush") == 1, "the replays")
    assert answered(worker) == ["risk", "inference"] and len(worker.outputs.dead_letters) == 1


async def test_a_failure_outside_the_briefing_is_dead_lettered_not_acked_silently(
    worker: InProcessWorker, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("streams.agents._owned_here", _raises)
    async with worker.agents.control.test_context() as agent:
        await agent.put(flush(worker, "risk"), key=b"risk", partition=0)
        await settled(lambda: len(worker.outputs.dead_letters) == 1, "the dead letter")
    [letter] = worker.outputs.dead_letters
    assert letter.reason == "briefing_failed" and letter.error.startswith(
        "RuntimeError: a bug outside the briefing"
    )
    assert worker.exits == [] and answered(worker) == []


async def test_a_state_that_cannot_be_used_stops_the_worker_and_nothing_is_dead_lettered(
    worker: InProcessWorker, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def damaged(*args: object) -> NoReturn:
        raise StateUnreadableError("the state file is damaged")

    monkeypatch.setattr("streams.pipeline.Pipeline.brief", damaged)
    async with worker.agents.control.test_context() as agent:
        await agent.put(flush(worker, "risk"), key=b"risk", partition=0)
        await settled(lambda: bool(worker.exits), "the stop")
    assert worker.exits[0] == EXIT_CODE and worker.outputs.dead_letters == []
    critical = [r.getMessage() for r in caplog.records if r.levelname == "CRITICAL"]
    assert critical[0].startswith("answering the flush of risk ending ")
    assert "StateUnreadableError: the state file is damaged" in critical[0]


async def test_a_command_out_of_memory_is_dead_lettered_as_such_and_the_next_one_answered(
    worker: InProcessWorker, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr("streams.assembly.briefing_of", runs_out_for_inference)
    async with worker.agents.control.test_context() as agent:
        await agent.put(flush(worker, "inference"), key=b"inference", partition=0)
        await agent.put(flush(worker, "risk"), key=b"risk", partition=0)
        await settled(lambda: answered(worker) == ["risk"], "the next command")
    [letter] = worker.outputs.dead_letters
    assert (letter.reason, letter.key) == ("briefing_memory", b"inference")  # stopped the worker on main
    assert letter.error.startswith("MemoryError (at test_agents_command_failures.py:")
    assert worker.metric("predigest_commands_failed_total", axis="inference", trigger="flush") == 1
    assert worker.metric("predigest_dead_letters_total", stage="control", reason="briefing_memory") == 1
    assert worker.exits == []
    [said] = [r.getMessage() for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")]
    assert "ran out of memory at every attempt (briefing_memory)" in said
    assert "raise PREDIGEST_DUCKDB__MEMORY_LIMIT_MIB" in said and "`predigest dead replay`" in said
    assert "PREDIGEST_DUCKDB__MAX_MEMORY_LIMIT_MIB" in said  # a state write refused at its ceiling


async def test_a_failed_command_that_trips_the_dead_letter_limit_is_not_logged_nor_counted_as_dead_lettered(
    tmp_path: Path,
    start: Start,
    stops: list[int],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr("streams.agents.answer_or_fail", partial(answer_or_fail, backoff=0))
    limits = DeadLetterSettings(max_consecutive=1)
    worker = owning_worker(tmp_path, start, ManualClock(END + timedelta(minutes=10)), dead_letters=limits)
    monkeypatch.setattr("streams.assembly.briefing_of", fails_for_inference)
    async with worker.agents.control.test_context() as agent:
        for _ in range(2):  # the second in a row is past the limit: the worker stops (exit 78) on it
            await agent.put(flush(worker, "inference"), key=b"inference", partition=0)
        await settled(lambda: stops == [78], "the dead-letter limit's stop")
    assert [letter.offset for letter in worker.outputs.dead_letters] == [0]
    # On main the second was logged as gone to the dead-letter topic and counted (2) though it was not sent.
    assert worker.metric("predigest_commands_failed_total", axis="inference", trigger="flush") == 1
    said = [r for r in caplog.records if "failed at every attempt" in r.getMessage()]
    assert len(said) == 1 and "offset 0" in said[0].getMessage()
    [stop] = [r for r in caplog.records if r.levelname == "CRITICAL" and r.name == "streams.dead_letters"]
    assert "2 consecutive records failed" in stop.getMessage() and "offset 1" in stop.getMessage()
    assert stop.exc_info and "a bug this state hits" in str(stop.exc_info[1])  # the traceback, with the stop
