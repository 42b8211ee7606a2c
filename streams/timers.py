"""The worker's timers: the leader's check for due window closes, the refresh of the polled gauges, the retry of
briefings recorded but not yet written or sent (the outbox), the state's check and vacuum at a quiet moment, and
the heap's trim once the batches stop."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime
from functools import partial

import duckdb
import faust

from processors.window import due_closes
from sinks.clock import Clock
from streams import gauges
from streams.agents import deliver
from streams.control import new_command
from streams.heap import TRIM_EVERY_SECONDS
from streams.pipeline import Pipeline
from streams.services import Services
from streams.settings import Settings
from streams.state_vacuum import VACUUM_CHECK_SECONDS, QuietVacuum
from streams.topics import Outputs, SendCommand

log = logging.getLogger(__name__)

OUTBOX_TICK_SECONDS = 1.0  # how often the outbox looks for what is due; each axis has its own back-off


class CloseCheck:
    """On the leader, each tick: send a close for every scheduled window that is due and not yet emitted."""

    def __init__(
        self,
        settings: Settings,
        clock: Clock,
        pipeline: Callable[[], Pipeline],
        refresh_briefings: Callable[[], Awaitable[int]],
        send: SendCommand,
    ) -> None:
        self._settings = settings
        self._clock = clock
        self._pipeline = pipeline
        self._refresh_briefings = refresh_briefings
        self._send = send
        self._sent: set[tuple[str, datetime]] = set()

    async def tick(self) -> None:
        # Crontab does not catch up missed runs, so every tick compares the schedule with what was emitted.
        s = self._settings
        if not s.close_enabled:
            return
        try:
            # Other workers own other axes: their emissions reach this state through the briefings topic.
            await self._refresh_briefings()
        except Exception:
            log.exception("reading the briefings topic failed; closes are checked on the next tick")
            return
        now = self._clock.now()
        state = self._pipeline().state
        for axis in s.axes:
            last = state.last_close_end(axis.name)
            for end in due_closes(last, now, s.close_at, s.tz, s.grace):
                # Sent once per leader: the owner answers it, or dedups it if an earlier leader sent it too.
                if state.emission(axis.name, end, "close") is None and (axis.name, end) not in self._sent:
                    self._sent.add((axis.name, end))
                    log.info("sending close for %s window ending %s", axis.name, end.isoformat())
                    await self._send(new_command(axis.name, "close", end, now))


async def refresh_gauges(services: Services) -> None:
    """Window size, the schedule, consumer lag and readiness move without any event arriving, so they are polled."""
    try:
        owned = set(services.ownership.owned_axes())
        # In a thread: the reads wait for the state's lock, which a batch's store or the vacuum holds for up
        # to seconds, while the loop goes on.
        refresh = partial(
            gauges.refresh_state_gauges,
            services.settings,
            services.pipeline().state,
            services.metrics,
            services.clock.now(),
            owned=owned,
        )
        try:
            await asyncio.to_thread(refresh)
        except (
            duckdb.ConnectionException
        ):  # replaced as a damaged state meanwhile: the next tick reads the new one
            log.debug("the state was replaced while its gauges were read; they are read at the next tick")
        await services.lag.get(max_age=0.0)  # sets the lag gauges and predigest_kafka_up
        await services.readiness.report()  # sets predigest_ready
    except Exception:  # a monitoring tick must never take the worker down
        log.exception("refreshing the polled gauges failed")


async def retry_briefings(services: Services, outputs: Outputs) -> None:
    """Briefings recorded but not written (an axis's folder failing) or not sent (a crash): tried again when due."""
    try:
        await services.outbox.tick(lambda emission: deliver(services, outputs, emission))
    except Exception:  # a retry tick must never take the worker down; the next one tries again
        log.exception("retrying the waiting briefings failed")


def register_timers(app: faust.App, services: Services, outputs: Outputs) -> CloseCheck:
    """The close check on the leader only; the gauges on every worker (each reports its own axes)."""
    s = services.settings
    check = CloseCheck(s, services.clock, services.pipeline, services.sync.refresh_briefings, outputs.command)
    # Bound methods and partials with every argument given: Faust passes the app to a timer that takes one.
    app.timer(interval=s.close_check_seconds, on_leader=True, name="streams.timers.close_windows")(check.tick)
    app.timer(interval=s.metrics_interval_seconds, name="streams.timers.refresh_gauges")(
        partial(refresh_gauges, services)
    )
    app.timer(interval=s.state_check_seconds, name="streams.timers.check_state")(services.guard.check)
    vacuum = QuietVacuum(services.pipeline, services.clock)
    app.timer(interval=VACUUM_CHECK_SECONDS, name="streams.timers.vacuum_state")(vacuum.tick)
    app.timer(interval=OUTBOX_TICK_SECONDS, name="streams.timers.retry_briefings")(
        partial(retry_briefings, services, outputs)
    )
    app.timer(interval=TRIM_EVERY_SECONDS, name="streams.timers.trim_heap")(services.heap.when_quiet)
    return check
