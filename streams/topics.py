"""The worker's Kafka topics, declared by one factory, and the sends the agents, timers and views make on them."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol, cast

import faust
from aiokafka.producer.message_accumulator import BatchBuilder
from faust.serializers.schemas import DecodeFunction, OnKeyDecodeErrorFun, OnValueDecodeErrorFun, Schema
from faust.types import AppT, EventT, Message, ProducerT, TopicT

from processors.briefing_parts import Part
from processors.dead_letters import DeadLetter, dead_headers
from processors.models import ControlCommand
from streams.settings import Settings

# Outputs.command, as the timers and views take it.
SendCommand = Callable[[ControlCommand], Awaitable[ControlCommand]]

# The events Faust may prefetch for the window agent. The app's stream_buffer_maxsize (1 000) is sized for raw
# records; a documents record holds up to kafka.record_bytes (384 KiB) of notes, so it allowed ~370 MB of them.
# 64 are two window batches of a backfill's records (~17 notes each). It fills while the replay catches the state
# up (docs/performance.md: 136 records at 1 000 for a 10k backlog).
DOCUMENTS_BUFFER_RECORDS = 64


def stage_topic(app: faust.App, settings: Settings, stage: str, buffer: int | None = None) -> TopicT:
    """One stage's topic (`<prefix>.<stage>`): bytes in and out, since processors.wire and pydantic encode them.

    `buffer`: the events Faust prefetches for an agent on it (None: the app's stream_buffer_maxsize)."""
    # faust.Topic, not app.topic: App.topic takes a maxsize and drops it (faust-streaming 0.15).
    return faust.Topic(
        app,
        topics=[settings.kafka.topic(stage)],
        schema=BytesAsRead(),
        key_type=bytes,
        value_type=bytes,
        key_serializer="raw",
        value_serializer="raw",
        maxsize=buffer,
    )


class BytesAsRead(Schema):  # type: ignore[type-arg]  # faust's Schema is generic only in its stubs
    """Keys and values handed to the agents as the consumer read them: bytes (or None), as the raw codec did."""

    # Faust's compiled decode runs each key and value through its codec registry (lookups, the raw codec's
    # want_bytes, the payload's type check) and `App.create_event` reads the Event class through the app's
    # settings each time: 3.6 µs a record on the event loop; this is 0.3 (docs/performance.md). The sends keep
    # Faust's encoding: the schema keeps the topic's raw serializers.
    def compile(
        self,
        app: AppT,
        *,
        on_key_decode_error: OnKeyDecodeErrorFun | None = None,
        on_value_decode_error: OnValueDecodeErrorFun | None = None,
        default_propagate: bool = False,
    ) -> DecodeFunction:
        event = cast(Callable[..., EventT[bytes]], app.conf.Event)  # the class create_event builds, read once

        async def decode(message: Message, *, propagate: bool = default_propagate) -> EventT[bytes]:
            return event(app, message.key, message.value, message.headers, message)

        return decode


@dataclass(frozen=True)
class Topics:
    """The stages of DESIGN §3 as Faust topics, and the dead-letter topic (a new one is a field here and in
    kafka_io.STAGES)."""

    raw: TopicT  # key: root-relative path; value: a RawFile
    documents: TopicT  # key: a record's first axis; value: a documents record (processors.wire)
    control: TopicT  # key: axis; value: a ControlCommand
    briefings: (
        TopicT  # key: axis; value: the emitted briefing's JSON (or a part of it: processors.briefing_parts)
    )
    dead: TopicT  # key and value: the failed record's, byte for byte; headers: its origin and error

    @classmethod
    def declare(cls, app: faust.App, settings: Settings) -> Topics:
        return cls(
            raw=stage_topic(app, settings, "raw"),
            documents=stage_topic(app, settings, "documents", DOCUMENTS_BUFFER_RECORDS),
            control=stage_topic(app, settings, "control"),
            briefings=stage_topic(app, settings, "briefings"),
            dead=stage_topic(app, settings, "dead"),
        )


class Outputs(Protocol):
    """Where the worker's results go: the topics, or what an in-process test records."""

    async def forward(self, records: Sequence[tuple[bytes, bytes]]) -> None:
        """Put documents records (key, value) on the documents topic; return once every one is acknowledged."""
        ...

    async def briefing(self, axis: str, parts: Iterable[Part]) -> None:
        """Put an emitted briefing's message(s) on the briefings topic, in order (each made as it is sent); return
        once all are acknowledged."""
        ...

    async def command(self, command: ControlCommand) -> ControlCommand:
        """Put a command on the control topic; return it once it is acknowledged."""
        ...

    async def dead(self, letters: Sequence[DeadLetter]) -> None:
        """Put failed records on the dead-letter topic; return once every one is acknowledged."""
        ...


class TopicOutputs:
    """The sends of a running worker, through Faust's own producer (the one it flushes before each commit)."""

    def __init__(self, app: faust.App, topics: Topics) -> None:
        self._app = app
        self._topics = topics

    async def forward(self, records: Sequence[tuple[bytes, bytes]]) -> None:
        # Every record is handed to the producer first, then every acknowledgement awaited. Faust's own
        # producer (the one its commits flush), without Topic.send's per-message bookkeeping.
        producer = await self._app.maybe_start_producer()
        name = self._topics.documents.get_topic_name()
        pending = await send_uncompressed(producer, name, records, self._app.conf.producer_max_batch_size)
        await asyncio.gather(*pending)

    async def briefing(self, axis: str, parts: Iterable[Part]) -> None:
        producer = await self._app.maybe_start_producer()
        name = self._topics.briefings.get_topic_name()
        for part in parts:  # each acknowledged before the next is sent: the parts stay in order on retries
            sent = await producer.send(name, axis.encode(), part.value, None, None, part.headers or None)
            # A part is ~24 MB and the producer holds its own copy: freed before that copy is compressed (two
            # more copies) rather than after its acknowledgement.
            del part
            await sent

    async def command(self, command: ControlCommand) -> ControlCommand:
        await self._topics.control.send(key=command.axis.encode(), value=command.model_dump_json().encode())
        return command

    async def dead(self, letters: Sequence[DeadLetter]) -> None:
        # Acknowledged before the batch that met them is acked: a dead letter is never committed past unsent.
        producer = await self._app.maybe_start_producer()
        name = self._topics.dead.get_topic_name()
        pending = [
            await producer.send(name, letter.key, letter.value, None, None, dead_headers(letter))
            for letter in letters
        ]
        await asyncio.gather(*pending)


async def send_uncompressed(
    producer: ProducerT, topic: str, records: Sequence[tuple[bytes, bytes]], batch_bytes: int
) -> list[Awaitable[object]]:
    """Records (key, value) in batches of their own that the producer does not compress, each partition's in
    order and where its partitioner puts them; the sends to await."""
    # For documents records, whose notes the parse processes compressed (v6, v7): the producer's zstd of them saved no
    # byte for ~5 µs a note of its event loop (docs/performance.md); the briefings' JSON stays compressed.
    client = producer._ensure_producer()  # type: ignore[attr-defined]  # Faust's aiokafka producer
    await client.partitions_for(topic)  # the topic's metadata, for key_partition
    open_: dict[int, BatchBuilder] = {}
    sent: list[Awaitable[object]] = []
    for key, value in records:
        partition = producer.key_partition(topic, key).partition
        batch = open_.get(partition)
        if batch is not None and batch.append(timestamp=None, key=key, value=value) is not None:
            continue
        if batch is not None:  # full: sent, and a new one started
            sent.append(await client.send_batch(batch, topic, partition=partition))
        batch = open_[partition] = BatchBuilder(batch_bytes, 0)  # codec 0: none
        batch.append(timestamp=None, key=key, value=value)  # a batch takes its first record whatever its size
    for partition, batch in open_.items():
        batch.close()  # queued as it is: aiokafka's own sends add nothing to it
        sent.append(await client.send_batch(batch, topic, partition=partition))
    return sent
