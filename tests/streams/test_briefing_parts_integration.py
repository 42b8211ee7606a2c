"""On the real broker: a briefing over the 24 MiB message limit is delivered in parts, read back whole by
`flush --wait`'s reader, and restored byte for byte by a rebuild's replay."""

from __future__ import annotations

import random
import string
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import cramjam
import pytest

from processors.briefing_parts import EMISSION, PART, SHA256
from processors.models import Briefing, ControlCommand
from sinks.metrics import Metrics
from sinks.state import StateStore
from streams import kafka_io
from streams.app import faust_app
from streams.control import await_briefing
from streams.emission import Emission
from streams.pipeline import Pipeline
from streams.replay import FETCH_BYTES, replay_briefings
from streams.settings import Settings
from streams.topics import TopicOutputs, Topics
from tests.clocks import ManualClock
from tests.state_support import empty_briefing
from tests.streams.pipeline_support import ingest, raw_file
from tests.support import read_topic

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]  # ~60 MB through the broker, twice

SH = ZoneInfo("Asia/Shanghai")
END = datetime(2026, 9, 27, 22, 20, tzinfo=SH)


async def a_large_briefing(pipeline: Pipeline, over: int) -> Briefing:
    """A real briefing of one note, its source repeated under new paths until its JSON is over `over` bytes."""
    ingest(
        pipeline, raw_file("inbox/jay/2026-09-27-1000-kv.md", "# vLLM 推理\nKV cache 服务 arXiv:2609.23130\n")
    )
    command = ControlCommand(axis="inference", trigger="flush", end=END, requested_at=END, request_id="r")
    emission = await pipeline.brief(command)
    assert emission is not None
    small = emission.briefing
    [source] = small.sources
    n = over // len(source.model_dump_json(by_alias=True)) + 1
    sources = [source.model_copy(update={"path": f"inbox/jay/2026-09-27-{i:06d}-kv.md"}) for i in range(n)]
    return small.model_copy(update={"sources": sources})


async def on_fresh_topics(make_settings: Callable[..., Settings]) -> tuple[Settings, Pipeline]:
    """Settings on topics of their own, made, and a pipeline over a fresh state five minutes after END."""
    s = make_settings()
    await kafka_io.ensure_topics(s)
    return s, Pipeline(s, StateStore(s.state_file), Metrics(), ManualClock(END + timedelta(minutes=5)))


async def sent_then_closed(s: Settings, pipeline: Pipeline, emission: Emission) -> None:
    """The emission's messages sent as the worker sends them; the pipeline's state closed after."""
    app = faust_app(s)
    outputs = TopicOutputs(app, Topics.declare(app, s))
    try:
        await outputs.briefing("inference", pipeline.messages(emission))
    finally:
        await app.producer.stop()
    pipeline.state.close()


async def test_a_briefing_over_the_message_limit_is_delivered_in_parts_and_read_back_whole(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    s, pipeline = await on_fresh_topics(make_settings)
    big = await a_large_briefing(pipeline, over=kafka_io.MAX_MESSAGE_BYTES + (1 << 20))
    briefing_json = big.model_dump_json(by_alias=True).encode()
    emission = Emission("inference", END, "flush", "inference-big", briefing_json, delivered=False)

    await sent_then_closed(s, pipeline, emission)

    messages = await read_topic(s, "briefings")
    assert len(messages) == 2
    assert all(len(value) <= kafka_io.MAX_MESSAGE_BYTES for _, value in messages)
    split = pipeline.metrics.registry.get_sample_value(
        "predigest_briefings_split_total", {"axis": "inference"}
    )
    assert split == 1

    # What `predigest flush --wait` reads: the briefing, whole.
    assert await await_briefing(s, "inference", END, "flush", 60) == big

    # A rebuilt state (a new worker, or a lost state file) holds the same bytes, so its files are the same.
    rebuilt = StateStore(tmp_path / "rebuilt.duckdb")
    try:
        assert await replay_briefings(s, rebuilt) == 1  # one briefing restored, not its two messages
        record = rebuilt.emission_record("inference", END, "flush")
        assert record is not None and record.briefing_json == briefing_json and record.delivered
        assert rebuilt.applied_offset(s.kafka.topic("briefings"), 0) == 1
        assert await replay_briefings(s, rebuilt) == 0  # held already: a later catch-up restores nothing
    finally:
        rebuilt.close()


async def test_waiting_for_a_briefing_skips_what_is_no_briefing(
    make_settings: Callable[..., Settings],
) -> None:
    """`flush --wait` reads the whole topic: a stray message or a series whose first part expired is skipped,
    not the end of the wait."""
    s = make_settings()
    await kafka_io.ensure_topics(s)
    awaited = empty_briefing(END.astimezone(SH))
    orphan = [(PART, b"2/2"), (EMISSION, b"inference-x"), (SHA256, b"0" * 64)]
    producer = kafka_io.make_producer(s)
    await kafka_io.start_client(s, producer)
    try:
        topic = s.kafka.topic("briefings")
        for value, headers in (
            (b"not a briefing", None),
            (b"tail", orphan),
            (awaited.model_dump_json().encode(), None),
        ):
            await producer.send_and_wait(topic, value, key=b"inference", headers=headers)
    finally:
        await producer.stop()
    assert await await_briefing(s, "inference", awaited.window.end, "close", 60) == awaited


async def test_a_briefing_larger_than_the_replays_fetch_on_the_wire_is_restored(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    s, pipeline = await on_fresh_topics(make_settings)
    small = await a_large_briefing(pipeline, over=0)
    [source] = small.sources
    # Paths of random letters: ~6 MB that zstd cannot pack below the replay's 1 MiB fetch (a real 100k briefing's
    # part is ~2.4 MB on the wire). Kafka must still return it whole, or a rebuilt worker would lack it.
    rng = random.Random(5)
    paths = ("".join(rng.choices(string.ascii_letters, k=2_000)) for _ in range(2_000))
    big = small.model_copy(update={"sources": [source.model_copy(update={"path": p}) for p in paths]})
    briefing_json = big.model_dump_json(by_alias=True).encode()
    assert len(cramjam.zstd.compress(briefing_json)) > 2 * FETCH_BYTES
    emission = Emission("inference", END, "flush", "inference-wide", briefing_json, delivered=False)
    await sent_then_closed(s, pipeline, emission)

    rebuilt = StateStore(tmp_path / "rebuilt.duckdb")
    try:
        assert await replay_briefings(s, rebuilt) == 1
        record = rebuilt.emission_record("inference", END, "flush")
        assert record is not None and record.briefing_json == briefing_json
    finally:
        rebuilt.close()
