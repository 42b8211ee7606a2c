"""What one worker's agents, timers and views share, built once at its start: settings, clock, metrics, ownership,
the parse pool, the state catch-up, the dead-letter policy, the briefing outbox and the state itself (opened on
first use)."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

import duckdb

from sinks import duck
from sinks.clock import Clock
from sinks.errors import DuckFileError
from sinks.metrics import Metrics
from sinks.state_files import open_state, replace_state
from streams.briefing_stop import BuildStop
from streams.dead_letters import DeadLetterPolicy
from streams.failstop import EXIT_CODE, Halt, halt
from streams.heap import HeapTrim
from streams.lag_probe import LagProbe
from streams.outbox import BriefingOutbox
from streams.ownership import Ownership
from streams.parse_pool import ParsePool
from streams.pipeline import Pipeline, make_enricher, route_params
from streams.readiness import Readiness
from streams.settings import Settings
from streams.state_guard import StateGuard
from streams.state_sync import StateSync
from streams.status import StatusSnapshot

log = logging.getLogger(__name__)


def state_limits(settings: Settings) -> duck.Limits:
    """The DuckDB limits the worker's state (and a rebuild of it) opens with."""
    return duck.Limits(
        memory_mib=settings.duckdb.memory_limit_mib,
        threads=settings.duckdb.threads,
        ceiling_mib=settings.duckdb.max_memory_limit_mib,
    )


def open_pipeline(s: Settings, metrics: Metrics, clock: Clock, stop: BuildStop | None = None) -> Pipeline:
    """The worker's Pipeline: its state opened within `state_limits` (a damaged file set aside), its arXiv enricher;
    `stop`: the worker's stop, as its briefings see it."""
    state, aside = open_state(s.state_file, clock.now(), state_limits(s), metrics)
    if aside is not None:
        metrics.state_set_aside.labels(reason="unreadable").inc()
    return Pipeline(s, state, metrics, clock, enricher=make_enricher(s, metrics, clock), build_stop=stop)


class LazyPipeline:
    """The worker's Pipeline over its DuckDB state, opened by the first agent, timer or view that needs it.

    Opened lazily, in the worker process only: DuckDB allows one writer per file (duckdb#17158), and building
    the app (the CLI before it spawns the worker, `faust -A`, the tests) must not take the file.
    """

    def __init__(self, settings: Settings, metrics: Metrics, clock: Clock) -> None:
        self._settings = settings
        self._metrics = metrics
        self._clock = clock
        self.build_stop = BuildStop()  # begun by the worker's stop (streams.app)
        self._pipeline: Pipeline | None = None
        self._closed = False  # by `close`, at the worker's stop

    @property
    def opened(self) -> Pipeline | None:
        """The pipeline if the state was opened already; None before its first use."""
        return self._pipeline

    def __call__(self) -> Pipeline:
        if self._pipeline is None:
            # A task that outlived the stop (a /status snapshot) gets what a closed state would answer it.
            if self._closed:
                raise duckdb.ConnectionException("the state was closed at the worker's stop")
            self._pipeline = open_pipeline(self._settings, self._metrics, self._clock, self.build_stop)
        return self._pipeline

    async def close(self) -> bool:
        """Checkpoint and close the state if it was opened, once (again: True, nothing done), and open it no more;
        False when its checkpoint failed, said in one line: its rows stay in the WAL, which the next start replays."""
        if self._closed:
            return True
        self._closed = True
        if self._pipeline is None:
            return True
        state, started = self._pipeline.state, self._clock.monotonic()
        try:
            # In a thread: it waits for the state's lock, which a briefing's reads may hold for seconds.
            await asyncio.to_thread(state.close, checkpoint=True)
        except DuckFileError as exc:
            wal = self._settings.state_file.with_name(self._settings.state_file.name + ".wal")
            log.critical(
                "the state was not checkpointed at the stop (exit %d): %s; its rows are kept in %s, which "
                "the next start replays",
                EXIT_CODE,
                exc,
                wal,
            )
            return False
        log.info(
            "the state %s is checkpointed and closed (%.1fs)",
            self._settings.state_file,
            self._clock.monotonic() - started,
        )
        return True

    def replace_damaged(self) -> None:
        """Set the open state's file aside as unreadable and go on with a fresh one (streams.state_guard)."""
        if self._pipeline is None:
            return
        s = self._settings
        state, aside = replace_state(
            self._pipeline.state, s.state_file, self._clock.now(), state_limits(s), self._metrics
        )
        self._pipeline.state = state
        self._metrics.state_set_aside.labels(reason="unreadable").inc()
        log.error("the damaged state file was set aside as %s; a fresh one is rebuilt from Kafka", aside)


@dataclass(frozen=True)
class Services:
    """One worker's dependencies, handed to the registration functions of agents, timers and views."""

    settings: Settings
    clock: Clock
    metrics: Metrics
    ownership: Ownership
    parser: ParsePool
    pipeline: LazyPipeline
    sync: StateSync
    lag: LagProbe
    guard: StateGuard
    readiness: Readiness
    status: StatusSnapshot
    dead: DeadLetterPolicy
    outbox: BriefingOutbox
    heap: HeapTrim  # the window agent's trim after a batch, the timer's when the batches stop
    halt: Halt  # how a failed step, batch task or agent loop stops the worker (streams.failstop)

    @classmethod
    def build(cls, settings: Settings, clock: Clock, stop: Halt = halt) -> Services:
        """Everything a worker needs, with nothing opened or started yet (the state, the parse processes);
        `stop` ends the worker (tests record it instead)."""
        metrics = Metrics()
        metrics.declare_axes(a.name for a in settings.axes)
        pipeline = LazyPipeline(settings, metrics, clock)
        ownership = Ownership([a.name for a in settings.axes], settings.kafka.partitions)
        sync = StateSync(settings, pipeline, ownership, metrics, clock, stop)
        lag = LagProbe(settings, metrics, clock)
        guard = StateGuard(settings, pipeline, sync, metrics, clock)
        return cls(
            settings=settings,
            clock=clock,
            metrics=metrics,
            ownership=ownership,
            parser=ParsePool(
                route_params(settings), settings.parse_processes, clock=clock, nice=settings.parse_nice
            ),
            pipeline=pipeline,
            sync=sync,
            lag=lag,
            guard=guard,
            readiness=Readiness(settings, ownership, pipeline, guard, lag, metrics),
            status=StatusSnapshot(settings, pipeline, ownership, lag, clock),
            dead=DeadLetterPolicy(settings, metrics, clock),
            outbox=BriefingOutbox(settings, metrics, clock, pipeline, ownership),
            heap=HeapTrim(clock),
            halt=stop,
        )

    async def stop(self) -> None:
        """Once the agents, timers and web server have stopped (streams.app.WorkerApp), so that nothing uses what
        closes: the catch-up, the parse processes, the state (checkpointed), the arXiv client, in that order. A
        state that could not checkpoint stops the worker with EXIT_CODE once the rest is closed."""
        await self.sync.stop()  # a catch-up replay still running ends before the state it writes to
        # No batch awaits the processes any more (the agents cancelled theirs, unacked): a note still parsing is
        # parsed again after the restart.
        self.parser.close(kill=True)
        checkpointed = await self.pipeline.close()
        opened = self.pipeline.opened
        try:
            if opened is not None and opened.enricher is not None:
                await opened.enricher.aclose()
        finally:  # a client that fails to close must not turn a stop that lost its checkpoint into exit 0
            if not checkpointed:
                self.halt(EXIT_CODE)
