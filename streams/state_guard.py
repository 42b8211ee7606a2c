"""The running worker's check of its state file: every `state_check_seconds`, in a thread on a cursor of its own,
the file's size against its blocks and a read of every block; a file that fails is reported by `/readyz`, set
aside and rebuilt from Kafka without a restart (issue 15).

What this can see (docs/operations.md, "Readiness"): a file cut short, at once; a block that fails its checksum
when DuckDB reads it from disk, which it does for the blocks it does not hold in memory. A block overwritten
while DuckDB holds a copy in memory, or a damaged header, shows only at the next open (the start-up check then
sets the file aside), and a write after a cut can extend the file past its old size again.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime
from typing import Protocol

import duckdb

from sinks.clock import Clock
from sinks.errors import StateMemoryError, StateUnreadableError
from sinks.metrics import Metrics
from sinks.state import StateStore
from streams.pipeline import Pipeline
from streams.settings import Settings
from streams.state_sync import StateSync

log = logging.getLogger(__name__)


class StateHolder(Protocol):
    """What the guard needs of the worker's lazily opened pipeline (streams.services.LazyPipeline)."""

    @property
    def opened(self) -> Pipeline | None: ...

    def replace_damaged(self) -> None: ...


# The window agent stored nothing for this long: the check sheds DuckDB's cache as it goes. While notes come in,
# the pool is full anyway and the writes want it; an idle worker would hold it (~190 MiB at 100k notes) on top of
# what its last briefing left.
QUIET_SECONDS = 5.0


def _check(state: StateStore, quiet: bool) -> None:
    """In a thread: opening the reader waits for a batch being committed, which the event loop must not."""
    if quiet:
        state.check(state.shed_cache)  # a few thousand rows a step, under the state's lock, shed after each
        return
    with state.reader() as reader:
        reader.check()
    # What the check read (every block of the state) is no cache worth keeping: the next check reads from disk.
    # Its cursor counts as an open read (no shed) until it is gone.
    del reader
    state.shed_cache()


class StateGuard:
    """The last word on the state file: sound, or why not, and whether it is being rebuilt now."""

    def __init__(
        self, settings: Settings, pipeline: StateHolder, sync: StateSync, metrics: Metrics, clock: Clock
    ) -> None:
        self._settings = settings
        self._pipeline = pipeline
        self._sync = sync
        self._metrics = metrics
        self._clock = clock
        self.problem: str | None = None  # why the open state is not sound (while it is being replaced)
        self.checked_at: datetime | None = None
        self.replaced: str | None = None  # the last problem that made it replace the state, for /readyz
        self.replacing = False

    async def check(self) -> None:
        """One check of the open state (nothing before the first agent opens it); a failure replaces it."""
        opened = self._pipeline.opened
        # Not beside a briefing: the check reads every block of the state, which fills DuckDB's cache to its
        # limit (~190 MiB at 100k notes) under the briefing's model and texts; the next tick checks.
        if opened is None or self.replacing or opened.briefing_lock.locked():
            return
        path = self._settings.state_file
        if not path.is_file():
            await self._replace("the state file is gone (deleted or moved while the worker ran)")
            return
        try:
            quiet = opened.activity.quiet_for(QUIET_SECONDS)
            await asyncio.to_thread(_check, opened.state, quiet)
        except StateUnreadableError as exc:
            await self._replace(self._shown(str(exc)))
            return
        except StateMemoryError as exc:  # notes too large to scan within the limit: sound, so kept
            self.problem = self._shown(str(exc))
            self._metrics.state_memory_refused.labels(operation="check").inc()
            log.error("the state file could not be checked: %s", exc)
            return
        except duckdb.Error as exc:  # the state was closed under the reader (a replacement), nothing to say
            log.debug("state check skipped: %s", exc)
            return
        self.problem = None
        self.checked_at = self._clock.now()

    def _shown(self, message: str) -> str:
        """The message without the state folder (readiness answers anyone who reaches the port)."""
        path = self._settings.state_file
        for form in (str(path.resolve()), str(path)):
            message = message.replace(form, path.name)
        return message

    async def _replace(self, why: str) -> None:
        self.problem = why
        self.replacing = True
        log.error("the state file failed its check while the worker runs: %s; rebuilding it from Kafka", why)
        try:
            await self._sync.replace_damaged(self._pipeline.replace_damaged)
        except Exception as exc:  # the next check tries again; until then /readyz says why
            log.exception("replacing the damaged state failed")
            self.problem = f"{why}; replacing it failed: {self._shown(str(exc))}"
            return
        finally:
            self.replacing = False
        self.problem = None
        self.replaced = why
        self.checked_at = self._clock.now()
        log.info("the state was rebuilt from Kafka after: %s", why)
