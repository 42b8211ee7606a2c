"""The control agent's wait for the outbox's lock, which the worker's stop ends: a command waiting behind the outbox's
retries (a restored briefing of 100k sources sent again at the start) is left unacknowledged for the restart, as a
briefing the stop cuts short is (streams.briefing_stop), instead of holding the stop's wait (streams.stop_wait, 8 s)."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from sinks.offsets import Position
from streams.services import Services

log = logging.getLogger(__name__)


@asynccontextmanager
async def turn(services: Services, position: Position) -> AsyncIterator[None]:
    """Hold the outbox's lock for the command at `position`; if the stop begins while this waits for it, the command
    is left to the restart and this waits for the stop's cancellation of the agent, the lock never taken."""
    lock, stop = services.outbox.lock, services.pipeline.build_stop
    command = (position.topic, position.partition, position.offset)
    taken = False

    async def take() -> None:
        nonlocal taken
        taken = await lock.acquire()

    try:
        await stop.build(take, threading.Event(), command)
    except asyncio.CancelledError:
        # Granted the lock as the agent was cancelled, before it resumed: not let go, it held every later answer.
        if taken:
            lock.release()
        if command in stop.left:
            log.warning(
                "the command at %s[%d]@%d waited for the outbox's lock when the worker's stop began: "
                "unacknowledged, it is answered after the restart",
                *command,
            )
        raise
    try:
        yield
    finally:
        lock.release()
