"""The worker's occasional vacuum of its state, at a quiet moment.

The state checkpoints without DuckDB's vacuum (sinks/state.py): cheaper commits, but each small checkpoint (a
restart, a quiet hour's few notes) leaves a row group per table and at least a block of its own, never given
back. Once the window agent has received and stored nothing for a while and a table holds enough row groups
more than its rows need, one checkpoint with the vacuum on merges them, in a thread (docs/performance.md).
"""

from __future__ import annotations

import logging
from functools import partial

import duckdb

from sinks.clock import Clock
from sinks.errors import SinkError
from sinks.state import StateStore
from streams.failstop import to_thread_to_the_end
from streams.state_guard import StateHolder

log = logging.getLogger(__name__)

VACUUM_CHECK_SECONDS = 30.0  # how often the worker looks for a quiet moment
# The window agent stored nothing for this long: not behind a backlog, nor right after the state opened (a
# restart's catch-up), where merging would slow the commits and hold their memory.
QUIET_SECONDS = 60.0
# A table holds this many row groups beyond what its rows need: ~8 small checkpoints (~8 blocks a table), or
# ~12k notes behind a backfill (1 500 a checkpoint), whose merge then runs once.
EXCESS_ROW_GROUPS = 8
# The vacuum rewrites the small tables whole (~0.3 ms a note here) under the state's lock: past this many notes
# a batch arriving meanwhile, or a stop, would wait for it for seconds on end, so a larger state is left as it
# is; `predigest rebuild` at a quiet hour writes it afresh (docs/operations.md).
MAX_NOTES = 20_000


class QuietVacuum:
    """Each tick: the vacuum, when the state is quiet and fragmented enough; nothing while a briefing runs."""

    def __init__(self, pipeline: StateHolder, clock: Clock) -> None:
        self._pipeline = pipeline
        self._clock = clock
        self._said_too_large = False
        self._unfit = False

    def _too_large(self, notes: int) -> bool:
        """Past MAX_NOTES, said once at INFO: the operator's remedy is a rebuild, nothing breaks meanwhile."""
        if notes <= MAX_NOTES:
            return False
        if not self._said_too_large:
            log.info(
                "the state holds %d notes, too many to vacuum without holding up its writes (over %d): its small "
                "row groups stay; run `predigest rebuild` at a quiet hour to write it afresh",
                notes,
                MAX_NOTES,
            )
            self._said_too_large = True
        return True

    def _fits(self, state: StateStore) -> bool:
        """Whether merged notes would still read within DuckDB's limit; a no is said once and kept (the notes'
        mean size moves slowly): merging them would leave a state the worker's check could not read."""
        if self._unfit or state.vacuum_fits():
            return not self._unfit
        self._unfit = True
        log.info(
            "the state's notes are too large to merge within duckdb.memory_limit_mib (2 048 of them are read at "
            "once after a vacuum): its small row groups stay; raise the limit to let it run"
        )
        return False

    async def tick(self) -> None:
        opened = self._pipeline.opened
        # The briefing lock is held by a briefing (its reads would keep DuckDB from vacuuming) and by the
        # replacement of a damaged state.
        if opened is None or opened.briefing_lock.locked() or not opened.activity.quiet_for(QUIET_SECONDS):
            return
        # Held through the vacuum, without blocking the loop: a briefing, the state's check and its replacement
        # wait for it. In a thread, as the window agent's store: the loop goes on (heartbeats, fetches, HTTP);
        # a batch stored meanwhile waits for the state's lock, and a stop waits for the vacuum's end.
        async with opened.briefing_lock:
            await to_thread_to_the_end(partial(self._vacuum, opened.state), "the state's vacuum")

    def _vacuum(self, state: StateStore) -> None:
        """In a thread: the vacuum, if the state is fragmented enough and fit to merge."""
        try:
            if state.excess_row_groups() < EXCESS_ROW_GROUPS or self._too_large(state.document_count()):
                return
            if not self._fits(state):
                return
            started = self._clock.monotonic()
            done = state.vacuum()  # under the state's lock: no batch commits meanwhile
        except (SinkError, duckdb.Error) as exc:  # never stops the worker; the next write says it too
            log.warning("the state's vacuum failed: %s", exc)
            return
        if done is None or done.after >= done.before:  # at the memory ceiling, or a read kept it from merging
            log.debug("the state's vacuum merged nothing (%s); tried again at the next quiet tick", done)
            return
        log.info(
            "vacuumed the state: a table's row groups beyond its rows' need %d -> %d, %.2fs",
            done.before,
            done.after,
            self._clock.monotonic() - started,
        )
