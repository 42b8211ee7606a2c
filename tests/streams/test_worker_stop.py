"""The last step of a worker's stop (`Services.stop`, once its agents, timers and views stopped): the state
checkpointed and closed with one log line, a second stop harmless, a checkpoint the disk refuses one CRITICAL line
and exit 75, its rows kept in the WAL for the next start."""

from __future__ import annotations

import asyncio
import logging
import resource
import signal
from pathlib import Path

import duckdb
import pytest

from sinks.errors import StateMemoryError
from sinks.state import StateStore
from streams import state_sync
from tests.clocks import ManualClock
from tests.state_support import parsed, put_document
from tests.streams.agent_support import InProcessWorker, Start, StepFailed, in_process_settings

TEXT = "# KV cache\n\nvLLM serving: arXiv:2609.23130 cache hit 92.2% on a long context benchmark.\n"


def _stored(tmp_path: Path, start: Start, notes: int) -> InProcessWorker:
    worker = start(in_process_settings(tmp_path), ManualClock())
    state = worker.services.pipeline().state
    for i in range(notes):
        put_document(
            state, "inference", parsed(f"inbox/jay/2026-09-27-0900-{i}.md", TEXT + str(i)), raw_offset=i
        )
    return worker


def _wal(worker: InProcessWorker) -> Path:
    path = worker.settings.state_file
    return path.with_name(path.name + ".wal")


def _documents(worker: InProcessWorker) -> int:
    state = StateStore(worker.settings.state_file)
    try:
        return int(state.axis_summary("inference")["documents"])
    finally:
        state.close()


async def test_a_stop_checkpoints_and_closes_the_state_once(
    tmp_path: Path, start: Start, caplog: pytest.LogCaptureFixture
) -> None:
    worker = _stored(tmp_path, start, 20)
    assert _wal(worker).exists()
    with caplog.at_level(logging.INFO, logger="streams.services"):
        await worker.services.stop()
        await worker.services.stop()  # a second stop: nothing more, nothing raised
    closed = [r.getMessage() for r in caplog.records if "checkpointed and closed" in r.getMessage()]
    assert len(closed) == 1 and str(worker.settings.state_file) in closed[0]
    assert not _wal(worker).exists() and worker.exits == []
    assert _documents(worker) == 20


async def test_a_checkpoint_the_disk_refuses_stops_the_worker_with_75_and_the_wal_keeps_the_rows(
    tmp_path: Path, start: Start, caplog: pytest.LogCaptureFixture
) -> None:
    worker = _stored(tmp_path, start, 20)
    path = worker.settings.state_file
    limit = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails instead of killing the process
    # The files can grow no more: a full disk for DuckDB (EFBIG rather than ENOSPC).
    resource.setrlimit(
        resource.RLIMIT_FSIZE, (min(path.stat().st_size, _wal(worker).stat().st_size), limit[1])
    )
    try:
        with caplog.at_level(logging.INFO, logger="streams.services"), pytest.raises(StepFailed):
            await worker.services.stop()
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, limit)
        signal.signal(signal.SIGXFSZ, previous)
    assert worker.exits == [75]
    lines = [r for r in caplog.records if r.name == "streams.services"]
    assert len(lines) == 1 and lines[0].levelno == logging.CRITICAL
    assert "not checkpointed" in lines[0].getMessage() and f"{path}.wal" in lines[0].getMessage()
    assert _documents(worker) == 20  # replayed from the WAL at the next open


async def test_a_catch_up_that_fails_stops_the_worker_and_its_stop_still_checkpoints(
    tmp_path: Path, start: Start, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    worker = _stored(tmp_path, start, 20)

    async def refused(*args: object, **kwargs: object) -> int:
        raise StateMemoryError("the state cannot write within 64 MiB")

    # Not a broker error: nothing retries it. Left alone its partitions would never be ready, every agent waiting.
    monkeypatch.setattr(state_sync, "replay_briefings", refused)
    worker.services.sync.on_assigned({0}, {0})
    await asyncio.sleep(0.05)
    assert worker.exits == [75]
    failed = [r for r in caplog.records if r.levelno == logging.CRITICAL and "catch-up" in r.getMessage()]
    assert len(failed) == 1 and "64 MiB" in failed[0].getMessage()
    with caplog.at_level(logging.INFO):
        await worker.services.stop()  # the stop that follows awaits the failed task first: said, not raised
    assert not _wal(worker).exists() and worker.exits == [75]
    assert any("checkpointed and closed" in r.getMessage() for r in caplog.records)
    assert _documents(worker) == 20


async def test_a_state_never_opened_before_the_stop_is_not_opened_after_it(
    tmp_path: Path, start: Start
) -> None:
    # A /status snapshot is a task of its own, shielded from its request: the web server's stop does not end it,
    # and its read comes after the close.
    worker = start(in_process_settings(tmp_path), ManualClock())
    await worker.services.stop()
    with pytest.raises(duckdb.ConnectionException):
        worker.services.pipeline()
    assert worker.services.pipeline.opened is None and not worker.settings.state_file.exists()
