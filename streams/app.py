"""The Faust app of one worker: the app object with its configuration, and its topics, agents, timers and views
wired to the services built once at the worker's start (`faust -A streams.app worker` finds `app` here)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import faust

from sinks.clock import SYSTEM_CLOCK, Clock
from streams.agents import register_agents
from streams.briefing_stop import BuildStop
from streams.fetch_crc import check_crcs_natively
from streams.fetch_read import read_large_responses_whole
from streams.fetch_wait import shorten_fetch_wait
from streams.kafka_io import MAX_MESSAGE_BYTES, faust_broker_kwargs
from streams.producer_ebb import check_buffer_lightly
from streams.record_handoff import hand_over_inline
from streams.services import Services
from streams.settings import Settings, load_settings
from streams.stop_wait import settle_taken
from streams.timers import register_timers
from streams.topics import TopicOutputs, Topics
from streams.web import answer_failures, register_views
from streams.web_guard import exposure_warning

log = logging.getLogger(__name__)


class WorkerApp(faust.App):
    """Faust's app with a last step to its stop, `closing`: awaited once its agents, timers and web server have
    stopped (Faust's own `on_before_shutdown` comes before its agents are cancelled, a batch maybe still running).
    Its stop does not wait for the records of `dropped_on_stop` (the raw topic: streams.stop_wait); `stop_step`
    says what the stop is doing, for the line of a stop that overran its time (streams.worker_main)."""

    closing: Callable[[], Awaitable[None]] | None = None
    dropped_on_stop: str | None = None
    # The briefing being built: cancelled as the stop begins, its command not waited for (streams.briefing_stop).
    build_stop: BuildStop | None = None
    clock: Clock = SYSTEM_CLOCK
    stop_step = "its event loop busy, the app's stop not begun"

    async def on_stop(self) -> None:
        if self.build_stop is not None:
            self.build_stop.begin()
        self.stop_step = "stopping the consumer's fetcher"
        await super().on_stop()
        self.stop_step = "stopping the agents, timers, web server and Kafka clients"

    async def _consumer_wait_empty(self, consumer: Any, logger: Any) -> None:
        if not self.should_stop or self.dropped_on_stop is None:  # a revocation: all it took ends first
            await super()._consumer_wait_empty(consumer, logger)
            return
        self.stop_step = "waiting for the records the agents took"
        left = self.build_stop.left if self.build_stop is not None else set()
        await settle_taken(consumer, self.dropped_on_stop, self.clock, left=left)
        self.stop_step = "flushing the producer"

    async def on_shutdown(self) -> None:
        await super().on_shutdown()
        if self.closing is not None:
            self.stop_step = "closing the catch-up, the parse processes and the state"
            await self.closing()


# Faust's own lines (`Wait for streams...`) stay under its logger, which streams.logs quiets below -v; set after the
# class, as mode gives each subclass a logger named after its module.
WorkerApp.logger = faust.App.logger


def faust_app(settings: Settings) -> WorkerApp:
    """The app object alone: its broker, producer, consumer and web settings; no agent, timer or view yet."""
    shorten_fetch_wait()
    check_crcs_natively()
    read_large_responses_whole()
    hand_over_inline()
    check_buffer_lightly()
    settings.state_dir.mkdir(parents=True, exist_ok=True)  # Faust makes its datadir, not the folders above
    return WorkerApp(
        settings.app_id,
        **faust_broker_kwargs(settings),  # every bootstrap server, SASL and TLS as for the other clients
        store="memory://",
        datadir=str(settings.state_dir / "faust"),  # Faust's own folder, beside the state, not in the cwd
        autodiscover=False,
        web_host=settings.web_host,
        web_bind=settings.web_host,
        web_port=settings.web_port,
        web_router_enabled=False,  # Faust's own table/router views: unauthenticated, and nothing we use
        web_tables_enabled=False,
        web_application_options={"middlewares": [answer_failures]},  # a view's panic is a 500, not a drop
        topic_partitions=settings.kafka.partitions,
        topic_replication_factor=settings.kafka.replication_factor,
        producer_acks=-1,
        # zstd level 3: ~200 MB/s; aiokafka's gzip runs at level 9 (~25 MB/s), in the event loop.
        producer_compression_type="zstd",
        # The parse agent sends a batch's records before awaiting them: they travel in shared batches.
        producer_linger=0.005,
        producer_max_batch_size=1024 * 1024,
        producer_max_request_size=MAX_MESSAGE_BYTES,
        # Per partition and fetch: with a backlog, aiokafka holds a fetch of every assigned partition, so
        # MAX_MESSAGE_BYTES here was ~200 MiB of prefetched notes. A record larger than this still comes
        # whole (the broker returns a partition's first batch whatever its size, KIP-74).
        consumer_max_fetch_size=1024 * 1024,
        # Faust prefetches up to this many events per agent stream; two batches are enough to keep it busy.
        stream_buffer_maxsize=max(2 * settings.batch_records, 64),
        consumer_auto_offset_reset="earliest",
        # Acked offsets are committed every 0.5 s or every 1 000 acks, whichever comes first; a batch is
        # acked only once its body returned (see the agents), so a commit never passes unfinished work.
        broker_commit_every=1000,
        broker_commit_interval=0.5,
        broker_session_timeout=settings.kafka.session_timeout_seconds,
        broker_heartbeat_interval=min(3.0, settings.kafka.session_timeout_seconds / 4),
        # On revocation Faust clears the agents' buffers and waits for what they started (stream_wait_empty),
        # then commits: the next owner of an axis never answers a command this worker already answered.
        stream_wait_empty=True,
        # Faust's compiled stream takes a buffered event off its queue without awaiting the queue's get (~2 µs a
        # record, docs/performance.md). Its other effect, one decode shared by the channels of a topic, never
        # applies: each topic has one reader here (tests/streams/test_topics.py).
        cython_optimizations=True,
    )


class PartitionSignals:
    """The app's signal handlers: assignments move the state's ownership."""

    def __init__(self, services: Services, topics: Topics) -> None:
        self._services = services
        self._documents = topics.documents.get_topic_name()
        self._control = topics.control.get_topic_name()

    def connect(self, app: faust.App) -> None:
        # mode's SignalHandlerT makes mypy reject even a handler of exactly its own signature.
        app.on_partitions_assigned.connect(self.assigned)  # type: ignore[arg-type]
        app.on_partitions_revoked.connect(self.revoked)  # type: ignore[arg-type]

    async def assigned(self, sender: Any, assigned: set[Any], *args: Any, **kwargs: Any) -> None:
        self._services.sync.on_assigned(
            {tp.partition for tp in assigned if tp.topic == self._documents},
            {tp.partition for tp in assigned if tp.topic == self._control},
        )

    async def revoked(self, sender: Any, revoked: set[Any], *args: Any, **kwargs: Any) -> None:
        self._services.sync.on_revoked({tp.partition for tp in revoked if tp.topic == self._documents})


def create_app(settings: Settings, clock: Clock = SYSTEM_CLOCK) -> WorkerApp:
    """A worker app; settings must carry a concrete Kafka bootstrap. Nothing is opened or started here."""
    warning = exposure_warning(settings)  # ConfigError for a web port others reach with no token
    if warning is not None:
        log.warning("%s", warning)
    app = faust_app(settings)
    services = Services.build(settings, clock)
    topics = Topics.declare(app, settings)
    outputs = TopicOutputs(app, topics)
    PartitionSignals(services, topics).connect(app)
    app.closing = services.stop  # after the agents, timers and views stopped: nothing uses what it closes
    app.dropped_on_stop, app.clock = topics.raw.get_topic_name(), clock
    app.build_stop = services.pipeline.build_stop
    register_agents(app, topics, services, outputs)
    register_timers(app, services, outputs)
    register_views(app, services, outputs.command)
    return app


def _app_from_env() -> faust.App:
    from streams.kafka_local import resolve_bootstrap

    return create_app(resolve_bootstrap(load_settings()))


def __getattr__(name: str) -> Any:
    # `faust -A streams.app worker` finds `app` here; built on first access so imports stay cheap.
    if name == "app":
        value = _app_from_env()
        globals()["app"] = value
        return value
    raise AttributeError(name)
