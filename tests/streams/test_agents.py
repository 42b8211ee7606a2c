"""The agents in process, in milliseconds: Faust's `test_context()` feeds each one, as Kafka would, a stream that
it reads with `take_events`; the state is a real DuckDB file and only the sends to the topics are recorded.

`put` returns once the stream has taken the event, before the batch it joins is handled (`take_events` hands the
batch over after `batch_seconds`), so each test waits for the effect it checks (`settled`). The same guarantees
on the real broker, with real commits and crashes, are in test_pipeline_integration, test_faults_worker,
test_poison_commands and test_workers_integration.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import NoReturn
from uuid import uuid4

import pytest
from aiokafka.errors import KafkaConnectionError

from processors.models import Briefing, ControlCommand, Trigger
from processors.window import window_bounds
from processors.wire import decode_rows, note_records
from processors.wire_frames import pack_notes
from streams.agents import deliver
from streams.control import new_command
from streams.emission import Emission
from streams.failstop import must_finish
from streams.settings import DeadLetterSettings
from tests.clocks import ManualClock
from tests.streams.agent_support import (
    END,
    NOTE,
    TEXT,
    InProcessWorker,
    Records,
    Start,
    in_process_settings,
    owning_worker,
    parsed,
    raw_value,
    settled,
)

OTHER = "inbox/tom/2026-09-27-1100-kv.md"


@pytest.fixture
def worker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, start: Start) -> InProcessWorker:
    # A step that keeps failing ends the worker process without acking (Services.halt); here the in-process
    # worker's halt raises StepFailed, which fails the test.
    monkeypatch.setattr("streams.agents.must_finish", partial(must_finish, attempts=2))
    return start(in_process_settings(tmp_path), ManualClock(END + timedelta(minutes=10)))


def of_axis(records: Records, axis: str) -> Records:
    return [(key, value) for key, value in records if key == axis.encode()]


async def stored(worker: InProcessWorker, records: Records) -> None:
    """Feed documents records to the window agent, each on its axis's partition; wait until all are applied."""
    pipeline = worker.services.pipeline()
    topic = worker.settings.kafka.topic("documents")
    last: dict[int, int] = {}
    async with worker.agents.window.test_context() as agent:
        for key, value in records:
            event = await agent.put(value, key=key, partition=worker.partition_of(key.decode()))
            last[event.message.partition] = event.message.offset
        await settled(
            lambda: all(pipeline.state.applied_offset(topic, p) == o for p, o in last.items()), "the window"
        )


def command(worker: InProcessWorker, axis: str = "inference", trigger: Trigger = "flush") -> ControlCommand:
    return new_command(axis, trigger, END, worker.clock.now())


async def test_the_parse_agent_forwards_each_axis_a_record_carrying_the_raw_offset(
    worker: InProcessWorker,
) -> None:
    records = await parsed(worker, raw_value())
    assert b"inference" in {key for key, _ in records}
    for header in (row.header for _, value in records for row in decode_rows(value)):
        assert (header.path, header.raw_offset) == (NOTE, 0)  # the offset orders the versions of a path
    assert worker.metric("predigest_records_unreadable_total", stage="raw") == 0


async def test_an_unreadable_raw_record_is_dead_lettered_whole_and_its_batch_goes_on(
    worker: InProcessWorker,
) -> None:
    records = await parsed(worker, b"not a raw file", raw_value())
    assert worker.metric("predigest_records_unreadable_total", stage="raw") == 1
    assert {row.header.raw_offset for _, value in records for row in decode_rows(value)} == {1}
    [letter] = worker.outputs.dead_letters
    assert (letter.topic, letter.offset, letter.stage, letter.reason) == (
        worker.settings.kafka.topic("raw"),
        0,
        "raw",
        "unreadable",
    )
    assert (letter.key, letter.value) == (b"path", b"not a raw file")  # byte for byte, for a replay
    assert letter.failed_at == worker.clock.now() and "RawFile" in letter.error
    assert worker.metric("predigest_dead_letters_total", stage="raw", reason="unreadable") == 1


async def test_the_window_agent_stores_a_batch_with_its_offsets(worker: InProcessWorker) -> None:
    worker.own("inference", "llm-infra", "risk", "llm-application")
    await stored(worker, await parsed(worker, raw_value(), raw_value(OTHER, TEXT + "more\n")))
    assert worker.services.pipeline().state.document_count("inference") == 2
    assert worker.metric("predigest_documents_stored_total", axis="inference", kind="inbox") == 2


async def test_records_wait_for_their_partition_to_catch_up_and_a_revoked_partition_stores_nothing(
    worker: InProcessWorker,
) -> None:
    worker.own("inference", ready=False)  # the catch-up replay of its partition is still running
    [(_, first)] = of_axis(await parsed(worker, raw_value()), "inference")
    [(_, second)] = of_axis(await parsed(worker, raw_value(OTHER, TEXT + "more\n")), "inference")
    partition = worker.partition_of("inference")
    state = worker.services.pipeline().state
    async with worker.agents.window.test_context() as agent:
        await agent.put(first, key=b"inference", partition=partition)
        await asyncio.sleep(10 * worker.settings.batch_seconds)  # the batch is handed over, and waits
        assert state.document_count("inference") == 0  # storing it now would make the replay skip it
        worker.services.ownership.mark_ready(partition)
        await settled(lambda: state.document_count("inference") == 1, "the record once caught up")
        worker.services.ownership.revoke({partition})
        await agent.put(second, key=b"inference", partition=partition)
        await agent.put(b"not a documents record", key=b"inference", partition=partition)
        await settled(
            lambda: worker.metric("predigest_records_unreadable_total", stage="documents") == 1, "the batch"
        )
    assert state.document_count("inference") == 1  # the partition moved on: its new owner stores the second


async def test_on_one_partition_a_note_is_one_record_stored_as_a_row_for_each_of_its_axes(
    tmp_path: Path, start: Start
) -> None:
    worker = owning_worker(tmp_path, start, ManualClock(END + timedelta(minutes=10)))
    axes = [a.name for a in worker.settings.axes]
    [(key, value)] = await parsed(worker, raw_value())
    assert key == axes[0].encode()
    assert [row.header.axis for row in decode_rows(value)] == axes
    # The same note again at the next offset (a retried send): its rows are stored already.
    await stored(worker, [(key, value), (key, value)])
    state = worker.services.pipeline().state
    assert [state.document_count(axis) for axis in axes] == [1] * len(axes)
    assert state.applied_offset(worker.settings.kafka.topic("documents"), 0) == 1


async def test_a_note_of_a_record_that_does_not_read_is_dead_lettered_alone_and_the_others_are_stored(
    tmp_path: Path, start: Start
) -> None:
    worker = owning_worker(tmp_path, start, ManualClock(END + timedelta(minutes=10)))
    axes = [a.name for a in worker.settings.axes]
    paths = [NOTE, OTHER, "inbox/jay/2026-09-27-1200-kv.md"]
    notes = []
    for i, path in enumerate(paths):
        [(key, value)] = await parsed(worker, raw_value(path, TEXT + "more\n" * i))
        notes.extend(note_records(value))  # a lone note's v6 record holds its v4 record
    bad = notes[1].replace(b'"axes":[', b'"axes":{', 1)
    [(_, record)] = pack_notes([(key, notes[0]), (key, bad), (key, notes[2])], {}, 1 << 20)
    state = worker.services.pipeline().state
    async with worker.agents.window.test_context() as agent:
        await agent.put(record, key=key, partition=0)
        # The dead letter is sent before the record's notes are stored (in a thread): both are waited for.
        await settled(
            lambda: len(worker.outputs.dead_letters) == 1 and state.document_count(axes[0]) == 2, "the record"
        )
        assert [state.document_count(axis) for axis in axes] == [2] * len(axes)
        [letter] = worker.outputs.dead_letters
        assert (letter.stage, letter.reason, letter.note, letter.value) == ("documents", "unreadable", 1, bad)
        assert worker.metric("predigest_records_unreadable_total", stage="documents") == 1
        # Re-driven once its cause is fixed, the note alone is a v4 record, stored with the others.
        await agent.put(notes[1], key=key, partition=0)
        await settled(lambda: state.document_count(axes[0]) == 3, "the re-driven note")
    assert [state.document_count(axis) for axis in axes] == [3] * len(axes)


async def test_a_flush_is_briefed_sent_and_marked_delivered_once(worker: InProcessWorker) -> None:
    worker.own("inference")
    await stored(worker, of_axis(await parsed(worker, raw_value()), "inference"))
    flush = command(worker).model_dump_json().encode()
    async with worker.agents.control.test_context() as agent:
        for _ in range(2):  # the second is the same command delivered again (a redelivery after a crash)
            await agent.put(flush, key=b"inference", partition=worker.partition_of("inference"))
        await settled(
            lambda: (
                worker.metric("predigest_briefing_commands_repeated_total", axis="inference", trigger="flush")
                == 1
            ),
            "both commands",
        )
    [(axis, briefing_json)] = worker.outputs.briefings
    briefing = Briefing.model_validate_json(briefing_json)
    assert (axis, briefing.window.end, briefing.trigger) == ("inference", END, "flush")
    assert [s.path for s in briefing.sources] == [NOTE]
    record = worker.services.pipeline().state.emission_record("inference", END, "flush")
    assert record is not None and record.delivered
    assert len(list((worker.settings.out_dir / "inference").iterdir())) == 2  # .md and .json


async def test_bad_commands_are_refused_or_ignored_and_counted_never_briefed(worker: InProcessWorker) -> None:
    worker.own("inference")
    inference, risk = worker.partition_of("inference"), worker.partition_of("risk")
    far_ahead = new_command("inference", "flush", END + timedelta(days=30), worker.clock.now())
    unknown = ControlCommand(
        axis="nope", trigger="flush", end=END, requested_at=worker.clock.now(), request_id=uuid4().hex
    )
    async with worker.agents.control.test_context() as agent:
        await agent.put(b"{not json", key=b"inference", partition=inference)
        await agent.put(far_ahead.model_dump_json().encode(), key=b"inference", partition=inference)
        await agent.put(unknown.model_dump_json().encode(), key=b"nope", partition=inference)
        # Keyed by another partitioner: read from a partition the axis does not live on.
        await agent.put(command(worker).model_dump_json().encode(), key=b"inference", partition=risk)
        await agent.put(command(worker, "risk").model_dump_json().encode(), key=b"risk", partition=risk)
        await settled(
            lambda: worker.metric("predigest_commands_ignored_total", reason="not_owned") == 1,
            "every command",
        )
    assert worker.metric("predigest_records_unreadable_total", stage="control") == 1
    assert worker.metric("predigest_commands_refused_total", reason="end_too_far_ahead") == 1
    assert worker.metric("predigest_commands_refused_total", reason="unknown_axis") == 1
    # The unreadable and the refused ones are dead-lettered; one for a partition not owned here is not a failure.
    assert [(x.stage, x.reason, x.key) for x in worker.outputs.dead_letters] == [
        ("control", "unreadable", b"inference"),
        ("control", "end_too_far_ahead", b"inference"),
        ("control", "unknown_axis", b"nope"),
    ]
    assert worker.metric("predigest_commands_ignored_total", reason="misrouted") == 1
    assert worker.outputs.briefings == []
    assert not worker.settings.out_dir.exists()


def test_building_the_worker_opens_no_state(tmp_path: Path, start: Start) -> None:
    # DuckDB allows one writer per file: the CLI builds the app before it spawns the worker that owns it.
    w = start(in_process_settings(tmp_path), ManualClock())
    assert w.services.pipeline.opened is None
    assert not w.settings.state_file.exists()
    assert w.services.pipeline() is w.services.pipeline()  # opened once, on first use
    assert w.settings.state_file.exists()


async def test_a_routing_crash_is_rejected_and_dead_lettered_and_its_replay_after_the_fix_is_stored_once(
    worker: InProcessWorker, monkeypatch: pytest.MonkeyPatch
) -> None:
    worker.own("inference", "llm-infra", "risk", "llm-application")

    def crash(*args: object, **kwargs: object) -> NoReturn:
        raise RuntimeError("a bug in routing")

    async with worker.agents.parse.test_context() as agent:
        with monkeypatch.context() as bug:
            bug.setattr("processors.parse_stage.route_read", crash)
            await agent.put(raw_value(), key=b"path")
            await settled(lambda: len(worker.outputs.dead_letters) == 1, "the dead letter")
        [letter] = worker.outputs.dead_letters
        assert letter.reason == "routing_failed" and "a bug in routing" in letter.error
        # The fix deployed, the dead letter re-driven twice: its value is the raw record it was, byte for byte.
        for _ in range(2):
            await agent.put(letter.value, key=letter.key)

        def rows() -> int:  # the two replays may share a batch, so a record per partition
            return sum(len(decode_rows(v)) for _, v in worker.outputs.documents)

        await settled(lambda: rows() == 3 * 4, "a row per axis of each")
    await stored(worker, worker.outputs.documents)
    state = worker.services.pipeline().state
    assert state.document_count("inference") == 1
    window = window_bounds(END, timedelta(hours=24))
    assert state.rejections(window, "inference") == []  # a source now, not rejected
    assert worker.metric("predigest_dead_letters_total", stage="raw", reason="routing_failed") == 1


async def test_more_consecutive_failures_than_the_limit_stop_the_worker_and_the_stop_survives_a_restart(
    tmp_path: Path, stops: list[int], caplog: pytest.LogCaptureFixture, start: Start
) -> None:
    limits = DeadLetterSettings(max_consecutive=3)
    settings = in_process_settings(tmp_path, dead_letters=limits)
    first = start(settings, ManualClock(END))
    garbage = [f"garbage {i}".encode() for i in range(5)]
    async with first.agents.parse.test_context() as agent:
        for value in garbage[:3]:
            await agent.put(value, key=b"path")
        await settled(lambda: len(first.outputs.dead_letters) == 3, "three dead letters")
        for value in garbage[3:]:
            await agent.put(value, key=b"path")
        await settled(lambda: stops == [78], "the stop")
    # The fourth in a row stopped it: nothing of its batch was sent, and the batch is not acknowledged.
    assert len(first.outputs.dead_letters) == 3
    # The dead-letter stop's own line (here the stop returns, so its batch's task fails and says so too).
    [line] = [r for r in caplog.records if r.levelname == "CRITICAL" and r.name == "streams.dead_letters"]
    assert "4 consecutive records failed" in line.getMessage() and "offset 3" in line.getMessage()
    assert settings.dead_letter_stop_file.exists()

    # Restarted (its state closed as the process's exit would: the state's claim refuses a second holder): the
    # record that stopped it comes again and stops it at once; nothing more is skipped.
    first.close()
    again = start(settings, ManualClock(END))
    async with again.agents.parse.test_context() as agent:
        await agent.put(garbage[3], key=b"path")
        await settled(lambda: stops == [78, 78], "the second stop")
    assert again.outputs.dead_letters == []

    # Fixed: the first record that goes through clears the stop.
    again.close()
    fixed = start(settings, ManualClock(END))
    async with fixed.agents.parse.test_context() as agent:
        await agent.put(raw_value(), key=b"path")
        await agent.put(garbage[4], key=b"path")
        await settled(lambda: len(fixed.outputs.dead_letters) == 1, "the next failure, dead-lettered")
    assert not settings.dead_letter_stop_file.exists() and stops == [78, 78]


async def flush_both_with_inference_unwritable(worker: InProcessWorker) -> None:
    """A file where inference's output folder should be (fails for root too), then a flush of inference and risk."""
    worker.own("inference", "risk")
    worker.settings.out_dir.mkdir(parents=True)
    (worker.settings.out_dir / "inference").write_text("not a folder")
    async with worker.agents.control.test_context() as agent:
        for axis in ("inference", "risk"):
            await agent.put(
                command(worker, axis).model_dump_json().encode(),
                key=axis.encode(),
                partition=worker.partition_of(axis),
            )
        await settled(lambda: len(worker.outputs.briefings) == 1, "the risk briefing")


async def test_an_axis_whose_folder_cannot_be_written_waits_in_the_outbox_while_the_others_emit(
    worker: InProcessWorker,
) -> None:
    await flush_both_with_inference_unwritable(worker)
    assert [axis for axis, _ in worker.outputs.briefings] == ["risk"]  # the other axis is written and sent
    assert len(list((worker.settings.out_dir / "risk").iterdir())) == 2
    [failing] = worker.services.outbox.report().items()
    assert failing[0] == "inference" and (failing[1]["reason"], failing[1]["pending"]) == ("not_a_folder", 1)
    assert worker.metric("predigest_briefing_failures_total", axis="inference", reason="not_a_folder") == 1
    assert worker.metric("predigest_briefing_failing", axis="inference") == 1
    state = worker.services.pipeline().state
    record = state.emission_record("inference", END, "flush")
    assert record is not None and not record.delivered  # recorded: the outbox

    send = partial(deliver, worker.services, worker.outputs)
    await worker.services.outbox.tick(send)  # still broken: tried again, with back-off
    assert worker.metric("predigest_briefing_failures_total", axis="inference", reason="not_a_folder") == 2
    (worker.settings.out_dir / "inference").unlink()  # fixed
    await worker.services.outbox.tick(send)
    assert len(worker.outputs.briefings) == 1  # not due yet
    worker.clock.advance(worker.settings.briefing_retry_max_seconds)
    for _ in range(2):
        await worker.services.outbox.tick(send)
        worker.clock.advance(worker.settings.briefing_retry_max_seconds)
    assert sorted(axis for axis, _ in worker.outputs.briefings) == ["inference", "risk"]  # once each
    assert len(list((worker.settings.out_dir / "inference").iterdir())) == 2
    assert worker.services.outbox.report() == {}
    assert worker.metric("predigest_briefing_failing", axis="inference") == 0
    record = state.emission_record("inference", END, "flush")
    assert record is not None and record.delivered


async def test_a_briefing_left_in_the_outbox_is_written_and_sent_at_the_next_start(
    worker: InProcessWorker, start: Start
) -> None:
    await flush_both_with_inference_unwritable(worker)
    worker.close()
    (worker.settings.out_dir / "inference").unlink()  # fixed while the worker was stopped
    restarted = start(worker.settings, worker.clock)
    send = partial(deliver, restarted.services, restarted.outputs)
    restarted.own("inference", ready=False)
    await restarted.services.outbox.tick(send)
    assert restarted.outputs.briefings == []  # not before the axis's state caught up
    restarted.own("inference")
    await restarted.services.outbox.tick(send)
    [(axis, briefing_json)] = restarted.outputs.briefings
    assert axis == "inference" and Briefing.model_validate_json(briefing_json).window.end == END
    assert len(list((worker.settings.out_dir / "inference").iterdir())) == 2


async def test_a_waiting_briefing_the_topic_refuses_is_reported_as_a_send_failure_and_sent_later(
    worker: InProcessWorker,
) -> None:
    await flush_both_with_inference_unwritable(worker)
    (worker.settings.out_dir / "inference").unlink()  # fixed, but now Kafka refuses

    async def refused(emission: Emission) -> None:
        raise KafkaConnectionError("the broker is down")

    worker.clock.advance(worker.settings.briefing_retry_max_seconds)
    await worker.services.outbox.tick(refused)
    assert worker.metric("predigest_briefing_failures_total", axis="inference", reason="send") == 1
    assert worker.services.outbox.report()["inference"]["reason"] == "send"
    assert len(list((worker.settings.out_dir / "inference").iterdir())) == 2  # written meanwhile

    worker.clock.advance(worker.settings.briefing_retry_max_seconds)
    await worker.services.outbox.tick(partial(deliver, worker.services, worker.outputs))
    assert sorted(axis for axis, _ in worker.outputs.briefings) == ["inference", "risk"]
    assert worker.services.outbox.report() == {}
