"""A worker's consumer lets the broker hold an empty fetch 100 ms, not Faust's 1.5 s (streams/fetch_wait.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from streams.app import faust_app
from streams.fetch_wait import FETCH_MAX_WAIT_MS
from streams.settings import Settings

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


async def test_the_started_worker_consumer_long_polls_at_most_a_tenth_of_a_second(
    make_settings: Callable[..., Settings],
) -> None:
    app = faust_app(make_settings())
    thread: Any = app.consumer._thread  # type: ignore[attr-defined]  # the aiokafka consumer's thread, not started
    consumer = thread._create_worker_consumer(app.transport)
    await consumer.start()
    try:
        # Read from the fetcher the start built, so a renamed aiokafka field cannot pass unnoticed: a paused
        # partition waits for the fetch in flight, which must not be held 1.5 s when nothing is new.
        assert consumer._fetcher._fetch_max_wait_ms == FETCH_MAX_WAIT_MS == 100
    finally:
        await consumer.stop()
        thread.thread_loop.close()
