"""The watcher's producer onto `predigest.raw`: renews itself after a failed send and keeps `predigest_kafka_up`
true to life."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaConnectionError, KafkaError

from processors.models import RawFile
from processors.raw_record import raw_record
from sinks.clock import epoch_seconds
from sinks.metrics import WatcherMetrics

log = logging.getLogger(__name__)

PROBE_TIMEOUT_SECONDS = 10.0
RENEW_INTERVAL_SECONDS = 1.0


class RawProducer:
    """Sends raw files keyed by path; after a failed send the next one goes through a fresh producer."""

    def __init__(
        self,
        producer: AIOKafkaProducer,
        topic: str,
        metrics: WatcherMetrics,
        clock: Callable[[], float] = epoch_seconds,
        renew: Callable[[], Awaitable[AIOKafkaProducer]] | None = None,
    ) -> None:
        self.producer = producer
        self._topic = topic
        self._metrics = metrics
        self._clock = clock
        self._renew = renew
        self._stale = False  # a send failed: the producer's idempotence sequence is suspect
        self._last_renew = 0.0
        self.up = True  # the last send, acknowledgement or probe reached Kafka (the watcher's /readyz)

    async def send(self, raw: RawFile) -> asyncio.Future[Any]:
        """Hand the record to the producer; the future resolves once Kafka acknowledges it (see `delivered`)."""
        try:
            if self._stale:
                await self._renew_producer()
            fut: asyncio.Future[Any] = await self.producer.send(
                self._topic, key=raw.path.encode(), value=raw_record(raw)
            )
        except KafkaError:
            self.failed()
            raise
        return fut

    def delivered(self) -> None:
        self._kafka(True)

    def _kafka(self, up: bool) -> None:
        self.up = up
        self._metrics.kafka_up.set(1 if up else 0)

    def failed(self) -> None:
        """A send or its acknowledgement failed: Kafka counts as down, and the next send renews the producer."""
        self._kafka(False)
        self._stale = self._renew is not None

    async def _renew_producer(self) -> None:
        """A fresh producer id after a failed send: aiokafka keeps counting sequence numbers past a batch that
        expired, and the broker then refuses every later one (OutOfOrderSequenceNumber) until a restart."""
        assert self._renew is not None
        if self._clock() - self._last_renew < RENEW_INTERVAL_SECONDS:
            raise KafkaConnectionError("waiting before the next attempt to reconnect")
        self._last_renew = self._clock()
        fresh = await self._renew()  # raises while the broker is still away; the old one stays for the probe
        old, self.producer = self.producer, fresh
        self._stale = False
        log.info("a new Kafka producer replaces the one whose send failed")
        with contextlib.suppress(Exception):
            await asyncio.wait_for(old.stop(), PROBE_TIMEOUT_SECONDS)

    async def probe(self) -> bool:
        """A metadata round trip, so that `predigest_kafka_up` stays true to life while nothing is sent."""
        try:
            await asyncio.wait_for(self.producer.client.fetch_all_metadata(), PROBE_TIMEOUT_SECONDS)
        except (KafkaError, TimeoutError, OSError) as exc:
            log.warning("Kafka unreachable: %s", exc)
            self._kafka(False)
            return False
        self._kafka(True)
        return True

    async def stop(self) -> None:
        await self.producer.stop()
