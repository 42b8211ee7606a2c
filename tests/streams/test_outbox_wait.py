"""The control agent's wait for the outbox's lock at a stop (streams.outbox_wait): ended as the stop begins, its
command left unacknowledged for the restart; the lock taken as before otherwise."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from sinks.offsets import Position
from streams.outbox_wait import turn
from tests.clocks import ManualClock
from tests.streams.agent_support import Start, in_process_settings

AT = Position("predigest.control", 0, 7)


async def test_a_stop_while_a_command_waits_for_the_outbox_leaves_the_command_and_never_takes_the_lock(
    tmp_path: Path, start: Start, caplog: pytest.LogCaptureFixture
) -> None:
    # The outbox's retry (a restored 100k briefing sent again) holds the lock: the stop waited 8 s for the command.
    services = start(in_process_settings(tmp_path), ManualClock()).services
    stop, lock, turns = services.pipeline.build_stop, services.outbox.lock, []

    async def answer() -> None:
        async with turn(services, AT):
            turns.append(AT)

    async with lock:
        answering = asyncio.ensure_future(answer())
        await asyncio.sleep(0.1)
        stop.begin()
        await asyncio.sleep(0.1)
        assert stop.left == {("predigest.control", 0, 7)}, "the stop would wait for the command"
        assert not answering.done(), "the answer ended: the control agent would acknowledge the command"
    await asyncio.sleep(0.1)
    assert turns == [] and not lock.locked(), "the command took the lock after the stop began"
    answering.cancel()  # the stop cancels the agents once its wait is over
    await asyncio.wait({answering}, timeout=3)
    assert answering.cancelled()
    [line] = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert line.startswith(
        "the command at predigest.control[0]@7 waited for the outbox's lock when the worker's stop"
    )


async def test_without_a_stop_the_command_takes_the_lock_once_the_outbox_lets_go(
    tmp_path: Path, start: Start
) -> None:
    services = start(in_process_settings(tmp_path), ManualClock()).services
    lock, turns = services.outbox.lock, []

    async def answer() -> None:
        async with turn(services, AT):
            turns.append(lock.locked())

    async with lock:
        answering = asyncio.ensure_future(answer())
        await asyncio.sleep(0.1)
        assert not answering.done()
    await asyncio.wait_for(answering, 3)
    assert turns == [True] and not lock.locked() and services.pipeline.build_stop.left == set()


async def test_a_command_cancelled_as_the_lock_is_granted_lets_it_go(tmp_path: Path, start: Start) -> None:
    # Cancelled in the loop turn between the grant and the agent's resuming, it kept the lock: every later answer
    # and retry of the outbox would wait for it forever.
    services = start(in_process_settings(tmp_path), ManualClock()).services
    lock, turns = services.outbox.lock, []

    async def answer() -> None:
        async with turn(services, AT):
            turns.append(AT)

    await lock.acquire()
    answering = asyncio.ensure_future(answer())
    await asyncio.sleep(0.1)
    lock.release()
    await asyncio.sleep(0)  # the waiting take is granted the lock and ends; its agent has not resumed
    answering.cancel()
    await asyncio.wait({answering}, timeout=3)
    assert answering.cancelled() and turns == []
    assert not lock.locked(), "the cancelled command kept the outbox's lock"
