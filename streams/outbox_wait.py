"""The control agent's wait for the outbox's lock, which the worker's stop ends: a command waiting behind the outbox's
retries (a restored briefing of 100k sources sent again at the start) is left unacknowledged for the restart, as a
briefing the stop cuts short is (streams.briefing_stop), instead of holding the stop's wait (streams.stop_wait, 8 s)."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from sinks.offsets import Position
from streams.services import Services


@asynccontextmanager
async def turn(services: Services, position: Position) -> AsyncIterator[None]:
    """Hold the outbox's lock for the command at `position`; if the stop begins while this waits for it, the command
    is left to the restart and this waits for the stop's cancellation of the agent, the lock never taken."""
    lock = services.outbox.lock
    command = (position.topic, position.partition, position.offset)
    await services.pipeline.build_stop.build(lock.acquire, threading.Event(), command)
    try:
        yield
    finally:
        lock.release()
