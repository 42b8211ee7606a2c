"""The Faust app: topics, agents, the close timer and web views, built from settings."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import datetime
from functools import partial
from typing import Any, TypeVar

import faust

from processors.commands import check_command
from processors.models import ControlCommand
from processors.window import due_closes
from processors.wire import DocumentRecord, decode
from sinks.clock import SYSTEM_CLOCK, Clock
from sinks.metrics import Metrics
from sinks.state import Position
from sinks.state_files import open_state
from streams import gauges
from streams.control import new_command
from streams.failstop import must_finish
from streams.kafka_io import MAX_MESSAGE_BYTES, faust_broker_kwargs
from streams.ownership import Ownership
from streams.parse_pool import ParsePool
from streams.pipeline import Emission, Pipeline, make_enricher, route_params
from streams.settings import Settings, load_settings
from streams.state_sync import StateSync
from streams.web import register_views
from streams.web_guard import exposure_warning

log = logging.getLogger(__name__)
T = TypeVar("T")


def create_app(settings: Settings, clock: Clock = SYSTEM_CLOCK) -> faust.App:
    """A worker app; settings must carry a concrete Kafka bootstrap."""
    warning = exposure_warning(settings)  # ConfigError for a web port others reach with no token
    if warning is not None:
        log.warning("%s", warning)
    settings.state_dir.mkdir(parents=True, exist_ok=True)  # Faust makes its datadir, not the folders above
    app = faust.App(
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
    )
    metrics = Metrics()
    metrics.declare_axes(a.name for a in settings.axes)
    holder: dict[str, Pipeline] = {}

    def pipeline() -> Pipeline:
        # Opened lazily, in the worker process only: DuckDB allows one writer per file.
        if "p" not in holder:
            state, aside = open_state(settings.state_file, clock.now())
            if aside is not None:
                metrics.state_set_aside.labels(reason="unreadable").inc()
            holder["p"] = Pipeline(
                settings, state, metrics, clock, enricher=make_enricher(settings, metrics, clock)
            )
        return holder["p"]

    ownership = Ownership([a.name for a in settings.axes], settings.kafka.partitions)
    sync = StateSync(settings, pipeline, ownership, metrics, clock)
    docs_name, control_name = settings.kafka.topic("documents"), settings.kafka.topic("control")

    async def before_shutdown(sender: Any, *args: Any, signal: Any, **kwargs: Any) -> None:
        await sync.stop()  # a catch-up replay still running ends before the state it writes to
        if "p" in holder and holder["p"].enricher is not None:
            await holder["p"].enricher.aclose()

    # mode's SignalHandlerT makes mypy reject even a handler of exactly its own signature.
    app.on_before_shutdown.connect(before_shutdown)  # type: ignore[arg-type]

    async def on_assigned(sender: Any, assigned: set[Any], *args: Any, **kwargs: Any) -> None:
        sync.on_assigned(
            {tp.partition for tp in assigned if tp.topic == docs_name},
            {tp.partition for tp in assigned if tp.topic == control_name},
        )

    async def on_revoked(sender: Any, revoked: set[Any], *args: Any, **kwargs: Any) -> None:
        sync.on_revoked({tp.partition for tp in revoked if tp.topic == docs_name})

    app.on_partitions_assigned.connect(on_assigned)  # type: ignore[arg-type]
    app.on_partitions_revoked.connect(on_revoked)  # type: ignore[arg-type]

    raw_topic = app.topic(
        settings.kafka.topic("raw"),
        key_type=bytes,
        value_type=bytes,
        value_serializer="raw",
        key_serializer="raw",
    )
    docs_topic = app.topic(
        settings.kafka.topic("documents"),
        key_type=bytes,
        value_type=bytes,
        value_serializer="raw",
        key_serializer="raw",
    )
    control_topic = app.topic(
        settings.kafka.topic("control"),
        key_type=bytes,
        value_type=bytes,
        value_serializer="raw",
        key_serializer="raw",
    )
    briefings_topic = app.topic(
        settings.kafka.topic("briefings"),
        key_type=bytes,
        value_type=bytes,
        value_serializer="raw",
        key_serializer="raw",
    )

    # Commit safety (README "Guarantees"): concurrency stays 1, since with more Faust can commit past an
    # unfinished message (faust-streaming #606). `take_events` acks a batch's records only once the loop body
    # has returned (its `finally` after the yield), and Faust commits acked offsets after flushing its
    # producer; a step that raises would still be acked, so each one runs under must_finish (retry, else
    # exit without acking) and the parse agent awaits every send of its batch.
    def decoded(parse: Callable[[bytes], T], value: bytes, stage: str) -> T | None:
        try:
            return parse(value)
        except ValueError as exc:  # pydantic's ValidationError is one
            pipeline().unreadable(stage, str(exc))
            return None

    parser = ParsePool(route_params(settings), settings.parse_processes)

    async def stop_parser(sender: Any, *args: Any, signal: Any, **kwargs: Any) -> None:
        parser.close()

    app.on_before_shutdown.connect(stop_parser)  # type: ignore[arg-type]

    async def forward(records: list[tuple[bytes, bytes]]) -> None:
        # Every record is handed to the producer first, then every acknowledgement awaited. Faust's own
        # producer (the one its commits flush), without Topic.send's per-message bookkeeping.
        producer = await app.maybe_start_producer()
        name = docs_topic.get_topic_name()
        pending = [await producer.send(name, key, value, None, None, None) for key, value in records]
        await asyncio.gather(*pending)

    async def store(items: list[tuple[DocumentRecord, Position]]) -> None:
        parts = {position.partition for _, position in items}
        while True:
            # Until the catch-up has replayed a partition, its records wait; a revoke + reassign while waiting
            # brings a new catch-up, so readiness is read again, and the write follows with no await between.
            for p in sorted(parts):
                await ownership.wait_ready(p)
            if not parts & ownership.catching_up():
                break
        ready = [(record, position) for record, position in items if ownership.is_ready(position.partition)]
        pipeline().store_batch(ready)

    async def deliver(emission: Emission) -> None:
        await (await briefings_topic.send(key=emission.axis.encode(), value=emission.briefing_json.encode()))
        pipeline().delivered(emission)

    @app.agent(raw_topic)
    async def parse(stream: Any) -> None:
        try:
            await parser.start()
        except Exception:  # the first batch starts it again, under must_finish
            log.exception("starting the parse processes failed")
            parser.close()
        async for events in stream.take_events(settings.batch_records, within=settings.batch_seconds):
            # The raw offset travels on: it orders the versions of one path (raw is keyed by path).
            values = [(event.value, event.message.offset) for event in events]
            seen_at = clock.now()
            routed = await must_finish(
                partial(parser.route, values, seen_at), f"parsing {len(values)} raw record(s)"
            )
            for r in routed:
                pipeline().note(r)
            records = [record for r in routed for record in r.records]
            what = f"forwarding {len(records)} record(s) of {len(values)} file(s) to the documents topic"
            await must_finish(partial(forward, records), what)

    @app.agent(docs_topic)
    async def window(stream: Any) -> None:
        async for events in stream.take_events(settings.batch_records, within=settings.batch_seconds):
            items = []
            for event in events:
                msg = event.message
                record = decoded(decode, event.value, "documents")
                if record is not None:
                    items.append((record, Position(msg.topic, msg.partition, msg.offset)))
            what = f"storing {len(items)} record(s) in {settings.state_file}"
            await must_finish(partial(store, items), what)

    @app.agent(control_topic)
    async def control(stream: Any) -> None:
        async for event in stream.events():
            command = decoded(ControlCommand.model_validate_json, event.value, "control")
            if command is None:
                continue
            msg = event.message
            # Checked before anything else: a command that cannot be briefed would fail every retry and stop
            # the worker for good (Kafka redelivers it at each restart), so it is refused and skipped.
            refused = check_command(command, settings.command_limits, clock.now())
            if refused is not None:
                pipeline().refuse_command(command, refused, Position(msg.topic, msg.partition, msg.offset))
                continue
            refusal = ownership.refusal(command.axis, event.message.partition)
            if refusal is None and not await ownership.wait_ready(event.message.partition):
                refusal = "not_owned"  # the partition moved while its state was catching up
            if refusal is not None:
                log.warning(
                    "%s command for %s on control partition %d not answered here: %s (axis partition %d)",
                    command.trigger,
                    command.axis,
                    event.message.partition,
                    refusal,
                    ownership.partition_of(command.axis),
                    extra={"axis": command.axis},
                )
                metrics.commands_ignored.labels(reason=refusal).inc()
                continue
            what = f"the {command.trigger} of {command.axis} ending {command.end.isoformat()}"
            emission = await must_finish(partial(pipeline().brief, command), f"emitting {what}")
            if emission is not None and not emission.delivered:
                await must_finish(partial(deliver, emission), f"sending {what} to the briefings topic")

    async def send_command(command: ControlCommand) -> ControlCommand:
        await control_topic.send(key=command.axis.encode(), value=command.model_dump_json().encode())
        return command

    sent_closes: set[tuple[str, datetime]] = set()

    @app.timer(interval=settings.close_check_seconds, on_leader=True)
    async def close_windows() -> None:
        # Crontab does not catch up missed runs, so every tick compares the schedule with what was emitted.
        if not settings.close_enabled:
            return
        try:
            # Other workers own other axes: their emissions reach this state through the briefings topic.
            await sync.refresh_briefings()
        except Exception:
            log.exception("reading the briefings topic failed; closes are checked on the next tick")
            return
        now = clock.now()
        for axis in settings.axes:
            last = pipeline().state.last_close_end(axis.name)
            for end in due_closes(last, now, settings.close_at, settings.tz, settings.grace):
                # Sent once per leader: the owner answers it, or dedups it if an earlier leader sent it too.
                if (
                    pipeline().state.emission(axis.name, end, "close") is None
                    and (axis.name, end) not in sent_closes
                ):
                    sent_closes.add((axis.name, end))
                    log.info("sending close for %s window ending %s", axis.name, end.isoformat())
                    await send_command(new_command(axis.name, "close", end, now))

    @app.timer(interval=settings.metrics_interval_seconds)
    async def refresh_gauges() -> None:
        # Window size, the schedule and consumer lag move without any event arriving, so they are polled.
        try:
            gauges.refresh_state_gauges(
                settings, pipeline().state, metrics, clock.now(), owned=set(ownership.owned_axes())
            )
            await gauges.refresh_consumer_lag(settings, metrics)
        except Exception:  # a monitoring tick must never take the worker down
            log.exception("refreshing the polled gauges failed")

    register_views(app, settings, metrics, pipeline, send_command, ownership, clock)
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
