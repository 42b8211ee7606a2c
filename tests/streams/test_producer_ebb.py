"""The conductor's check of Faust's producer buffer: a buffer past its limit is still flushed before a record goes on."""

from __future__ import annotations

import asyncio
from typing import cast

import faust
import pytest
from faust.transport.producer import ProducerBuffer

from streams.producer_ebb import check_buffer_lightly


@pytest.mark.parametrize("threaded", [False, True])
@pytest.mark.parametrize(("waiting", "flushed"), [(0, False), (100, False), (101, True)])
async def test_a_buffer_past_its_limit_is_flushed_first(threaded: bool, waiting: int, flushed: bool) -> None:
    check_buffer_lightly()  # as the worker's app does
    app = faust.App("ebb", broker="kafka://127.0.0.1:9", producer_threaded=threaded)
    buffer = cast(ProducerBuffer, app.producer.buffer)
    assert buffer.max_messages == 100
    queue: asyncio.Queue[object] = asyncio.Queue()
    if threaded:  # a threaded producer's messages wait in `queue`, the others' in `pending`
        buffer.queue = queue
    else:
        queue = buffer.pending
    for i in range(waiting):
        queue.put_nowait(i)
    calls: list[int | None] = []

    async def flush_atmost(n: int | None) -> int:
        calls.append(n)
        return 0

    buffer.flush_atmost = flush_atmost  # type: ignore[method-assign,assignment]
    await buffer.wait_until_ebb()
    assert calls == ([100] if flushed else [])
    thread = getattr(app.producer, "threaded_producer", None)
    if thread is not None:  # never started: its event loop is closed here
        thread.thread_loop.close()
