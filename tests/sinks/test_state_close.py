"""The state's close at a clean stop: its WAL written into the file, once; a checkpoint the disk refuses says so,
and the rows it could not write wait in the WAL for the next open."""

from __future__ import annotations

import base64
import random
import resource
import signal
from pathlib import Path

import pytest

from sinks.errors import StateLocationError
from sinks.state import Position, StateStore
from tests.state_support import document_record, parsed


def _store(state: StateStore, count: int) -> None:
    """`count` notes of ~4 KB each, committed: in the WAL, no checkpoint yet (DuckDB's comes past 16 MB)."""
    rng, note = random.Random(3), parsed("inbox/jay/2026-09-27-1000-n.md", "# note\nvLLM KV cache.")
    batch = []
    for offset in range(count):
        text = base64.b64encode(rng.randbytes(3_000)).decode()
        doc = note.model_copy(update={"path": f"inbox/jay/n{offset}.md", "text": text, "sections": ()})
        batch.append((document_record("inference", doc, offset), Position("p.documents", 0, offset)))
    assert all(state.apply_batch(batch))


def _wal(path: Path) -> Path:
    return path.with_name(path.name + ".wal")


def test_a_checkpointed_close_leaves_no_wal_and_a_second_close_does_nothing(tmp_path: Path) -> None:
    path = tmp_path / "worker.duckdb"
    state = StateStore(path)
    _store(state, 200)
    reader = state.reader()  # a read's cursor still open at the stop (a /status in flight)
    assert _wal(path).stat().st_size > 0
    state.close(checkpoint=True)
    assert not _wal(path).exists()
    state.close(checkpoint=True)  # harmless: already closed
    state.close()
    reader.close()
    again = StateStore(path)
    try:
        assert again.axis_summary("inference")["documents"] == 200
    finally:
        again.close()


def test_a_checkpoint_the_disk_refuses_raises_after_the_close_and_the_wal_keeps_the_rows(
    tmp_path: Path,
) -> None:
    path = tmp_path / "worker.duckdb"
    state = StateStore(path)
    _store(state, 200)
    limit = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails instead of killing the process
    # The files can grow no more: a full disk for DuckDB (EFBIG rather than ENOSPC).
    resource.setrlimit(resource.RLIMIT_FSIZE, (min(path.stat().st_size, _wal(path).stat().st_size), limit[1]))
    try:
        with pytest.raises(
            StateLocationError, match=r"cannot checkpoint the state file .*Free space on its disk"
        ):
            state.close(checkpoint=True)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, limit)
        signal.signal(signal.SIGXFSZ, previous)
    state.close(checkpoint=True)  # closed already: nothing raised again
    assert _wal(path).stat().st_size > 0
    again = StateStore(path)
    try:
        assert again.axis_summary("inference")["documents"] == 200  # replayed from the WAL
    finally:
        again.close()
