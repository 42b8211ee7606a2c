"""How long the worker's consumer lets the broker hold a fetch that finds nothing new: 100 ms, not Faust's 1.5 s.

Faust's aiokafka driver hard-codes `fetch_max_wait_ms=1500` (faust-streaming 0.15). Behind a backlog Faust stops
fetching a partition whose stream buffer is full, so the fetch in flight asks only for the partitions with
nothing new (the documents topic while the raw one waits), and the broker holds it the full 1.5 s; the paused
partition, drained meanwhile, waits for that answer before it is fetched again. A 10k ingest stalled 0.3-1 s
every couple of seconds that way (docs/performance.md, "Where the ingest waits").
"""

from __future__ import annotations

from typing import Any

import aiokafka
from faust.transport.drivers.aiokafka import AIOKafkaConsumerThread

FETCH_MAX_WAIT_MS = 100

_original = AIOKafkaConsumerThread._create_worker_consumer


def _create_worker_consumer(self: AIOKafkaConsumerThread, transport: Any) -> aiokafka.AIOKafkaConsumer:
    consumer = _original(self, transport)
    # Read when the consumer starts its fetcher (aiokafka 0.x), so setting it before the start is enough.
    consumer._fetch_max_wait_ms = FETCH_MAX_WAIT_MS
    return consumer


def shorten_fetch_wait() -> None:
    """Make every worker consumer Faust creates from now on long-poll FETCH_MAX_WAIT_MS at most (idempotent)."""
    AIOKafkaConsumerThread._create_worker_consumer = _create_worker_consumer  # type: ignore[method-assign]
