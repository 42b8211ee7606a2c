"""A worker's stop as the briefing being built sees it: cancelled as the stop begins, not once the stop's wait for
the records its agents took is over (`streams.stop_wait`, 8 s), its command left unacknowledged for the restart."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")
RecordKey = tuple[str, int, int]  # a record's topic, partition and offset


@dataclass
class _Build:
    task: asyncio.Future[Any]
    cancelled: threading.Event
    command: RecordKey | None


@dataclass
class BuildStop:
    """Set once by the worker's stop (`begin`): the briefing being built then (or after) is cancelled, and its
    command's record is `left`: the stop does not wait for it, and it stays unacknowledged."""

    begun: bool = False
    left: set[RecordKey] = field(default_factory=set)
    _build: _Build | None = field(default=None, init=False, repr=False)

    def begin(self) -> None:
        """The stop has begun: the build under way is cancelled, its threads ending at their next step."""
        self.begun = True
        if (build := self._build) is not None:
            build.cancelled.set()
            # Left before the stop's wait looks at the records taken; a build that has just ended is answered.
            if build.task.cancel() and build.command is not None:
                self.left.add(build.command)

    def cancelled_by(self) -> str:
        """Who cancelled a briefing, and what becomes of its command, for its WARNING."""
        if self.begun:
            return " by the worker's stop: its command, unacknowledged, is briefed again after the restart"
        # The task answering its command was cancelled otherwise (a revocation waits for it, so not that): nothing here
        # knows what comes of the command.
        return ", not by the worker's stop (its agent was cancelled): nothing of it is recorded"

    async def build(
        self, work: Callable[[], Awaitable[T]], cancelled: threading.Event, command: RecordKey | None
    ) -> T:
        """`work()`, unless the stop begins meanwhile (or has): then its `command` is left to the restart, and this
        waits for the stop's cancellation of its caller (its agent's), which comes once the stop's wait is over."""
        if not self.begun:
            built: list[
                T
            ] = []  # not the task's result: a finished task outlives its await while gc is paused

            async def run() -> None:
                built.append(await work())

            task = asyncio.ensure_future(run())
            self._build = _Build(task, cancelled, command)
            try:
                await task
                return built.pop()
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if not self.begun or (current is not None and current.cancelling()):
                    raise  # the caller's own cancellation (a revocation waits for the agents in faust 0.15: never it)
            finally:
                self._build = None
        cancelled.set()
        if command is not None:
            self.left.add(command)
        await asyncio.get_running_loop().create_future()  # until the stop cancels the agent
        raise AssertionError("a future nothing completes was completed")
