"""A replay applies what it fetched one fetch at a time: a documents backlog is stored in batches of about a
megabyte of records, not in one of everything a 24 MiB fetch held (a worker's memory while it catches up)."""

from __future__ import annotations

import hashlib
import random
import string
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from aiokafka import AIOKafkaProducer

from processors.fan_out import route_read
from processors.models import RawFile
from processors.wire import encode_events
from sinks.metrics import Metrics
from sinks.state import StateStore
from streams import kafka_io
from streams.pipeline import Pipeline
from streams.replay import replay_documents
from streams.settings import DEFAULT_AXES, Settings
from tests.clocks import ManualClock

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

SH = ZoneInfo("Asia/Shanghai")
NOW = datetime(2026, 9, 27, 12, 0, tzinfo=UTC)
NOTES = 40
NOTE_BYTES = 200_000  # of random letters: ~120 KB each once zstd compressed them on the topic


def _record(i: int, rng: random.Random) -> tuple[bytes, bytes]:
    """One note of every axis as its documents record (v4: one per note)."""
    words = " ".join("".join(rng.choices(string.ascii_lowercase, k=9)) for _ in range(NOTE_BYTES // 10))
    data = f"# vLLM 推理 KV cache GPU cluster security agent {i}\n\n{words}\n".encode()
    raw = RawFile(
        path=f"inbox/jay/2026-09-27-10{i:02d}-big.md",
        content=data,
        size=len(data),
        mtime=0.0,
        sha256=hashlib.sha256(data).hexdigest(),
    )
    events = route_read(raw, DEFAULT_AXES, zone=SH, max_bytes=1 << 20, seen_at=NOW, raw_offset=i)[0]
    ((key, value),) = encode_events(events, {})
    return key, value


async def test_a_backlog_is_replayed_a_fetch_at_a_time(
    make_settings: Callable[..., Settings], monkeypatch: pytest.MonkeyPatch
) -> None:
    s = make_settings()
    await kafka_io.ensure_topics(s)
    rng = random.Random(7)
    records = [_record(i, rng) for i in range(NOTES)]
    producer = AIOKafkaProducer(
        **kafka_io.client_kwargs(s), compression_type="zstd", max_request_size=1 << 24
    )
    await kafka_io.start_client(s, producer)
    try:
        for key, value in records:
            await producer.send_and_wait(s.kafka.topic("documents"), value, key=key, partition=0)
    finally:
        await producer.stop()

    pipeline = Pipeline(s, StateStore(s.state_file), Metrics(), clock=ManualClock(NOW))
    store = pipeline.store_batch
    batches: list[int] = []

    def counted(items: Sequence[Any], **kwargs: Any) -> Any:
        if items:
            batches.append(len({position.offset for _, position in items}))
        return store(items, **kwargs)

    monkeypatch.setattr(pipeline, "store_batch", counted)
    try:
        assert await replay_documents(s, pipeline, [0]) == NOTES
        assert pipeline.state.document_count() == NOTES * len(DEFAULT_AXES)
    finally:
        pipeline.state.close()
    # ~8 MB of records, ~5 MB on the topic: fetched (and so stored) a megabyte or so at a time, not at once.
    assert sum(batches) == NOTES
    assert max(batches) <= NOTES // 4, batches
