"""The parse agent's batches in flight: the next one routes while this one ends, each step after its predecessor's.

A batch is routed (in the parse processes), then handled (its notes counted and logged, its dead letters sent),
then forwarded and acked. Routing overlaps: a second batch's chunks wait in the pool while the first's last chunk
ends, so the processes do not idle at a batch's tail and while the next batch is taken. The rest keeps the order
of the raw offsets: a batch is handled after the one before was, and forwarded after the one before was acked.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

from streams.failstop import Halt, stop_on_failure

ROUTING = 2  # batches routed at once: enough to keep the processes fed, and the pool's retries bounded
IN_FLIGHT = 4  # batches taken and not yet acked: a broker that stops acknowledging holds back the stream


def _future() -> asyncio.Future[None]:
    return asyncio.get_running_loop().create_future()


@dataclass
class Batch:
    """One batch's progress: `routed` and `handled` are set as it passes those steps; `task` runs them all."""

    routed: asyncio.Future[None] = field(default_factory=_future)
    handled: asyncio.Future[None] = field(default_factory=_future)
    task: asyncio.Task[None] | None = None

    def passed(self, step: asyncio.Future[None]) -> None:
        if not step.done():
            step.set_result(None)

    def running(self) -> asyncio.Task[None]:
        if self.task is None:
            raise RuntimeError("the batch was never started")
        return self.task


async def after(before: Batch | None, step: asyncio.Future[None] | None) -> None:
    """Until the batch before has passed `step` (`None`: until it is done); its failure is raised here."""
    if before is None:
        return
    task = before.running()
    if step is not None:
        await asyncio.wait([step, task], return_when=asyncio.FIRST_COMPLETED)
        if step.done():
            return
    # Shielded: a cancelled successor must not cancel the batch before (a stop cancels each batch itself).
    await asyncio.shield(task)


def start(flow: list[Batch], work: Coroutine[Any, Any, None], batch: Batch, halt: Halt) -> None:
    """Run `work` for `batch`, the newest in flight; its failure stops the worker at once (`halt`)."""
    batch.task = asyncio.create_task(work)
    batch.task.add_done_callback(stop_on_failure("a parse batch", halt))
    flow.append(batch)


async def room(flow: list[Batch]) -> list[Batch]:
    """The batches still in flight, once fewer than ROUTING are routing and IN_FLIGHT in all. A failed batch
    stopped the worker (`start`); its error is raised here too, so the loop never starts a batch past it."""
    while True:
        for batch in flow:
            if batch.running().done():
                batch.running().result()
        flow = [b for b in flow if not b.running().done()]
        routing = [b for b in flow if not b.routed.done()]
        if len(routing) < ROUTING and len(flow) < IN_FLIGHT:
            return flow
        waits: list[asyncio.Future[Any]] = [b.running() for b in flow] + [b.routed for b in routing]
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)


async def stop(flow: list[Batch]) -> None:
    """Cancel every batch in flight and wait until each has ended (its `finally` blocks run): their records stay
    unacked, Kafka delivers them again (idempotent writes)."""
    tasks = {batch.running() for batch in flow}
    for task in tasks:
        task.cancel()
    while pending := {task for task in tasks if not task.done()}:
        with contextlib.suppress(asyncio.CancelledError):  # the agent cancelled again: its batches end first
            await asyncio.wait(pending)
