"""A rebuild replays whatever the documents topic retains: v2 records (one per axis), v3 (one per note), v4
(one per note, its source facts carried), v5 (a batch's notes, a note that does not read skipped alone) and v6
(v5 compressed by the parse processes)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
from aiokafka import AIOKafkaProducer

from processors.fan_out import DocumentEvent, route_read
from processors.models import RawFile
from processors.wire import encode_events
from processors.wire_frames import pack_notes
from sinks.metrics import Metrics
from sinks.state import StateStore
from streams import kafka_io
from streams.pipeline import Pipeline
from streams.replay import replay_documents
from streams.settings import DEFAULT_AXES, Settings
from tests.clocks import ManualClock
from tests.processors.wire_v2 import encode_v2
from tests.processors.wire_v3 import encode_v3
from tests.processors.wire_v5 import pack_records

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

SH = ZoneInfo("Asia/Shanghai")
NOW = datetime(2026, 9, 27, 12, 0, tzinfo=UTC)
EVERY_AXIS = "vLLM 推理 KV cache GPU cluster security agent"


def _events(path: str, text: str, raw_offset: int) -> list[DocumentEvent]:
    data = text.encode()
    raw = RawFile(path=path, content=data, size=len(data), mtime=0.0, sha256=hashlib.sha256(data).hexdigest())
    return route_read(raw, DEFAULT_AXES, zone=SH, max_bytes=1 << 20, seen_at=NOW, raw_offset=raw_offset)[0]


async def test_a_rebuild_applies_old_and_new_records_alike_and_a_second_replay_changes_nothing(
    make_settings: Callable[..., Settings],
) -> None:
    s = make_settings()
    await kafka_io.ensure_topics(s)
    old = _events("inbox/jay/2026-09-27-0900-old.md", f"# {EVERY_AXIS}\n\nwritten by 0.3\n", 0)
    mid = _events("inbox/jay/2026-09-27-0930-mid.md", f"# {EVERY_AXIS}\n\nwritten by 0.4\n", 1)
    new = _events("inbox/jay/2026-09-27-1000-new.md", f"# {EVERY_AXIS}\n\nwritten by 0.5\n", 2)
    assert len(old) == len(mid) == len(new) == len(DEFAULT_AXES)
    v4 = encode_events(new, {})
    (key, bad), *_ = encode_events(_events("inbox/jay/2026-09-27-1015-bad.md", f"# {EVERY_AXIS}\n", 3), {})
    batch = [
        _events(f"inbox/jay/2026-09-27-10{m}-v5.md", f"# {EVERY_AXIS}\n\n0.6 ({m})\n", 4) for m in (30, 45)
    ]
    v5 = pack_records(
        [
            *encode_events(batch[0], {}),
            (key, bad.replace(b'"axes":[', b'"axes":{', 1)),
            *encode_events(batch[1], {}),
        ],
        {},
        1 << 20,
    )
    late = [
        _events(f"inbox/jay/2026-09-27-11{m}-v6.md", f"# {EVERY_AXIS}\n\n0.7 ({m})\n", 5)
        for m in ("00", "15")
    ]
    v6 = pack_notes([record for events in late for record in encode_events(events, {})], {}, 1 << 20)
    # Each record twice: a producer retry can put a record on the topic again at a later offset.
    records = [*encode_v2(old), *encode_v3(mid, {}), *v4, *v4, *v5, *v5, *v6, *v6]
    producer = AIOKafkaProducer(**kafka_io.client_kwargs(s))
    await kafka_io.start_client(s, producer)
    try:
        for key, value in records:
            await producer.send_and_wait(s.kafka.topic("documents"), value, key=key)
    finally:
        await producer.stop()

    pipeline = Pipeline(s, StateStore(s.state_file), Metrics(), clock=ManualClock(NOW))
    try:
        assert await replay_documents(s, pipeline, [0]) == len(records)
        for axis in DEFAULT_AXES:
            assert pipeline.state.document_count(axis.name) == 7, axis.name
        assert pipeline.state.applied_offset(s.kafka.topic("documents"), 0) == len(records) - 1
        assert await replay_documents(s, pipeline, [0]) == 0
        assert pipeline.state.document_count() == 7 * len(DEFAULT_AXES)
    finally:
        pipeline.state.close()
