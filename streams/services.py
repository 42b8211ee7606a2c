"""What one worker's agents, timers and views share, built once at its start: settings, clock, metrics, ownership,
the parse pool, the state catch-up, the dead-letter policy, the briefing outbox and the state itself (opened on
first use)."""

from __future__ import annotations

from dataclasses import dataclass

from sinks.clock import Clock
from sinks.metrics import Metrics
from sinks.state_files import open_state
from streams.dead_letters import DeadLetterPolicy
from streams.outbox import BriefingOutbox
from streams.ownership import Ownership
from streams.parse_pool import ParsePool
from streams.pipeline import Pipeline, make_enricher, route_params
from streams.settings import Settings
from streams.state_sync import StateSync


class LazyPipeline:
    """The worker's Pipeline over its DuckDB state, opened by the first agent, timer or view that needs it.

    Opened lazily, in the worker process only: DuckDB allows one writer per file (duckdb#17158), and building
    the app (the CLI before it spawns the worker, `faust -A`, the tests) must not take the file.
    """

    def __init__(self, settings: Settings, metrics: Metrics, clock: Clock) -> None:
        self._settings = settings
        self._metrics = metrics
        self._clock = clock
        self._pipeline: Pipeline | None = None

    @property
    def opened(self) -> Pipeline | None:
        """The pipeline if the state was opened already; None before its first use."""
        return self._pipeline

    def __call__(self) -> Pipeline:
        if self._pipeline is None:
            s, metrics, clock = self._settings, self._metrics, self._clock
            state, aside = open_state(s.state_file, clock.now())
            if aside is not None:
                metrics.state_set_aside.labels(reason="unreadable").inc()
            self._pipeline = Pipeline(s, state, metrics, clock, enricher=make_enricher(s, metrics, clock))
        return self._pipeline


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
    dead: DeadLetterPolicy
    outbox: BriefingOutbox

    @classmethod
    def build(cls, settings: Settings, clock: Clock) -> Services:
        """Everything a worker needs, with nothing opened or started yet (the state, the parse processes)."""
        metrics = Metrics()
        metrics.declare_axes(a.name for a in settings.axes)
        pipeline = LazyPipeline(settings, metrics, clock)
        ownership = Ownership([a.name for a in settings.axes], settings.kafka.partitions)
        return cls(
            settings=settings,
            clock=clock,
            metrics=metrics,
            ownership=ownership,
            parser=ParsePool(route_params(settings), settings.parse_processes, clock=clock),
            pipeline=pipeline,
            sync=StateSync(settings, pipeline, ownership, metrics, clock),
            dead=DeadLetterPolicy(settings, metrics, clock),
            outbox=BriefingOutbox(settings, metrics, clock, pipeline, ownership),
        )

    async def stop(self) -> None:
        """At shutdown: the catch-up, the arXiv client, the parse processes, in that order."""
        await self.sync.stop()  # a catch-up replay still running ends before the state it writes to
        opened = self.pipeline.opened
        if opened is not None and opened.enricher is not None:
            await opened.enricher.aclose()
        self.parser.close()
