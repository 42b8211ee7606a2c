"""The worker's consumer hands a fetched record to its agents' buffer inline, and still waits for a full buffer and
gives up on a record when a rebalance suspends the flow, as Faust does (streams/record_handoff.py)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Coroutine, Generator
from pathlib import Path
from typing import Any, cast

import pytest
from faust.transport.consumer import Consumer
from mode.utils.locks import Event

from streams.app import faust_app
from tests.streams.agent_support import in_process_settings


@pytest.fixture
async def consumer(tmp_path: Path) -> AsyncIterator[Consumer]:
    """The consumer of a worker's app, as the worker builds it, on the test's event loop (not started: no
    broker needed)."""
    app = faust_app(in_process_settings(tmp_path))
    yield cast(Consumer, app.consumer)  # the driver's, a subclass of Faust's Consumer
    app.consumer._thread.thread_loop.close()  # type: ignore[attr-defined]  # the aiokafka thread's loop, never run


class Tasks:
    """Counts the tasks the event loop creates from now on."""

    def __init__(self) -> None:
        self.created = 0
        loop = asyncio.get_running_loop()

        def factory(
            loop: asyncio.AbstractEventLoop, coro: Generator[Any, None, Any] | Coroutine[Any, Any, Any]
        ) -> asyncio.Future[Any]:
            self.created += 1
            return asyncio.Task(coro, loop=loop)

        loop.set_task_factory(factory)

    def __enter__(self) -> Tasks:
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.get_running_loop().set_task_factory(None)


async def _put(queue: asyncio.Queue[int], value: int) -> int:
    await queue.put(value)
    return value


async def test_a_record_whose_buffer_has_room_is_handed_over_without_a_task(consumer: Consumer) -> None:
    buffer: asyncio.Queue[int] = asyncio.Queue(maxsize=100)
    with Tasks() as tasks:
        for i in range(100):  # as Faust's fetcher loop calls it for each record
            await consumer.wait_first(_put(buffer, i), Event().wait())
    # Faust's own wait_first makes four tasks a record (~30 µs): the fetcher's cost per record, not the agents'.
    assert tasks.created == 0
    assert [buffer.get_nowait() for _ in range(buffer.qsize())] == list(range(100))


async def test_a_record_waits_for_room_in_a_full_buffer(consumer: Consumer) -> None:
    buffer: asyncio.Queue[int] = asyncio.Queue(maxsize=1)
    buffer.put_nowait(0)

    async def agent_takes_one() -> int:
        await asyncio.sleep(0.05)
        return buffer.get_nowait()

    taken = asyncio.ensure_future(agent_takes_one())
    done = await consumer.wait_first(_put(buffer, 1), Event().wait())
    assert await taken == 0
    assert done.results == [1] and not done.stopped
    assert buffer.get_nowait() == 1


async def test_a_record_waiting_for_room_is_given_up_when_a_rebalance_suspends_the_flow(
    consumer: Consumer,
) -> None:
    buffer: asyncio.Queue[int] = asyncio.Queue(maxsize=1)
    buffer.put_nowait(0)
    suspend_flow = Event()
    asyncio.get_running_loop().call_later(0.05, suspend_flow.set)
    await consumer.wait_first(_put(buffer, 1), suspend_flow.wait())
    await asyncio.sleep(0.05)
    buffer.get_nowait()
    await asyncio.sleep(0.01)
    # Abandoned, as Faust abandons it: the next owner of the partition fetches the record again.
    assert buffer.empty()
