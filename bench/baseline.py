"""The bare Kafka round trip: an aiokafka producer and consumer moving the archive's bytes, no processing.

python -m bench.baseline produce --bootstrap B --topic T --root DIR
python -m bench.baseline consume --bootstrap B --topic T --count N   # prints the time of the last record
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from streams.backfill import DEFAULT_BATCH_BYTES, DEFAULT_COMPRESSION, DEFAULT_LINGER_MS, codec
from streams.backfill_todo import walk
from streams.kafka_io import MAX_MESSAGE_BYTES


async def produce(bootstrap: str, topic: str, root: Path) -> int:
    """Every file's bytes as one record (key: path), with the producer settings the backfill uses."""
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap,
        acks="all",
        enable_idempotence=True,
        compression_type=codec(DEFAULT_COMPRESSION),
        max_request_size=MAX_MESSAGE_BYTES,
        max_batch_size=DEFAULT_BATCH_BYTES,
        linger_ms=DEFAULT_LINGER_MS,
    )
    await producer.start()
    count = 0
    try:
        futures = []
        for c in walk(root):
            futures.append(await producer.send(topic, key=c.rel.encode(), value=(root / c.rel).read_bytes()))
            count += 1
        await asyncio.gather(*futures)
    finally:
        await producer.stop()
    return count


async def consume(bootstrap: str, topic: str, count: int, ready: Path) -> float:
    """Read `count` records from the start of the topic; the wall-clock time the last one arrived."""
    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=f"bare-{topic}",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        max_partition_fetch_bytes=MAX_MESSAGE_BYTES,
        fetch_max_bytes=4 * MAX_MESSAGE_BYTES,
    )
    await consumer.start()
    try:
        while not consumer.assignment():
            await consumer.getmany(timeout_ms=100)
        ready.touch()
        seen = 0
        while seen < count:
            batch = await consumer.getmany(timeout_ms=500, max_records=10000)
            seen += sum(len(records) for records in batch.values())
        return time.time()
    finally:
        await consumer.stop()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("action", choices=("produce", "consume"))
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--topic", required=True)
    p.add_argument("--root", type=Path)
    p.add_argument("--count", type=int)
    p.add_argument("--ready", type=Path)
    a = p.parse_args()
    if a.action == "produce":
        print(json.dumps({"sent": asyncio.run(produce(a.bootstrap, a.topic, a.root))}))
    else:
        print(json.dumps({"last_at": asyncio.run(consume(a.bootstrap, a.topic, a.count, a.ready))}))


if __name__ == "__main__":
    main()
