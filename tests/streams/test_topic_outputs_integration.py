"""The worker's sends on the real broker: documents records (their notes zstd already, v6) go uncompressed by the
producer, in order on their key's partition; a briefing's JSON is still compressed by it."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition

from processors.briefing_parts import Part
from streams import kafka_io
from streams.app import faust_app
from streams.ownership import key_partition
from streams.settings import DEFAULT_AXES, Settings
from streams.topics import TopicOutputs, Topics
from tests.support import ZSTD, batch_codecs

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

PARTITIONS = 3


async def by_partition(s: Settings, topic: str) -> dict[int, list[tuple[bytes, bytes]]]:
    consumer = AIOKafkaConsumer(**kafka_io.client_kwargs(s), enable_auto_commit=False)
    parts = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    await consumer.start()
    try:
        consumer.assign(parts)
        await consumer.seek_to_beginning(*parts)
        ends = await consumer.end_offsets(parts)
        out: dict[int, list[tuple[bytes, bytes]]] = {p: [] for p in range(PARTITIONS)}
        while [tp for tp in parts if await consumer.position(tp) < ends[tp]]:
            for tp, records in (await consumer.getmany(timeout_ms=1000)).items():
                out[tp.partition].extend((r.key or b"", r.value or b"") for r in records)
        return out
    finally:
        await consumer.stop()


async def test_documents_records_go_uncompressed_in_order_on_their_partitions_and_briefings_compressed(
    make_settings: Callable[..., Settings], kafka_data_dir: Path
) -> None:
    s = make_settings()
    s = s.model_copy(update={"kafka": s.kafka.model_copy(update={"partitions": PARTITIONS})})
    await kafka_io.ensure_topics(s)
    app = faust_app(s)
    outputs = TopicOutputs(app, Topics.declare(app, s))
    # Incompressible, as zstd frames are; ~2.4 MiB: more than one batch on a partition.
    noise = random.Random(7)
    records = [(a.name.encode(), noise.randbytes(100_000)) for _ in range(4) for a in DEFAULT_AXES]
    records.insert(5, (b"inference", noise.randbytes(3 << 20)))  # over a batch's 1 MiB: a batch of its own
    await app.maybe_start_producer()
    try:
        await outputs.forward(records)
        await outputs.briefing("inference", [Part(b'{"sources": [' + b'"2509.00001", ' * 20_000 + b"]}", [])])
    finally:
        await app.producer.stop()

    got = await by_partition(s, s.kafka.topic("documents"))
    assert got == {
        p: [(k, v) for k, v in records if key_partition(k.decode(), PARTITIONS) == p]
        for p in range(PARTITIONS)
    }
    assert batch_codecs(kafka_data_dir, s.kafka.topic("documents")) == {0}  # no zstd of zstd
    assert batch_codecs(kafka_data_dir, s.kafka.topic("briefings")) == {ZSTD}
