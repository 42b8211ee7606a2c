"""The parse agent reads a raw topic that holds both formats (an upgrade: v1 records written by the older
watcher, then v2), the same note to the same documents records; a damaged v2 record is dead-lettered whole."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from processors.wire import decode_rows
from tests.clocks import ManualClock
from tests.streams.agent_support import (
    END,
    NOTE,
    TEXT,
    InProcessWorker,
    Start,
    in_process_settings,
    parsed,
    raw_value,
    raw_value_v1,
)

OTHER = "inbox/tom/2026-09-27-1100-kv.md"


@pytest.fixture
def worker(tmp_path: Path, start: Start) -> InProcessWorker:
    return start(in_process_settings(tmp_path), ManualClock(END + timedelta(minutes=10)))


async def test_v1_then_v2_records_are_routed_alike(worker: InProcessWorker) -> None:
    old, new = await parsed(worker, raw_value_v1()), await parsed(worker, raw_value())
    assert old and new == old  # the same note, the same records (each batch's first raw offset is 0)
    mixed = await parsed(worker, raw_value_v1(), raw_value(OTHER, TEXT + "more\n"))
    paths = {(row.header.path, row.header.raw_offset) for _, value in mixed for row in decode_rows(value)}
    assert paths == {(NOTE, 0), (OTHER, 1)}
    assert worker.metric("predigest_records_unreadable_total", stage="raw") == 0


async def test_a_damaged_v2_record_is_dead_lettered_whole_and_its_batch_goes_on(
    worker: InProcessWorker,
) -> None:
    cut = raw_value()[:-3]
    records = await parsed(worker, cut, raw_value(OTHER))
    assert {row.header.path for _, value in records for row in decode_rows(value)} == {OTHER}
    [letter] = worker.outputs.dead_letters
    assert (letter.stage, letter.reason, letter.key, letter.value) == ("raw", "unreadable", b"path", cut)
    assert letter.error.startswith("raw record v2: ") and "cut or padded" in letter.error
    assert worker.metric("predigest_dead_letters_total", stage="raw", reason="unreadable") == 1
