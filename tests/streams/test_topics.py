"""The worker's topics as its agents read them: what Faust prefetches for each."""

from __future__ import annotations

from pathlib import Path

from streams.topics import DOCUMENTS_BUFFER_RECORDS
from tests.clocks import ManualClock
from tests.streams.agent_support import in_process_settings
from tests.streams.conftest import Start


async def test_the_window_agent_prefetches_few_documents_records(tmp_path: Path, start: Start) -> None:
    # A documents record holds up to 384 KiB of notes: 1 000 of them prefetched (the app's stream buffer, sized
    # for raw records) was ~370 MB held by a worker catching up on a documents backlog.
    w = start(in_process_settings(tmp_path, batch_records=500), ManualClock())
    window = w.agents.window.stream().channel.queue.maxsize
    parse = w.agents.parse.stream().channel.queue.maxsize
    assert window == DOCUMENTS_BUFFER_RECORDS
    assert window * 384 * 1024 <= 32 * 1024 * 1024
    assert parse == 2 * 500  # raw records (a note each) keep the app's buffer: two parse batches
