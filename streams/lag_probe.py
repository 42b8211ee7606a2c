"""The worker group's consumer lag, which doubles as the worker's Kafka reachability: probed at most once per
`max_age` whoever asks (the gauges' timer, `/status`, `/readyz`), and every probe sets the gauges, so that what
`predigest status` shows and what Prometheus scrapes come from the same reading."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from aiokafka import TopicPartition
from aiokafka.errors import KafkaError

from sinks.clock import Clock
from sinks.metrics import Metrics
from streams import kafka_io
from streams.errors import BrokerUnavailableError
from streams.settings import Settings

log = logging.getLogger(__name__)

CONSUMED_STAGES = ("raw", "documents", "control")
LAG_TIMEOUT_SECONDS = 10.0


@dataclass(frozen=True)
class LagReading:
    """One probe: when, whether Kafka answered, and per partition end offset minus the group's committed one."""

    at: datetime
    monotonic: float
    ok: bool
    lag: Mapping[TopicPartition, int] = field(default_factory=dict)
    error: str | None = None

    def of(self, topic: str) -> dict[int, int]:
        """partition → lag of one topic ({} when Kafka did not answer)."""
        return {tp.partition: n for tp, n in sorted(self.lag.items()) if tp.topic == topic}


class LagProbe:
    """Coalesces the callers of one worker: one probe in flight at a time, a fresh reading reused."""

    def __init__(self, settings: Settings, metrics: Metrics, clock: Clock) -> None:
        self._settings = settings
        self._metrics = metrics
        self._clock = clock
        self.last: LagReading | None = None
        self._running: asyncio.Task[LagReading] | None = None

    async def get(self, max_age: float) -> LagReading:
        """The last reading if it is at most `max_age` seconds old, else a new one (shared by concurrent callers)."""
        last = self.last
        if last is not None and self._clock.monotonic() - last.monotonic <= max_age:
            return last
        if self._running is None or self._running.done():
            self._running = asyncio.create_task(self._probe())
        # Shielded: a caller that gives up (a client gone) does not cancel the others' probe.
        return await asyncio.shield(self._running)

    async def recent(self, max_age: float, keep: float) -> LagReading:
        """Like `get`, but a reading up to `keep` seconds old answers at once while a new one is probed in the
        background: what `/readyz` uses, so that a health check is not held up by a Kafka round trip."""
        last = self.last
        if last is None or self._clock.monotonic() - last.monotonic > keep:
            return await self.get(max_age)
        if self._clock.monotonic() - last.monotonic > max_age and (
            self._running is None or self._running.done()
        ):
            self._running = asyncio.create_task(self._probe())
        return last

    async def _probe(self) -> LagReading:
        s = self._settings
        topics = [s.kafka.topic(stage) for stage in CONSUMED_STAGES]
        try:
            lag = await asyncio.wait_for(kafka_io.group_lag(s, s.app_id, topics), LAG_TIMEOUT_SECONDS)
        except (KafkaError, BrokerUnavailableError, TimeoutError, OSError) as exc:
            self._metrics.kafka_up.set(0)
            log.warning("Kafka at %s unreachable while reading consumer lag: %s", s.kafka.bootstrap, exc)
            reading = LagReading(
                self._clock.now(), self._clock.monotonic(), False, error=str(exc) or type(exc).__name__
            )
        else:
            self._metrics.kafka_up.set(1)
            for tp, value in lag.items():
                self._metrics.consumer_lag.labels(topic=tp.topic, partition=str(tp.partition)).set(value)
            reading = LagReading(self._clock.now(), self._clock.monotonic(), True, lag)
        self.last = reading
        return reading
