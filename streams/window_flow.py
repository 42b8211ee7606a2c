"""The window agent's batch in flight: stored and acked by a task of its own while the agent decodes the next.

One batch is stored at a time, in order: the agent awaits the task before starting the next one's. A failure
stops the worker at once (streams.failstop); a stop cancels the store and waits for it, the batch unacked.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence

from faust.streams import Stream
from faust.types import EventT

from streams.batches import ack_all
from streams.failstop import stop_on_failure
from streams.services import Services


def start(
    services: Services,
    stream: Stream[bytes],
    events: Sequence[EventT[bytes]],
    store: Callable[[], Awaitable[None]],
) -> asyncio.Task[None]:
    """The batch stored (`store`), then acked, in a task; its failure stops the worker (`Services.halt`). In hand
    from now to the task's end, cancelled before it ran or not: the decode's hold passes on without a gap."""
    activity = services.pipeline().activity
    storing = asyncio.create_task(_store_then_ack(services, stream, events, store))
    activity.taken()  # after the task exists (nothing runs between): its end is then sure to count it done
    storing.add_done_callback(lambda _: activity.done())
    storing.add_done_callback(stop_on_failure("storing a documents batch", services.halt))
    return storing


async def _store_then_ack(
    services: Services,
    stream: Stream[bytes],
    events: Sequence[EventT[bytes]],
    store: Callable[[], Awaitable[None]],
) -> None:
    await store()
    await ack_all(stream, events)
    # The batch's records, rows and pickles are freed by now: their pages go back (streams.heap).
    services.heap.after_batch()


async def stop(storing: asyncio.Task[None]) -> None:
    """A stop: the batch's store cancelled, and waited for (its thread's commit ends first); it stays unacked."""
    storing.cancel()
    while not storing.done():
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait({storing})
