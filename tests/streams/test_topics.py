"""The worker's topics as its agents read them: what Faust prefetches for each."""

from __future__ import annotations

from pathlib import Path

import faust
from faust.types import AgentT

from streams.topics import DOCUMENTS_BUFFER_RECORDS
from tests.clocks import ManualClock
from tests.streams.agent_support import Start, in_process_settings


def _prefetched(agent: AgentT[bytes]) -> int:
    """The most events Faust buffers for the agent's stream."""
    channel = agent.stream().channel
    assert isinstance(channel, faust.Topic)
    return channel.queue.maxsize


async def test_the_window_agent_prefetches_few_documents_records(tmp_path: Path, start: Start) -> None:
    # A documents record holds up to 384 KiB of notes: 1 000 of them prefetched (the app's stream buffer, sized
    # for raw records) allowed ~370 MB in a worker catching up on a documents backlog.
    w = start(in_process_settings(tmp_path, batch_records=500), ManualClock())
    assert _prefetched(w.agents.window) == DOCUMENTS_BUFFER_RECORDS
    assert DOCUMENTS_BUFFER_RECORDS * 384 * 1024 <= 32 * 1024 * 1024
    # Raw records (a note each) keep the app's buffer: two parse batches.
    assert _prefetched(w.agents.parse) == 2 * 500
