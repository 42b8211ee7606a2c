"""A worker's consumer lets the broker hold an empty fetch 100 ms, not Faust's 1.5 s (streams/fetch_wait.py)."""

from __future__ import annotations

from pathlib import Path

from streams.app import faust_app
from streams.fetch_wait import FETCH_MAX_WAIT_MS
from tests.streams.agent_support import in_process_settings


async def test_the_worker_consumer_long_polls_at_most_a_tenth_of_a_second(tmp_path: Path) -> None:
    app = faust_app(in_process_settings(tmp_path))
    thread = app.consumer._thread  # type: ignore[attr-defined]  # the aiokafka consumer's thread, not started
    consumer = thread._create_worker_consumer(app.transport)
    try:
        # A paused partition waits for the fetch in flight: it must not be held 1.5 s when nothing is new.
        assert consumer._fetch_max_wait_ms == FETCH_MAX_WAIT_MS == 100
    finally:
        await consumer.stop()
        thread.thread_loop.close()
