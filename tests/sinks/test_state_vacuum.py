"""The state's occasional vacuum: small checkpoints (restarts) leave row groups and blocks of their own; a checkpoint
with DuckDB's vacuum on merges them, on the writes' path, keeping every row."""

from __future__ import annotations

import base64
import contextlib
import random
import threading
import time
from pathlib import Path

import duckdb
import pytest

from processors.wire import DocumentRecord
from sinks.duck import Limits
from sinks.errors import StateMemoryError
from sinks.metrics import Metrics
from sinks.state import Position, StateStore
from tests.state_support import document_record, parsed

ROOMY = Limits(memory_mib=256, threads=1, ceiling_mib=512)
# For the tests whose states are large by design (2.2-4.6 s of CPU): a loaded 2-core machine (load 15, several test
# runs at once) stretched them to 20-67 s: two failed at the 30 s timeout, DuckDB saying "Query interrupted".
LARGE = pytest.mark.timeout(120)


def _batch(
    first: int, notes: int = 5, size: int = 3_000, in_summary: bool = False
) -> list[tuple[DocumentRecord, Position]]:
    """`notes` new notes of `size` random bytes (nothing compresses them), one batch; `in_summary`: in the
    summary's front matter too (DuckDB unpacks the summaries a vector at a time, the bodies are frames)."""
    note = parsed("inbox/jay/2026-09-27-1000-n.md", "# note\nvLLM KV cache serving.")
    rng = random.Random(first)
    batch = []
    for offset in range(first, first + notes):
        text = base64.b64encode(rng.randbytes(size)).decode()
        update = {"path": f"inbox/jay/n{offset}.md", "text": text, "sections": ()}
        doc = note.model_copy(update=update | ({"front_matter": {"x": text}} if in_summary else {}))
        batch.append((document_record("inference", doc, offset), Position("p.documents", 0, offset)))
    return batch


def _restart(path: Path, first: int, notes: int = 5, size: int = 3_000) -> StateStore:
    """A worker started, given one batch of notes (checkpointed, as at its stop) and left open."""
    state = StateStore(path, ROOMY)
    assert all(state.apply_batch(_batch(first, notes, size)))
    state._db.execute("CHECKPOINT")
    return state


def _restarts(path: Path, count: int, *, vacuum_every: int = 0, notes: int = 5, size: int = 3_000) -> None:
    for n in range(count):
        state = _restart(path, n * notes, notes, size)
        if vacuum_every and (n + 1) % vacuum_every == 0:
            assert state.vacuum() is not None
        state.close()


def _used_blocks(state: StateStore) -> int:
    row = state._db.execute("SELECT used_blocks FROM pragma_database_size()").fetchone()
    assert row is not None
    return int(row[0])


def _rows(state: StateStore) -> list[tuple[object, ...]]:
    return state._db.execute(
        "SELECT d.path, d.sha256, md5(c.body_zst) FROM documents d JOIN contents c USING (path, sha256) ORDER BY 1"
    ).fetchall()


def _read_rows(path: Path) -> list[tuple[object, ...]]:
    state = StateStore(path, ROOMY)
    try:
        return _rows(state)
    finally:
        state.close()


def test_a_vacuum_merges_the_row_groups_of_small_checkpoints_and_keeps_every_row(tmp_path: Path) -> None:
    path = tmp_path / "worker.duckdb"
    _restarts(path, 24)
    state = StateStore(path, ROOMY)
    try:
        rows, blocks = _rows(state), _used_blocks(state)
        assert state.excess_row_groups() >= 20, "each restart's checkpoint left a row group per table"
        done = state.vacuum()
        assert done is not None and done.before >= 20 and done.after == 0
        assert _used_blocks(state) < blocks / 3, "the merged row groups fit in a few blocks"
        assert _rows(state) == rows and state.document_count() == 120
        assert all(state.apply_batch(_batch(120)))
        state._db.execute("CHECKPOINT")
        assert state.excess_row_groups() == 1, "the next checkpoint has the vacuum off again"
        rows = _rows(state)
    finally:
        state.close()
    reopened = StateStore(path, ROOMY)
    try:
        assert _rows(reopened) == rows
    finally:
        reopened.close()


@LARGE
def test_a_vacuum_now_and_then_keeps_a_restarted_state_from_growing_a_block_a_restart(tmp_path: Path) -> None:
    """Without it, 60 restarts of 5 notes made a 66 MB file (7 MB with the vacuum at every checkpoint)."""
    _restarts(tmp_path / "never.duckdb", 24)
    _restarts(tmp_path / "vacuumed.duckdb", 24, vacuum_every=8)
    never = (tmp_path / "never.duckdb").stat().st_size
    vacuumed = (tmp_path / "vacuumed.duckdb").stat().st_size
    assert vacuumed < never / 2, (vacuumed, never)


@LARGE
def test_a_vacuum_past_the_memory_limit_reopens_with_more_and_loses_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Merging every small row group at once holds more than a checkpoint of a few notes: like a write's
    checkpoint, the state reopens with twice the memory and the vacuum runs again."""
    path = tmp_path / "worker.duckdb"
    _restarts(path, 12, notes=40, size=60_000)  # ~38 MB of text nothing compresses
    rows = _read_rows(path)
    metrics = Metrics()
    state = StateStore(path, Limits(memory_mib=16, threads=1, ceiling_mib=512), metrics)
    try:
        done = state.vacuum()
        assert done is not None and done.after == 0
    finally:
        state.close()
    assert "Raise duckdb.memory_limit_mib to at least" in caplog.text
    assert (metrics.registry.get_sample_value("predigest_state_memory_retries_total") or 0) >= 1
    assert _read_rows(path) == rows


def test_a_vacuum_at_the_memory_ceiling_is_not_run(tmp_path: Path) -> None:
    """With no room to retry a pinch it would end in the state refusing every write: it waits instead."""
    path = tmp_path / "worker.duckdb"
    _restarts(path, 10)
    state = StateStore(path, Limits(memory_mib=256, threads=1, ceiling_mib=256))
    try:
        before = state.excess_row_groups()
        assert state.vacuum() is None
        assert state.excess_row_groups() == before >= 8
        assert state.document_count() == 50
    finally:
        state.close()


def _fill(path: Path, limits: Limits, notes: int, size: int) -> None:
    """`notes` notes of `size` random bytes (base64: 4/3 of it) stored 100 a checkpoint, as behind a backfill."""
    state = StateStore(path, limits)
    for first in range(0, notes, 100):
        assert all(state.apply_batch(_batch(first, min(100, notes - first), size, in_summary=True)))
        state._db.execute("CHECKPOINT")
    state.close()


@LARGE
def test_notes_too_large_to_read_merged_within_the_limit_are_not_vacuumed(tmp_path: Path) -> None:
    """Merged, 2 048 notes of 80 KB are read at once (256 MiB): the state's check at the next start would
    fail within the default 192 MiB, where the small row groups read fine (review rev23)."""
    limits = Limits(memory_mib=192, threads=1, ceiling_mib=512)
    large, small = tmp_path / "large.duckdb", tmp_path / "small.duckdb"
    _fill(large, limits, 2_100, 60_000)
    _fill(small, limits, 300, 3_000)
    state = StateStore(large, limits)  # its start-up check passes, a few MB at a time
    assert not state.vacuum_fits()
    assert state.vacuum() is not None  # what the guard keeps QuietVacuum from running:
    state.close()
    with pytest.raises(StateMemoryError):
        StateStore(large, limits)
    small_state = StateStore(small, limits)
    assert small_state.vacuum_fits()
    small_state.close()


def test_a_vacuum_while_another_cursor_reads_merges_nothing_then_runs_once_the_read_ended(
    tmp_path: Path,
) -> None:
    """/status and the state's periodic check read on cursors of their own, outside the briefing lock: DuckDB
    refuses a checkpoint then; the vacuum is put off, not a failure (review rev23)."""
    state = StateStore(tmp_path / "worker.duckdb", ROOMY)
    for first in range(0, 60, 5):
        assert all(state.apply_batch(_batch(first)))
        state._db.execute("CHECKPOINT")
    fragmented = state.excess_row_groups()
    reader = state.reader()

    def read() -> None:
        with contextlib.suppress(duckdb.Error):  # interrupted below
            reader._db.execute("SELECT sum(i * i) FROM range(1000000000000) t(i)").fetchall()

    busy = threading.Thread(target=read)
    busy.start()
    time.sleep(0.2)
    try:
        done = state.vacuum()
    finally:
        reader._db.interrupt()
        busy.join()
    assert done is not None and done.after == done.before == fragmented
    again = state.vacuum()
    assert again is not None and again.after < fragmented
    state.close()
