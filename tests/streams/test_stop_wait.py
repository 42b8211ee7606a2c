"""What a worker's stop waits for (streams.stop_wait), on Faust's own consumer (built, never started): a command
taken before the signal ends first, a parse batch's raw records are not waited for, and nothing past the bound."""

from __future__ import annotations

import asyncio
import inspect
import logging
from pathlib import Path
from typing import Any

import faust
import pytest
from faust.transport.consumer import Consumer
from faust.types import TP
from faust.types.tuples import ConsumerMessage

from streams.app import WorkerApp
from streams.stop_wait import TAKEN_SECONDS, settle_taken
from tests.clocks import ManualClock
from tests.streams.agent_support import Start, in_process_settings


def _taken(app: faust.App, topic: str, offset: int) -> ConsumerMessage:
    """A record an agent took from `topic` and has not acked: tracked by the consumer, as Faust's stream does."""
    message = ConsumerMessage(topic, 0, offset, 0.0, 0, [], b"key", b"value", None, tp=TP(topic, 0))
    app.consumer.track_message(message)
    return message


async def test_the_stop_waits_for_a_command_being_answered_and_not_for_the_raw_records(
    tmp_path: Path, start: Start
) -> None:
    worker = start(in_process_settings(tmp_path), ManualClock())
    raw, control = worker.settings.kafka.topic("raw"), worker.settings.kafka.topic("control")
    taken = [_taken(worker.app, raw, 7), _taken(worker.app, control, 3)]
    settling = asyncio.create_task(settle_taken(worker.app.consumer, raw, worker.clock))
    await asyncio.sleep(0.3)
    assert not settling.done(), "the stop went on while the command was being answered"
    worker.app.consumer.ack(taken[1])
    await asyncio.wait_for(settling, 5)  # the raw record still unacked: its batch is dropped, parsed again
    assert not taken[0].acked


async def test_the_stop_does_not_wait_for_a_command_whose_briefing_it_cut_short(
    tmp_path: Path, start: Start, caplog: pytest.LogCaptureFixture
) -> None:
    # Its build cancelled as the stop began (streams.briefing_stop): the record stays unacked for the restart, and
    # waiting the 8 s for an ack that cannot come was what held a stop during a large briefing.
    worker = start(in_process_settings(tmp_path), ManualClock())
    control = worker.settings.kafka.topic("control")
    taken = _taken(worker.app, control, 3)
    with caplog.at_level(logging.WARNING, logger="streams.stop_wait"):
        await asyncio.wait_for(
            settle_taken(worker.app.consumer, "raw", worker.clock, left={(control, 0, 3)}), 5
        )
    assert not taken.acked and not [r for r in caplog.records if r.name == "streams.stop_wait"]


async def test_a_record_unacked_past_the_bound_is_named_once_and_the_stop_goes_on(
    tmp_path: Path, start: Start, caplog: pytest.LogCaptureFixture
) -> None:
    worker = start(in_process_settings(tmp_path), ManualClock())
    control = worker.settings.kafka.topic("control")
    taken = _taken(worker.app, control, 3)
    settling = asyncio.create_task(settle_taken(worker.app.consumer, "raw", worker.clock))
    await asyncio.sleep(0.1)
    worker.clock.advance(TAKEN_SECONDS)
    with caplog.at_level(logging.WARNING, logger="streams.stop_wait"):
        await asyncio.wait_for(settling, 5)
    lines = [r.getMessage() for r in caplog.records if r.name == "streams.stop_wait"]
    assert (
        len(lines) == 1
        and f"1 record(s) taken before it and went on without them ({control}[0]@3)" in lines[0]
    )
    assert not taken.acked


def test_the_wait_overridden_is_the_one_faust_calls_at_a_stop_and_a_revocation() -> None:
    # Faust's private step: renamed by an upgrade, the override would be skipped and the stop wait, unbounded,
    # for every parse batch taken (the 15 s hard exit), with nothing failing but the slow integration test.
    assert "_consumer_wait_empty" in vars(WorkerApp) and "_consumer_wait_empty" in vars(faust.App)
    for caller in (faust.App._stop_consumer, faust.App._on_partitions_revoked):
        assert "self._consumer_wait_empty" in inspect.getsource(caller)


async def test_a_wait_cancelled_ends_at_once(tmp_path: Path, start: Start) -> None:
    # The stop cancels a revocation's wait; Faust's own wait for an ack swallowed it: the wait went on, unbounded.
    worker = start(in_process_settings(tmp_path), ManualClock())
    control = worker.settings.kafka.topic("control")
    taken = _taken(worker.app, control, 3)
    settling = asyncio.create_task(settle_taken(worker.app.consumer, "raw", worker.clock))
    await asyncio.sleep(0.3)
    settling.cancel()
    done, _ = await asyncio.wait({settling}, timeout=3)
    assert settling in done and settling.cancelled(), "the cancelled wait went on"
    assert not taken.acked


def test_a_revocations_wait_ends_once_the_consumer_stops() -> None:
    # A stop during a revocation: Faust's wait there, for every record taken, looks at the consumer's `should_stop`
    # between acks, so it ends a second after the consumer's stop begins, after the stop's own bounded wait
    # (test_worker_stop_integration.py: renamed by an upgrade, that wait could hold the stop to the hard exit).
    assert "while not self.should_stop" in inspect.getsource(Consumer.wait_empty)


async def test_an_ack_wakes_the_stops_wait_through_the_future_fausts_ack_notifies(
    tmp_path: Path, start: Start
) -> None:
    # Our own wait arms Faust's private `_waiting_for_ack`: renamed by an upgrade, an ack would no longer wake it
    # and each record taken would cost the stop a full ACK_WAIT_SECONDS, with every other test still passing.
    assert "notify(self._waiting_for_ack)" in inspect.getsource(Consumer.ack)
    worker = start(in_process_settings(tmp_path), ManualClock())
    consumer: Any = worker.app.consumer  # its private `_waiting_for_ack`
    control = worker.settings.kafka.topic("control")
    worker.app.topics.acking_topics.add(control)  # as the conductor's subscription does, the worker started
    taken = _taken(worker.app, control, 3)
    settling = asyncio.create_task(settle_taken(consumer, "raw", worker.clock))
    await asyncio.sleep(0.3)
    armed = consumer._waiting_for_ack
    assert armed is not None and not armed.done(), "the stop's wait is not the one an ack wakes"
    consumer.ack(taken)
    assert armed.done(), "the ack did not wake the stop's wait"
    settling.cancel()  # before its commit of the acked offset, which needs the consumer started
    await asyncio.wait({settling}, timeout=3)
    assert settling.cancelled() and consumer._waiting_for_ack is None
