"""SIGKILL the watcher in the middle of a burst of 500 files from three writers: every file ends up stored once."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from streams import kafka_io
from streams.oneshot import wait_ingested
from streams.settings import Settings
from streams.worker_process import stop_process
from tests.streams.fault_support import (
    assert_each_path_stored_once,
    metric,
    printed_logs_on_failure,
    sigkill,
    spawn_watcher,
    start_burst,
    state_rows,
    watcher_metrics,
)
from tests.support import async_wait_for, read_topic, running_worker, until_raw_has

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

PER_WRITER = 167  # 501 files


async def test_a_watcher_killed_mid_burst_and_restarted_loses_and_doubles_nothing(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    s = make_settings(metrics_interval_seconds=1.0)
    await kafka_io.ensure_topics(s)
    published = watcher_metrics(s)
    with (
        running_worker(s, tmp_path),
        printed_logs_on_failure(tmp_path / "watcher-1.log", tmp_path / "watcher-2.log"),
    ):
        first = spawn_watcher(s, tmp_path, "watcher-1")
        try:
            await async_wait_for(
                lambda: metric(published, "predigest_kafka_up") == 1, 30, "the first watcher"
            )
            burst = start_burst(s.root, PER_WRITER, pause=0.01)
            await async_wait_for(
                lambda: (metric(published, "predigest_documents_published_total") or 0) >= 100,
                60,
                "a hundred files published",
            )
            sigkill(first)
        finally:
            stop_process(first)
        killed_at = len(await read_topic(s, "raw"))
        assert killed_at < len(burst.paths), "the burst was over before the kill; nothing was tested"
        second = spawn_watcher(s, tmp_path, "watcher-2")  # same root, same ledger file
        try:
            burst.join()
            paths = burst.paths
            await until_raw_has(s, paths, 90, "the restarted watcher did not catch up")
            await wait_ingested(s, 90)
        finally:
            stop_process(second)
    raw = [k.decode() for k, _ in await read_topic(s, "raw") if k]
    assert set(raw) == paths  # every file at least once; a file acked but not in the ledger may go twice
    assert_each_path_stored_once(state_rows(s), paths)
