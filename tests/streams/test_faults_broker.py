"""Stop the broker during a burst and start it 10 s later: nothing lost, nothing doubled, the outage is reported."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from streams import kafka_io
from streams.kafka_local import start_broker, stop_broker
from streams.oneshot import wait_ingested
from streams.settings import KafkaSettings, Settings
from streams.worker_process import stop_process
from tests.conftest import KAFKA_CACHE
from tests.streams.fault_support import (
    assert_each_path_stored_once,
    metric,
    printed_logs_on_failure,
    spawn_watcher,
    start_burst,
    state_rows,
    watcher_metrics,
)
from tests.support import async_wait_for, running_worker, until_raw_has

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

PER_WRITER = 60
OUTAGE_SECONDS = 10.0


@pytest.fixture
def own_broker(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A broker of this test alone: stopping the session's would break every other test."""
    data = tmp_path / "broker"
    bootstrap = start_broker(KAFKA_CACHE, data)
    try:
        yield bootstrap, data
    finally:
        stop_broker(KAFKA_CACHE, data)


async def test_a_broker_outage_mid_burst_loses_nothing_and_is_reported(
    make_settings: Callable[..., Settings], tmp_path: Path, own_broker: tuple[str, Path]
) -> None:
    bootstrap, data = own_broker
    s = make_settings(metrics_interval_seconds=1.0)
    s = s.model_copy(update={"kafka": KafkaSettings(bootstrap=bootstrap, topic_prefix=s.kafka.topic_prefix)})
    await kafka_io.ensure_topics(s)
    up = watcher_metrics(s)
    logs = (tmp_path / "watcher.log", tmp_path / "worker.log", data / "kafka.log")
    with running_worker(s, tmp_path), printed_logs_on_failure(*logs):
        watcher = spawn_watcher(s, tmp_path)
        try:
            await async_wait_for(lambda: metric(up, "predigest_kafka_up") == 1, 30, "the watcher")
            burst = start_burst(s.root, PER_WRITER, pause=0.1)  # about six seconds of writing
            await async_wait_for(
                lambda: (metric(up, "predigest_documents_published_total") or 0) >= 30, 60, "the first files"
            )
            stopped = time.monotonic()
            await asyncio.to_thread(stop_broker, KAFKA_CACHE, data)
            await async_wait_for(
                lambda: metric(up, "predigest_kafka_up") == 0, 20, "the watcher to see the outage"
            )
            published_during = metric(up, "predigest_documents_published_total")
            await asyncio.sleep(max(0.0, OUTAGE_SECONDS - (time.monotonic() - stopped)))
            assert (
                metric(up, "predigest_documents_published_total") == published_during
            )  # nothing acked meanwhile
            assert (
                await asyncio.to_thread(start_broker, KAFKA_CACHE, data) == bootstrap
            )  # same storage, same port
            await async_wait_for(lambda: metric(up, "predigest_kafka_up") == 1, 60, "the watcher to recover")
            burst.join()
            paths = burst.paths
            await until_raw_has(s, paths, 90, "the watcher did not publish everything")
            await wait_ingested(s, 120)
        finally:
            stop_process(watcher)
    assert (tmp_path / "watcher.log").read_text().count("Kafka unreachable") >= 1
    assert_each_path_stored_once(state_rows(s), paths)
