"""What `GET /status` answers: per owned axis, the window, its documents and duplicates, the last briefing, lag.

The worker alone opens its DuckDB file (duckdb#17158), so `predigest status` asks the workers over HTTP;
each reports the axes it owns.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from datetime import datetime
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.errors import KafkaError

from processors.window import next_close_fire, window_bounds
from processors.window_set import window_duplicates
from sinks.state import StateStore
from streams import kafka_io
from streams.errors import BrokerUnavailableError
from streams.ownership import Ownership
from streams.settings import Settings

log = logging.getLogger(__name__)

LAG_TIMEOUT_SECONDS = 5.0


async def _end_offsets(settings: Settings, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
    consumer = AIOKafkaConsumer(**kafka_io.client_kwargs(settings))
    await kafka_io.start_client(settings, consumer)
    try:
        ends: dict[TopicPartition, int] = await consumer.end_offsets(tps)
        return ends
    finally:
        await consumer.stop()


async def _lags(
    settings: Settings, state: StateStore, partitions: set[int]
) -> dict[int, dict[str, int]] | None:
    """Per owned partition: documents records the state has not applied, commands the group has not committed."""
    docs, control = settings.kafka.topic("documents"), settings.kafka.topic("control")
    tps = [TopicPartition(docs, p) for p in sorted(partitions)]
    try:
        async with asyncio.timeout(LAG_TIMEOUT_SECONDS):
            ends = await _end_offsets(settings, tps) if tps else {}
            commands = await kafka_io.group_lag(settings, settings.app_id, [control])
    except (KafkaError, BrokerUnavailableError, OSError, TimeoutError) as exc:
        log.warning("status: Kafka unreachable, lag unknown: %s", exc)
        return None
    out: dict[int, dict[str, int]] = {}
    for tp in tps:
        applied = state.applied_offset(docs, tp.partition)
        out[tp.partition] = {
            "documents": max(0, ends[tp] - (applied + 1 if applied is not None else 0)),
            "control": commands.get(TopicPartition(control, tp.partition), 0),
        }
    return out


def _duplicates(settings: Settings, state: StateStore, axis: str, now: datetime) -> dict[str, int]:
    docs = state.window_summaries(axis, window_bounds(now, settings.window_length))
    found = window_duplicates(docs, settings.near_duplicate_threshold)  # what the briefing will say
    kinds = Counter(d.kind for d in found.values())
    return {"exact": kinds["exact"], "near": kinds["near"]}


def _last_briefing(state: StateStore, axis: str) -> dict[str, Any] | None:
    b = state.latest_emission(axis)
    if b is None:
        return None
    return {
        "window_end": b.window.end.isoformat(),
        "trigger": b.trigger,
        "generated_at": b.generated_at.isoformat(),
        "sources": len(b.sources),
        "increments": len(b.increments),
    }


async def worker_status(
    settings: Settings, state: StateStore, ownership: Ownership, now: datetime
) -> dict[str, Any]:
    """The JSON body of `GET /status` (read-only)."""
    window = window_bounds(now, settings.window_length)
    lags = await _lags(settings, state, ownership.owned_partitions)
    # Nothing is awaited from here on: a rebalance cannot slip between the fields of one answer.
    owned = ownership.owned_partitions
    axes = []
    for axis in ownership.owned_axes():
        partition = ownership.partition_of(axis)
        axes.append(
            {
                "axis": axis,
                "partition": partition,
                "ready": ownership.is_ready(partition),
                "window": {"start": window.start.isoformat(), "end": window.end.isoformat()},
                "documents": state.window_document_count(axis, window),
                "duplicates": _duplicates(settings, state, axis, now),
                "stored": state.axis_summary(axis),
                "last_briefing": _last_briefing(state, axis),
                "lag": (lags or {}).get(partition),
            }
        )
    return {
        "worker": f"http://{settings.web_host}:{settings.web_port}",
        "app_id": settings.app_id,
        "partitions": ownership.partitions,
        "owned_partitions": sorted(owned),
        "control_partitions": sorted(ownership.control_partitions),
        "catching_up": sorted(ownership.catching_up()),
        "axis_partitions": ownership.axis_map(),
        "next_close": (
            (
                next_close_fire(now, settings.close_at, settings.tz, settings.grace) - settings.grace
            ).isoformat()
            if settings.close_enabled
            else None
        ),
        "zone": settings.zone,
        "axes": axes,
    }
