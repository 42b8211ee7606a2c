"""State follows the partitions: on every assignment, catch the owned partitions' state up with Kafka.

Faust seeks its streams to the group's committed offset after the rebalance (and drops records below the
read offset it tracks), so the state is not rebuilt through the agents: a separate replay reads each owned
documents partition from the offset after the one the state last applied. The window and control agents
wait for it (`Ownership.wait_ready`), so no command is answered from half a state.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from aiokafka.errors import KafkaError

from sinks.clock import Clock
from sinks.metrics import Metrics
from streams import kafka_io
from streams.errors import BrokerUnavailableError
from streams.failstop import Halt, halt, stop_on_failure
from streams.ownership import Ownership
from streams.pipeline import Pipeline
from streams.replay import ReplayProgress, replay_briefings, replay_documents
from streams.settings import Settings

log = logging.getLogger(__name__)

RETRY_SECONDS = 5.0
PROGRESS_SECONDS = 5.0


class StateSync:
    """Runs the catch-up of each new assignment in the background and marks partitions ready."""

    def __init__(
        self,
        settings: Settings,
        pipeline: Callable[[], Pipeline],
        ownership: Ownership,
        metrics: Metrics,
        clock: Clock,
        stop: Halt = halt,
    ) -> None:
        self._settings = settings
        self._halt = stop
        self._clock = clock
        self._pipeline = pipeline
        self._ownership = ownership
        self._metrics = metrics
        self._task: asyncio.Task[None] | None = None
        self._briefings_lock = asyncio.Lock()
        self._progress = ReplayProgress(clock, every_seconds=PROGRESS_SECONDS)

    def on_assigned(self, partitions: set[int], control: set[int]) -> None:
        """A new assignment (Kafka's eager rebalance: the whole of it) of documents and control partitions."""
        self._cancel()
        self._ownership.assign(partitions)
        self._ownership.control_partitions = set(control)
        if control != partitions:
            # Faust's assignor keeps co-partitioned topics together; this means the counts differ.
            log.error(
                "assigned documents partitions %s but control partitions %s: commands for the axes of the "
                "difference are refused here",
                sorted(partitions),
                sorted(control),
            )
        for axis, partition in self._ownership.axis_map().items():
            self._metrics.axis_owned.labels(axis=axis).set(1 if partition in partitions else 0)
        log.info(
            "assigned documents partitions %s: axes %s",
            sorted(partitions),
            self._ownership.owned_axes() or "none",
        )
        self._task = self._started(sorted(partitions))

    def on_revoked(self, partitions: set[int]) -> None:
        self._cancel()
        self._ownership.revoke(partitions)

    async def replace_damaged(self, reopen: Callable[[], None]) -> None:
        """The open state failed a read: `reopen` sets it aside and opens a fresh one, which the owned
        partitions' catch-up rebuilds from Kafka, as at a start with no state file.

        Under the pipeline's briefing lock: a briefing in progress finishes first and the next waits for the
        rebuild; the window and control agents wait as well, every owned partition catching up again.
        """
        async with self._pipeline().briefing_lock:
            self._cancel()
            owned = sorted(self._ownership.owned_partitions)
            self._ownership.assign(owned)
            reopen()
            log.info("rebuilding the state of documents partitions %s from Kafka", owned)
            self._task = self._started(owned)
            await self._ownership.wait_caught_up()

    async def stop(self) -> None:
        """Cancel the catch-up and wait for it; one that had failed already is logged, not raised: the worker's
        stop goes on to close the state (streams.services.Services.stop)."""
        task = self._task
        self._cancel()
        if task is not None:
            try:
                await task
            except asyncio.CancelledError:
                pass
            except Exception as exc:  # nothing retried it: said here, where the stop met it
                log.error("the state's catch-up had failed: %s; the stop goes on", exc, exc_info=exc)

    def _started(self, partitions: list[int]) -> asyncio.Task[None]:
        # A failure the catch-up does not retry (a state write, a bug) would leave its partitions never ready and
        # every agent waiting on them: the worker stops instead (exit 75), and its restart catches up again.
        task = asyncio.create_task(self._catch_up(partitions))
        task.add_done_callback(stop_on_failure("the state's catch-up", self._halt))
        return task

    def _cancel(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
        self._task = None

    async def _catch_up(self, partitions: list[int]) -> None:
        started = self._clock.monotonic()
        while True:
            try:
                emitted = await self.refresh_briefings()
                docs = self._settings.kafka.topic("documents")
                committed = await kafka_io.committed_offsets(self._settings, docs, partitions)
                total = 0
                for p in partitions:
                    n = await replay_documents(
                        self._settings, self._pipeline(), [p], self._progress, new_from=committed
                    )
                    self._metrics.state_replayed.labels(stage="documents").inc(n)
                    total += n
                    self._ownership.mark_ready(p)
                break
            except (KafkaError, BrokerUnavailableError, OSError, TimeoutError) as exc:
                # Until the state is caught up the partitions' records wait; answering from half a state is worse.
                log.warning(
                    "catching up partitions %s failed (%s); again in %.0fs", partitions, exc, RETRY_SECONDS
                )
                await self._clock.sleep(RETRY_SECONDS)
        log.info(
            "state caught up on documents partitions %s: %d record(s) replayed, %d briefing(s) restored, %.1fs",
            partitions,
            total,
            emitted,
            self._clock.monotonic() - started,
        )

    async def refresh_briefings(self) -> int:
        """Restore every emission on `predigest.briefings` the state does not hold yet; how many briefings."""
        async with self._briefings_lock:
            n = await replay_briefings(self._settings, self._pipeline().state)
        self._metrics.state_replayed.labels(stage="briefings").inc(n)
        return n
