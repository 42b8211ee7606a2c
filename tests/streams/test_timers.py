"""The leader's close check in process, on a clock the test drives: a close is sent once the grace has passed, once
per window and leader, never for a window already emitted, and a tick that cannot read the briefings waits.

On the real broker, with the leader's timer firing, the same is in test_triggers."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from processors.models import ControlCommand
from sinks.state import StateStore
from streams import timers
from streams.control import new_command
from streams.pipeline import Pipeline
from streams.timers import CloseCheck
from tests.clocks import ManualClock
from tests.streams.agent_support import (
    END,
    ONE_PARTITION,
    RecordedOutputs,
    in_process_settings,
    in_process_worker,
)

SH = ZoneInfo("Asia/Shanghai")
CLOSE = datetime(2026, 9, 27, 22, 20, tzinfo=SH)  # the default close time; grace 5 minutes
AXES = ["inference", "llm-infra", "risk", "llm-application"]


class Briefings:
    """The tick's read of the briefings topic: counted, and failing while `down`."""

    def __init__(self) -> None:
        self.reads = 0
        self.down = False

    async def refresh(self) -> int:
        self.reads += 1
        if self.down:
            raise OSError("broker unreachable")
        return 0


@pytest.fixture
async def pipeline(tmp_path: Path) -> AsyncIterator[Pipeline]:
    w = in_process_worker(in_process_settings(tmp_path, close_enabled=True), ManualClock(CLOSE))
    p = w.services.pipeline()
    yield p
    p.state.close()


def check(pipeline: Pipeline, clock: ManualClock, briefings: Briefings, sent: RecordedOutputs) -> CloseCheck:
    return CloseCheck(pipeline.settings, clock, lambda: pipeline, briefings.refresh, sent.command)


def closes(sent: RecordedOutputs) -> list[tuple[str, datetime]]:
    return [(c.axis, c.end) for c in sent.commands if c.trigger == "close"]


async def test_closes_go_out_after_the_grace_once_per_window(pipeline: Pipeline) -> None:
    clock, briefings, sent = ManualClock(CLOSE + timedelta(minutes=4)), Briefings(), RecordedOutputs()
    leader = check(pipeline, clock, briefings, sent)
    await leader.tick()
    # Nothing emitted yet: the latest window whose grace has passed is yesterday's; today's has a minute left.
    assert closes(sent) == [(axis, CLOSE - timedelta(days=1)) for axis in AXES]
    sent.commands.clear()
    clock.advance(60)
    await leader.tick()
    assert closes(sent) == [(axis, CLOSE) for axis in AXES]
    assert all(c.requested_at == clock.now() for c in sent.commands)
    await leader.tick()  # the owners have not answered yet: nothing is sent twice
    assert len(sent.commands) == len(AXES)
    assert briefings.reads == 3  # every tick reads what other workers emitted first


async def test_a_window_already_emitted_is_not_closed_again_by_a_new_leader(pipeline: Pipeline) -> None:
    clock = ManualClock(CLOSE + timedelta(minutes=10))
    emitted = await pipeline.brief(new_command("inference", "close", CLOSE, clock.now()))
    assert emitted is not None
    sent = RecordedOutputs()
    await check(pipeline, clock, Briefings(), sent).tick()
    assert closes(sent) == [(axis, CLOSE) for axis in AXES if axis != "inference"]


async def test_missed_closes_are_caught_up_after_downtime(pipeline: Pipeline) -> None:
    clock = ManualClock(CLOSE + timedelta(minutes=10))
    await pipeline.brief(new_command("risk", "close", CLOSE, clock.now()))
    clock.advance(timedelta(days=2).total_seconds())  # the leader was down for two closes
    sent = RecordedOutputs()
    await check(pipeline, clock, Briefings(), sent).tick()
    risk = [end for axis, end in closes(sent) if axis == "risk"]
    assert risk == [CLOSE + timedelta(days=1), CLOSE + timedelta(days=2)]


async def test_a_tick_that_cannot_read_the_briefings_sends_nothing_and_the_next_one_does(
    pipeline: Pipeline, caplog: pytest.LogCaptureFixture
) -> None:
    clock, briefings, sent = ManualClock(CLOSE + timedelta(minutes=10)), Briefings(), RecordedOutputs()
    leader = check(pipeline, clock, briefings, sent)
    briefings.down = True
    await leader.tick()
    assert sent.commands == []
    assert "closes are checked on the next tick" in caplog.text
    briefings.down = False
    await leader.tick()
    assert len(closes(sent)) == len(AXES)


async def test_no_close_is_sent_with_closes_disabled(pipeline: Pipeline) -> None:
    settings = pipeline.settings.model_copy(update={"close_enabled": False})
    sent: list[ControlCommand] = []

    async def send(command: ControlCommand) -> ControlCommand:
        sent.append(command)
        return command

    briefings = Briefings()
    clock = ManualClock(CLOSE + timedelta(hours=1))
    await CloseCheck(settings, clock, lambda: pipeline, briefings.refresh, send).tick()
    assert sent == [] and briefings.reads == 0


async def test_a_gauge_read_that_meets_a_replaced_state_logs_no_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # The gauges' state reads run in a thread: a damaged state replaced meanwhile closes the connection under
    # them. That tick's state gauges wait for the next one; no ERROR with a traceback pages the operator.
    worker = in_process_worker(
        in_process_settings(tmp_path, kafka=ONE_PARTITION), ManualClock(END + timedelta(minutes=10))
    )
    try:
        worker.own(*[a.name for a in worker.settings.axes])
        services = worker.services
        services.pipeline()
        started, release = threading.Event(), threading.Event()
        count = StateStore.window_document_count

        def held(state: StateStore, *args: Any, **kwargs: Any) -> int:
            started.set()
            release.wait(30)  # as a read waits for the state's lock while a store or the vacuum holds it
            return count(state, *args, **kwargs)

        monkeypatch.setattr(StateStore, "window_document_count", held)
        refreshing = asyncio.create_task(timers.refresh_gauges(services))
        assert await asyncio.to_thread(started.wait, 30)
        services.pipeline.replace_damaged()  # what StateSync.replace_damaged does on the loop meanwhile
        release.set()
        with caplog.at_level(logging.ERROR):
            await asyncio.wait_for(refreshing, 20)
        assert not [r for r in caplog.records if r.levelno >= logging.ERROR and "gauges" in r.getMessage()]
    finally:
        worker.close()
