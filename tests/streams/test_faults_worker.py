"""SIGKILL the worker while it consumes: what it committed is stored, and after a restart every file is stored once."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest
from aiokafka.errors import KafkaError

from processors.raw_record import read_raw
from processors.wire import decode_rows
from streams import kafka_io
from streams.oneshot import wait_ingested
from streams.settings import Settings
from streams.watcher import publish_root
from streams.worker_process import spawn_worker
from tests.state_support import to_event
from tests.streams.fault_support import (
    WRITERS,
    Faulted,
    assert_each_path_stored_once,
    committed,
    note_path,
    note_text,
    printed_logs_on_failure,
    sigkill,
    state_rows,
    with_work_left,
)
from tests.support import read_topic, running_worker

# A retry with more notes (with_work_left) takes longer than the first try.
pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

# 3 000 notes to start with: a worker stores ~1 800 a second here, and CI's stored 501 before six commits were seen.
PER_WRITER = 1000


async def _committed_so_far(s: Settings) -> int:
    try:
        return await committed(s, "documents")
    except KafkaError:  # the group has no coordinator yet
        return 0


async def test_a_worker_killed_while_consuming_commits_only_what_it_stored(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    async def attempt(per_writer: int) -> Faulted | None:
        return await _killed_while_consuming(make_settings, tmp_path / f"{per_writer}-a-writer", per_writer)

    faulted = await with_work_left(attempt, PER_WRITER)
    s = faulted.settings
    with running_worker(s, faulted.workdir, name="worker-2"):
        await wait_ingested(s, 120)
    assert_each_path_stored_once(state_rows(s), faulted.paths)


async def _killed_while_consuming(
    make_settings: Callable[..., Settings], workdir: Path, per_writer: int
) -> Faulted | None:
    """A worker SIGKILLed once it committed a few records: what it had committed was stored (None: it had stored
    every note by then)."""
    # A SIGKILLed worker never leaves its group: the restarted one waits out the session timeout. Small
    # batches: many commits to kill the worker between, and still work left when it dies.
    s = make_settings(
        root=workdir / "root", state_dir=workdir / "state", out_dir=workdir / "out", batch_records=10
    )
    s = s.model_copy(update={"kafka": s.kafka.model_copy(update={"session_timeout_seconds": 8.0})})
    await kafka_io.ensure_topics(s)
    paths = set()
    for writer in WRITERS:
        (s.root / "inbox" / writer).mkdir(parents=True, exist_ok=True)
        for i in range(per_writer):
            (s.root / note_path(writer, i)).write_text(note_text(writer, i), encoding="utf-8")
            paths.add(note_path(writer, i))
    assert await publish_root(s, follow=False, stop=asyncio.Event()) == len(paths)

    log = workdir / "worker-1.log"
    with printed_logs_on_failure(log):
        worker = spawn_worker(s, workdir, name="worker-1")
        try:
            # Killed once it has committed a few batches (commits come every 0.5 s or 1000 acks).
            deadline = asyncio.get_running_loop().time() + 90
            # A documents record holds a parse batch's notes (up to batch_records, one partition): ~60 notes.
            while await _committed_so_far(s) < 3:
                assert asyncio.get_running_loop().time() < deadline, "three documents committed: timed out"
                await asyncio.sleep(0.1)
        finally:
            sigkill(worker)

    # The moment of the crash: every record below a committed offset has reached the next stage.
    rows = state_rows(s)
    stored = {(r.axis, r.path, r.sha256) for r in rows}
    if len({r.path for r in rows}) == len(paths):
        return None  # the worker had finished: the kill tested nothing
    records = await read_topic(s, "documents")
    docs = [to_event(row) for _, v in records for row in decode_rows(v)]
    done = await committed(s, "documents")
    assert done > 0
    for event in (to_event(row) for _, v in records[:done] for row in decode_rows(v)):
        assert (event.axis, event.path, event.sha256) in stored, f"{event.path} committed but not stored"
    forwarded = {(e.path, e.sha256) for e in docs}
    raw_done = await committed(s, "raw")
    assert raw_done > 0
    for _, value in (await read_topic(s, "raw"))[:raw_done]:
        raw = read_raw(value)
        assert (raw.path, raw.sha256) in forwarded, f"{raw.path} committed on raw but never forwarded"
    return Faulted(s, paths, workdir)
