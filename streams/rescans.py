"""The watcher's periodic rescan as a task of its own, so that the loop goes on settling events while it lists."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any, Protocol

log = logging.getLogger(__name__)


class Rescanning(Protocol):
    """What the periodic rescan needs of the watcher."""

    events_lost: bool

    def rescan(self, full: bool = False) -> Coroutine[Any, Any, tuple[int, int]]: ...


class Rescans:
    """Starts a rescan every `every` seconds (at once after lost events) and says what it found no event reported."""

    def __init__(self, watcher: Rescanning, every: float, clock: Callable[[], float]) -> None:
        self._watcher, self._every, self._clock = watcher, every, clock
        self._last = clock()
        self._task: asyncio.Task[tuple[int, int]] | None = None

    def step(self) -> None:
        if self._task is None:
            if self._watcher.events_lost or self._clock() - self._last >= self._every:
                # A lost batch may hold edits in place, which leave their folder's mtime as it was: a full one.
                full, self._watcher.events_lost = self._watcher.events_lost, False
                self._task = asyncio.create_task(self._watcher.rescan(full))
        elif self._task.done():
            changed, gone = self._task.result()
            if changed or gone:
                log.info("rescan: %d new or changed file(s), %d gone, that no event reported", changed, gone)
            self._task, self._last = None, self._clock()

    def cancel(self) -> None:
        if self._task is not None:
            self._task.cancel()
