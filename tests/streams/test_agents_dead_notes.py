"""The dead-letter limits of the documents stage count a v6 record's notes, not the record: a record of failed
notes is no success that resets them, and a few bad notes among many are a small share (docs/configuration.md)."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

from processors.fan_out import route_read
from processors.wire import note_records
from processors.wire_frames import pack_notes
from streams.dead_letters import _write_stop_file
from streams.settings import DeadLetterSettings
from tests.clocks import ManualClock
from tests.processors.wire_v3 import encode_v3
from tests.streams.agent_support import (
    END,
    ONE_PARTITION,
    SH,
    TEXT,
    InProcessWorker,
    Start,
    in_process_settings,
    owning_worker,
    parsed,
    raw_value,
    settled,
)
from tests.streams.pipeline_support import raw_file


def _started(tmp_path: Path, start: Start, limits: DeadLetterSettings) -> InProcessWorker:
    return owning_worker(tmp_path, start, ManualClock(END), dead_letters=limits)


def _record(notes: list[bytes]) -> tuple[bytes, bytes]:
    [record] = pack_notes([(b"inference", note) for note in notes], {}, 1 << 20)
    return record


def _bad(r: int, n: int) -> list[bytes]:
    return [f"bad note {r}.{i}".encode() for i in range(n)]


async def test_records_whose_every_note_fails_trip_the_consecutive_limit(
    tmp_path: Path, stops: list[int], start: Start
) -> None:
    # max_share 1.0 is no limit: only max_consecutive guards the stage, and 12 notes failed in a row.
    worker = _started(tmp_path, start, DeadLetterSettings(max_consecutive=3, max_share=1.0))
    async with worker.agents.window.test_context() as agent:
        for r in range(4):
            key, value = _record(_bad(r, 3))
            await agent.put(value, key=key, partition=0)
        await settled(lambda: stops == [78] or len(worker.outputs.dead_letters) == 12, "a stop or 12 letters")
    assert stops == [78]


async def test_a_record_none_of_whose_notes_read_does_not_clear_a_stop(
    tmp_path: Path, stops: list[int], start: Start
) -> None:
    limits = DeadLetterSettings(max_consecutive=3)
    settings = in_process_settings(tmp_path, kafka=ONE_PARTITION, dead_letters=limits)
    _write_stop_file(
        settings, {"documents": {"topic": "x", "partition": 0, "offset": 0, "reason": "unreadable"}}
    )
    worker = _started(tmp_path, start, limits)
    async with worker.agents.window.test_context() as agent:
        key, value = _record(_bad(0, 3))
        await agent.put(value, key=key, partition=0)
        await settled(lambda: stops == [78] or len(worker.outputs.dead_letters) == 3, "a stop or 3 letters")
    # Restarted after a stop, it stops again at its first failure until a note of the stage reads.
    assert stops == [78] and worker.outputs.dead_letters == []
    assert settings.dead_letter_stop_file.exists()


async def test_two_bad_notes_in_seventeen_are_not_past_a_half_share(
    tmp_path: Path, stops: list[int], start: Start
) -> None:
    worker = _started(tmp_path, start, DeadLetterSettings(max_share=0.5, share_window=10))
    good = []
    for i in range(15):
        [(_, value)] = await parsed(
            worker, raw_value(f"inbox/jay/2026-09-27-12{i:02d}-n.md", TEXT + f"n{i}\n")
        )
        good.extend(note_records(value))  # the v4 record the v6 record packs
    async with worker.agents.window.test_context() as agent:
        for r in range(4):
            key, value = _record(good + _bad(r, 2))
            await agent.put(value, key=key, partition=0)
        await settled(lambda: len(worker.outputs.dead_letters) == 8 or stops == [78], "8 letters or a stop")
    assert stops == [] and len(worker.outputs.dead_letters) == 8  # 8 of 68 notes failed: 12 %


def _v3_counted_lax(worker: InProcessWorker) -> tuple[bytes, bytes]:
    """A v3 record (a rebuild replays retained ones) whose summary's term counts are 2.0: pydantic's lax int read
    the summary, and it was stored as written."""
    raw = raw_file("inbox/tom/2026-09-27-1100-kv.md", TEXT + "older\n")
    events = route_read(raw, worker.settings.axes, zone=SH, max_bytes=4 << 20, seen_at=END, raw_offset=0)[0]
    [(key, value)] = encode_v3(events, {})
    magic, header, summary, body = value.split(b"\n", 3)
    data = json.loads(summary)
    data["terms"] = dict.fromkeys(data["terms"], 2.0)
    return key, b"\n".join([magic, header, json.dumps(data).encode(), body])


async def test_a_v3_record_whose_term_counts_the_store_cannot_read_is_dead_lettered_and_the_batch_stored(
    tmp_path: Path, stops: list[int], start: Start
) -> None:
    # Its facts are worked out where it is decoded, and refused there: at the store they failed the whole batch,
    # replayed at every restart.
    worker = owning_worker(tmp_path, start, ManualClock(END + timedelta(minutes=10)))
    [(key, good)] = await parsed(worker, raw_value())
    old_key, old = _v3_counted_lax(worker)
    state = worker.services.pipeline().state
    async with worker.agents.window.test_context() as agent:
        await agent.put(good, key=key, partition=0)
        await agent.put(old, key=old_key, partition=0)
        await settled(
            lambda: len(worker.outputs.dead_letters) == 1 and state.document_count(key.decode()) == 1,
            "the batch",
        )
    [letter] = worker.outputs.dead_letters
    assert (letter.reason, letter.value, stops) == ("unreadable", old, [])
