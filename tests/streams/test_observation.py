"""The observation points without Kafka: what the pipeline, the polled gauges and the watcher report."""

from __future__ import annotations

import asyncio
import hashlib
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import uuid4
from zoneinfo import ZoneInfo

import pytest
from aiokafka.errors import KafkaConnectionError

from processors.models import ControlCommand, RawFile
from sinks.ledger import Ledger
from sinks.metrics import Metrics, WatcherMetrics
from sinks.state import StateStore
from streams.gauges import refresh_state_gauges
from streams.pipeline import Pipeline
from streams.settings import KafkaSettings, Settings
from streams.watcher import Watcher
from tests.clocks import ManualClock
from tests.streams.pipeline_support import ingest

SH = ZoneInfo("Asia/Shanghai")
NOW = datetime(2026, 9, 27, 22, 30, tzinfo=SH)  # ten minutes after the 22:20 close, five after its grace


def _settings(tmp_path: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "root": tmp_path / "root",
        "state_dir": tmp_path / "state",
        "out_dir": tmp_path / "out",
        "kafka": KafkaSettings(bootstrap="127.0.0.1:9"),
        "quiet_seconds": 0.0,
    }
    values.update(overrides)
    return Settings(**values)


def _raw(path: str, text: str, mtime: float) -> RawFile:
    data = text.encode()
    return RawFile(
        path=path, content=data, size=len(data), mtime=mtime, sha256=hashlib.sha256(data).hexdigest()
    )


def value(m: Metrics | WatcherMetrics, name: str, **labels: str) -> float | None:
    return m.registry.get_sample_value(name, labels)


@pytest.fixture
def pipeline(tmp_path: Path) -> Pipeline:
    s = _settings(tmp_path)
    return Pipeline(s, StateStore(s.state_file), Metrics(), clock=ManualClock(NOW))


def test_storing_a_note_observes_end_to_end_lag_and_the_duckdb_write(pipeline: Pipeline) -> None:
    m = pipeline.metrics
    mtime = NOW.timestamp() - 42.0
    ingest(pipeline, _raw("inbox/jay/2026-09-27-1000-a.md", "# vLLM 推理\nKV cache serving", mtime))
    assert value(m, "predigest_end_to_end_lag_seconds_count") == 1
    assert value(m, "predigest_end_to_end_lag_seconds_sum") == pytest.approx(42.0)
    assert value(m, "predigest_end_to_end_lag_seconds_bucket", le="30.0") == 0
    assert value(m, "predigest_end_to_end_lag_seconds_bucket", le="60.0") == 1
    assert value(m, "predigest_duckdb_write_duration_seconds_count", operation="batch") == 1
    # A replayed record writes no row, so it is no new end-to-end observation.
    ingest(pipeline, _raw("inbox/jay/2026-09-27-1000-a.md", "# vLLM 推理\nKV cache serving", mtime))
    assert value(m, "predigest_end_to_end_lag_seconds_count") == 1


async def test_a_briefing_counts_exact_duplicates_and_times_the_emission_write(pipeline: Pipeline) -> None:
    m = pipeline.metrics
    text = "# vLLM 推理\nKV cache serving arXiv:2609.23130\n"
    for path in ("inbox/jay/2026-09-27-1000-a.md", "inbox/tom/2026-09-27-1100-b.md"):
        ingest(pipeline, _raw(path, text, NOW.timestamp()))
    end = datetime(2026, 9, 27, 22, 20, tzinfo=SH)
    command = ControlCommand(
        axis="inference", trigger="close", end=end, requested_at=NOW, request_id=uuid4().hex
    )
    assert await pipeline.brief(command) is not None
    assert value(m, "predigest_duplicates_total", axis="inference", kind="exact") == 1
    assert value(m, "predigest_briefings_emitted_total", axis="inference", trigger="close") == 1
    assert value(m, "predigest_duckdb_write_duration_seconds_count", operation="emission") == 1


async def test_a_briefing_observes_its_duration_from_the_request_once(pipeline: Pipeline) -> None:
    m = pipeline.metrics
    ingest(pipeline, _raw("inbox/jay/2026-09-27-1000-a.md", "# vLLM 推理\nKV cache serving", NOW.timestamp()))
    end = datetime(2026, 9, 27, 22, 20, tzinfo=SH)
    requested = NOW - timedelta(seconds=3)  # queued behind other work for 3 s before the worker took it
    command = ControlCommand(
        axis="inference", trigger="flush", end=end, requested_at=requested, request_id="r"
    )
    emission = await pipeline.brief(command)
    assert emission is not None
    labels = {"axis": "inference", "trigger": "flush"}
    assert not value(m, "predigest_briefing_duration_seconds_count", **labels)  # recorded, no file yet
    pipeline.write_files(emission)  # what the outbox does next: the files are the end of the briefing
    assert value(m, "predigest_briefing_duration_seconds_count", **labels) == 1
    assert value(m, "predigest_briefing_duration_seconds_sum", **labels) == pytest.approx(3.0)
    again = await pipeline.brief(command)  # "already emitted": nothing was briefed, nothing is timed
    assert again is not None
    pipeline.write_files(again)
    assert value(m, "predigest_briefing_duration_seconds_count", **labels) == 1


async def test_polled_gauges_follow_the_clock_and_come_back_from_state(pipeline: Pipeline) -> None:
    s, state, m = pipeline.settings, pipeline.state, pipeline.metrics
    ingest(pipeline, _raw("inbox/jay/2026-09-27-1000-a.md", "# vLLM 推理\nKV cache", 0.0))
    refresh_state_gauges(s, state, m, NOW)
    # Every axis weighs every note: the note is in each axis's window, whatever its keywords.
    assert value(m, "predigest_window_documents", axis="inference") == 1
    assert value(m, "predigest_window_documents", axis="risk") == 1
    # The 22:20 close is due once its five-minute grace has passed; never closed yet: 0, so the alert sees it.
    assert (
        value(m, "predigest_close_due_timestamp_seconds")
        == datetime(2026, 9, 27, 22, 20, tzinfo=SH).timestamp()
    )
    assert value(m, "predigest_last_close_window_end_timestamp_seconds", axis="inference") == 0
    # Within the grace the previous day's close is the due one.
    refresh_state_gauges(s, state, m, datetime(2026, 9, 27, 22, 23, tzinfo=SH))
    assert (
        value(m, "predigest_close_due_timestamp_seconds")
        == datetime(2026, 9, 26, 22, 20, tzinfo=SH).timestamp()
    )

    end = datetime(2026, 9, 27, 22, 20, tzinfo=SH)
    await pipeline.brief(
        ControlCommand(axis="inference", trigger="close", end=end, requested_at=NOW, request_id="r")
    )
    fresh = Metrics()  # a restarted worker: the gauges come back from the state file
    refresh_state_gauges(s, state, fresh, NOW + timedelta(days=1, hours=1))
    assert (
        value(fresh, "predigest_last_close_window_end_timestamp_seconds", axis="inference") == end.timestamp()
    )
    # The emission is recorded at the pipeline's (injected) clock.
    assert value(fresh, "predigest_last_briefing_timestamp_seconds", axis="inference") == NOW.timestamp()
    assert value(fresh, "predigest_window_documents", axis="inference") == 0  # a day later: out of the window


def test_without_scheduled_closes_no_close_is_ever_due(tmp_path: Path) -> None:
    s = _settings(tmp_path, close_enabled=False)
    m = Metrics()
    refresh_state_gauges(s, StateStore(s.state_file), m, NOW)
    assert value(m, "predigest_close_due_timestamp_seconds") == 0


class FlakyProducer:
    """Refuses while `down`; records what it sent otherwise."""

    def __init__(self) -> None:
        self.down = True
        self.sent: list[bytes] = []
        self.client = self

    async def send(self, topic: str, key: bytes, value: bytes) -> asyncio.Future[None]:
        if self.down:
            raise KafkaConnectionError("broker down")
        self.sent.append(key)
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        fut.set_result(None)
        return fut

    async def fetch_all_metadata(self) -> None:
        if self.down:
            raise KafkaConnectionError("broker down")


async def test_the_watcher_keeps_a_file_pending_while_kafka_is_down(tmp_path: Path) -> None:
    s = _settings(tmp_path)
    rel = "inbox/jay/2026-09-27-1000-a.md"
    (s.root / "inbox" / "jay").mkdir(parents=True)
    (s.root / rel).write_text("# a\nvLLM\n", encoding="utf-8")
    producer, m = FlakyProducer(), WatcherMetrics()
    ledger = Ledger(s.ledger_file)
    watcher = Watcher(s, producer, ledger, m)
    watcher.mark(rel)
    assert await watcher.settle(force=True) == 0
    assert value(m, "predigest_kafka_up") == 0
    assert await watcher.probe() is False
    assert ledger.get(rel) is None
    ready, body = watcher.readiness()  # its /readyz names what is wrong: Kafka, and no start-up scan yet
    assert not ready and body["not_ready"] == ["kafka", "startup_scan"]
    assert value(m, "predigest_ready") == 0

    producer.down = False
    assert await watcher.probe() is True
    assert value(m, "predigest_kafka_up") == 1
    watcher.scanned = True
    assert watcher.readiness()[0] and value(m, "predigest_ready") == 1
    assert await watcher.settle(force=True) == 1  # the same path, still pending, goes out now
    assert producer.sent == [rel.encode()]
    assert value(m, "predigest_documents_published_total", kind="inbox", writer="jay") == 1
    assert value(m, "predigest_watcher_lag_seconds_count") == 1
    ledger.close()
