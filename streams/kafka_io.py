"""aiokafka clients configured from settings: strong producer defaults, large messages, topic setup."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import ssl
from typing import Any, TypeAlias

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.errors import KafkaError, TopicAlreadyExistsError
from aiokafka.partitioner import DefaultPartitioner

from streams.errors import BrokerUnavailableError, ConfigError
from streams.settings import KAFKA_MESSAGE_BYTES, KafkaSettings, Settings

log = logging.getLogger(__name__)

# Set together on the topics, the producers (uncompressed size) and the consumers' fetches (DESIGN §6).
MAX_MESSAGE_BYTES = KAFKA_MESSAGE_BYTES
# A briefing over this is sent in parts of at most this many bytes (processors.briefing_parts); the rest of the
# message limit is headroom for the key, the part headers and the batch header.
BRIEFING_PART_BYTES = MAX_MESSAGE_BYTES - 64 * 1024
STAGES = ("raw", "documents", "control", "briefings", "dead")
TOPIC_VISIBLE_SECONDS = 10.0


def ssl_context(k: KafkaSettings) -> ssl.SSLContext | None:
    """The TLS context for SSL / SASL_SSL: verifies the brokers (system CAs or `ssl_cafile`), optional client cert."""
    if not k.uses_tls:
        return None
    context = ssl.create_default_context(cafile=str(k.ssl_cafile) if k.ssl_cafile else None)
    if k.ssl_certfile is not None and k.ssl_keyfile is not None:
        context.load_cert_chain(str(k.ssl_certfile), str(k.ssl_keyfile))
    return context


def client_kwargs(settings: Settings) -> dict[str, Any]:
    """Connection and security arguments for every aiokafka client (producer, consumer, admin)."""
    k = settings.kafka
    kwargs: dict[str, Any] = {"bootstrap_servers": k.bootstrap, "security_protocol": k.security_protocol}
    if k.uses_sasl:
        kwargs["sasl_mechanism"] = k.sasl_mechanism
        kwargs["sasl_plain_username"] = k.sasl_username
        kwargs["sasl_plain_password"] = k.sasl_password.get_secret_value() if k.sasl_password else None
    context = ssl_context(k)
    if context is not None:
        kwargs["ssl_context"] = context
    return kwargs


def faust_broker_kwargs(settings: Settings) -> dict[str, Any]:
    """The same connection and security for the Faust app: every bootstrap server, SASL and TLS."""
    import faust

    k = settings.kafka
    hosts = [h.strip() for h in (k.bootstrap or "").split(",") if h.strip()]
    kwargs: dict[str, Any] = {"broker": [f"kafka://{h}" for h in hosts]}
    context = ssl_context(k)
    if k.uses_sasl:
        kwargs["broker_credentials"] = faust.SASLCredentials(
            username=k.sasl_username,
            password=k.sasl_password.get_secret_value() if k.sasl_password else None,
            mechanism=k.sasl_mechanism,
            ssl_context=context,
        )
    elif context is not None:
        kwargs["broker_credentials"] = faust.SSLCredentials(context)
    return kwargs


Client: TypeAlias = AIOKafkaProducer | AIOKafkaConsumer | AIOKafkaAdminClient


async def close_client(client: Client) -> None:
    """Stop a producer or consumer, close an admin client (each never raises on one that never started)."""
    with contextlib.suppress(Exception):
        if isinstance(client, AIOKafkaAdminClient):
            await client.close()
        else:
            await client.stop()


class _ConnectErrors(logging.Filter):
    """Holds back aiokafka's own "Unable connect to …" lines while a client starts: the one line says it."""

    def __init__(self) -> None:
        super().__init__()
        self.held: list[str] = []

    def filter(self, record: logging.LogRecord) -> bool:
        if record.getMessage().startswith("Unable connect to"):
            self.held.append(record.getMessage().removeprefix("Unable connect to "))
            return False
        return True


def unreachable(
    settings: Settings, exc: BaseException, held: list[str] | None = None
) -> BrokerUnavailableError:
    """The one line for a broker that cannot be reached, naming it and the setting that points at it."""
    why = str(exc).removeprefix(f"{type(exc).__name__}: ") or type(exc).__name__
    if held:
        why = held[-1]
    # aiokafka's line repeats the address the message names already, and an errno says it in two words.
    errno = re.search(r"\[Errno (-?\d+)\] ?", why)
    if errno and int(errno.group(1)) > 0:
        why = os.strerror(int(errno.group(1)))
    elif errno:
        why = why[errno.end() :]
    return BrokerUnavailableError(
        f"Kafka at {settings.kafka.bootstrap} cannot be reached ({why}): start the broker, or point "
        "kafka.bootstrap (PREDIGEST_KAFKA__BOOTSTRAP) at a running one"
    )


async def start_client(settings: Settings, client: Client) -> None:
    """Start an aiokafka client; when Kafka cannot be reached, close it (nothing left unclosed) and say so."""
    errors = _ConnectErrors()
    aiokafka_log = logging.getLogger("aiokafka")
    aiokafka_log.addFilter(errors)
    try:
        await client.start()
    except (KafkaError, OSError) as exc:
        await close_client(client)
        raise unreachable(settings, exc, errors.held) from None
    except BaseException:
        await close_client(client)
        raise
    finally:
        aiokafka_log.removeFilter(errors)
    for line in errors.held:  # a broker of several that did not answer while another did: worth a line
        log.warning("while connecting to Kafka: unable to connect to %s", line)


_MURMUR2 = DefaultPartitioner()


def key_partitioner(key: bytes | None, all_partitions: list[int], available: list[int]) -> int:
    """aiokafka's default partitioner (murmur2 of the key), without the hash when the topic has one partition."""
    # aiokafka's murmur2 is pure Python, ~10 µs a path key: ~7 % of the backfill's CPU a note on the one-partition
    # topics of the default configuration, where every key lands on partition 0 anyway (docs/performance.md).
    if len(all_partitions) == 1:
        return all_partitions[0]
    return int(_MURMUR2(key, all_partitions, available))


def make_producer(settings: Settings) -> AIOKafkaProducer:
    """An idempotent producer with acks=all: aiokafka's defaults (acks=1, no idempotence) lose data."""
    return AIOKafkaProducer(
        **client_kwargs(settings),
        acks="all",
        enable_idempotence=True,
        compression_type="zstd",  # level 3, ~8x the speed of aiokafka's gzip (level 9)
        partitioner=key_partitioner,
        max_request_size=MAX_MESSAGE_BYTES,
        max_batch_size=1024 * 1024,
        linger_ms=5,
        request_timeout_ms=30000,
    )


def make_consumer(settings: Settings, *topics: str, group_id: str | None = None) -> AIOKafkaConsumer:
    return AIOKafkaConsumer(
        *topics,
        **client_kwargs(settings),
        group_id=group_id,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        max_partition_fetch_bytes=MAX_MESSAGE_BYTES,
        fetch_max_bytes=4 * MAX_MESSAGE_BYTES,
    )


def retention_ms(settings: Settings, stage: str) -> int:
    """The project's retention of a stage's topic: briefings are kept (-1) unless configured otherwise."""
    hours = {
        "briefings": settings.kafka.briefings_retention_hours,
        "dead": settings.dead_letters.retention_hours,
    }.get(stage, settings.kafka.retention_hours)
    return -1 if hours < 0 else int(hours * 3600 * 1000)


async def ensure_topics(settings: Settings) -> None:
    """Create the pipeline's topics with retention ≥ window + grace + margin and large messages."""
    admin = AIOKafkaAdminClient(**client_kwargs(settings))
    await start_client(settings, admin)
    try:
        existing = set(await admin.list_topics())
        wanted = [
            NewTopic(
                name=settings.kafka.topic(stage),
                num_partitions=settings.kafka.partitions,
                replication_factor=settings.kafka.replication_factor,
                topic_configs={
                    "max.message.bytes": str(MAX_MESSAGE_BYTES),
                    "retention.ms": str(retention_ms(settings, stage)),
                },
            )
            for stage in STAGES
            if settings.kafka.topic(stage) not in existing
        ]
        if wanted:
            with contextlib.suppress(TopicAlreadyExistsError):
                await admin.create_topics(wanted)
            log.info("created topics %s", [t.name for t in wanted])
    finally:
        await admin.close()


async def delete_topics_of(settings: Settings, prefixes: tuple[str, ...]) -> list[str]:
    """Delete every topic whose name starts with one of `prefixes` (a finished `once` run's); their names."""
    admin = AIOKafkaAdminClient(**client_kwargs(settings))
    await start_client(settings, admin)
    try:
        names = sorted(t for t in await admin.list_topics() if t.startswith(prefixes))
        if names:
            await admin.delete_topics(names)
        return names
    finally:
        await admin.close()


async def topic_partitions(admin: AIOKafkaAdminClient, topics: list[str]) -> list[TopicPartition]:
    """Every partition of the topics; a topic the broker does not know yet contributes none."""
    # The consumer's `topics()` fetches metadata into a throwaway cluster object, so
    # `partitions_for_topic` stays None for unsubscribed topics; the admin answer is the reliable one.
    found: list[TopicPartition] = []
    for meta in await admin.describe_topics(topics):
        if meta.get("error_code", 0) == 0:
            found.extend(TopicPartition(meta["topic"], p["partition"]) for p in meta.get("partitions", []))
    return found


async def group_caught_up(settings: Settings, group_id: str, topics: list[str]) -> bool:
    """True when the group's committed offsets reach the end of every partition of the topics."""
    admin = AIOKafkaAdminClient(**client_kwargs(settings))
    consumer = AIOKafkaConsumer(**client_kwargs(settings))
    await start_client(settings, admin)
    try:
        await start_client(settings, consumer)
    except BaseException:
        await close_client(admin)
        raise
    try:
        parts = await topic_partitions(admin, topics)
        if len({tp.topic for tp in parts}) < len(topics):
            return False
        ends = await consumer.end_offsets(parts)
        try:
            committed = await admin.list_consumer_group_offsets(group_id, partitions=parts)
        except KafkaError:
            return False  # the group has not joined yet
        for tp in parts:
            meta = committed.get(tp)
            done = meta.offset if meta is not None and meta.offset >= 0 else 0
            if done < ends[tp]:
                return False
        return True
    finally:
        await consumer.stop()
        await admin.close()


async def wait_caught_up(settings: Settings, group_id: str, topics: list[str], timeout: float) -> None:
    """Wait until the group has processed everything, seen twice in a row (a stage can still be sending)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    streak = 0
    while loop.time() < deadline:
        streak = streak + 1 if await group_caught_up(settings, group_id, topics) else 0
        if streak >= 2:
            return
        await asyncio.sleep(1.0)
    raise TimeoutError(f"consumer group {group_id} did not catch up on {topics} within {timeout:.0f}s")


async def group_lag(settings: Settings, group_id: str, topics: list[str]) -> dict[TopicPartition, int]:
    """Per partition of the topics: end offset minus the group's committed offset (or the log start)."""
    admin = AIOKafkaAdminClient(**client_kwargs(settings))
    consumer = AIOKafkaConsumer(**client_kwargs(settings))
    try:
        # Both are closed even when start fails, so an unreachable broker leaks no connections.
        await start_client(settings, admin)
        await start_client(settings, consumer)
        parts = await topic_partitions(admin, topics)
        return await lag_with(admin, consumer, group_id, parts)
    finally:
        await consumer.stop()
        await admin.close()


async def lag_with(
    admin: AIOKafkaAdminClient, consumer: AIOKafkaConsumer, group_id: str, parts: list[TopicPartition]
) -> dict[TopicPartition, int]:
    """`group_lag` over started clients a caller keeps (one reading: three requests, no connection set up)."""
    if not parts:
        return {}
    ends = await consumer.end_offsets(parts)
    starts = await consumer.beginning_offsets(parts)
    committed = await admin.list_consumer_group_offsets(group_id, partitions=parts)
    lag: dict[TopicPartition, int] = {}
    for tp in parts:
        meta = committed.get(tp)
        # With no commit yet (or one below what retention kept) the group still has to read from the log start.
        done = max(meta.offset if meta is not None else -1, starts[tp])
        lag[tp] = max(0, ends[tp] - done)
    return lag


async def committed_offsets(settings: Settings, topic: str, partitions: list[int]) -> dict[int, int]:
    """The worker group's committed offset per partition of a topic; 0 where it has committed nothing."""
    admin = AIOKafkaAdminClient(**client_kwargs(settings))
    await start_client(settings, admin)
    try:
        tps = [TopicPartition(topic, p) for p in partitions]
        committed = await admin.list_consumer_group_offsets(settings.app_id, partitions=tps)
    finally:
        await admin.close()
    out: dict[int, int] = {}
    for tp in tps:
        meta = committed.get(tp)
        out[tp.partition] = meta.offset if meta is not None and meta.offset >= 0 else 0
    return out


async def partition_numbers(settings: Settings, topic: str) -> list[int]:
    """The partition numbers of one topic; none when the broker does not know it."""
    admin = AIOKafkaAdminClient(**client_kwargs(settings))
    await start_client(settings, admin)
    try:
        return sorted(tp.partition for tp in await topic_partitions(admin, [topic]))
    finally:
        await admin.close()


async def _retentions(admin: AIOKafkaAdminClient, topics: list[str]) -> dict[str, int]:
    resources = [ConfigResource(ConfigResourceType.TOPIC, t, {"retention.ms": None}) for t in topics]
    found: dict[str, int] = {}
    for response in await admin.describe_configs(resources):
        for _code, _msg, _type, name, entries in response.resources:
            for entry in entries:
                if entry[0] == "retention.ms" and entry[1] is not None:
                    found[name] = int(entry[1])
    return found


async def check_topics(settings: Settings) -> int:
    """Refuse documents and control topics that are not co-partitioned; warn of short retention.

    Returns the documents topic's partition count, which decides which axis lives on which partition.
    """
    admin = AIOKafkaAdminClient(**client_kwargs(settings))
    await start_client(settings, admin)
    try:
        names = {stage: settings.kafka.topic(stage) for stage in STAGES}
        loop = asyncio.get_running_loop()
        deadline = loop.time() + TOPIC_VISIBLE_SECONDS
        while True:
            parts = await topic_partitions(admin, list(names.values()))
            counts = {stage: sum(1 for tp in parts if tp.topic == name) for stage, name in names.items()}
            # Topics created a moment ago take a while to show in the metadata.
            if (counts["documents"] and counts["control"]) or loop.time() > deadline:
                break
            await asyncio.sleep(0.5)
        if counts["documents"] == 0 or counts["documents"] != counts["control"]:
            raise ConfigError(
                f"{names['documents']} has {counts['documents']} partition(s) and {names['control']} "
                f"{counts['control']}: both are keyed by axis and must have the same count, so that the "
                "worker owning an axis's documents also gets its commands. Recreate them with "
                "kafka.partitions, or add partitions to the smaller one (the axes then move: rebuild)."
            )
        if counts["documents"] != settings.kafka.partitions:
            log.warning(
                "the topics have %d partitions, kafka.partitions says %d; the topics decide",
                counts["documents"],
                settings.kafka.partitions,
            )
        retentions = await _retentions(admin, [names["documents"], names["briefings"]])
        floor = settings.retention_floor_ms
        short = {t: ms for t, ms in retentions.items() if 0 <= ms < floor}
        for topic, ms in short.items():
            log.warning(
                "%s keeps records %.1f h only; a rebuild needs at least window + grace + margin (%.1f h)",
                topic,
                ms / 3_600_000,
                floor / 3_600_000,
            )
        return counts["documents"]
    finally:
        await admin.close()
