"""The state's DuckDB limits: applied when it opens, and its buffer memory bounded while the file outgrows it."""

from __future__ import annotations

import base64
import contextlib
import os
import random
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pytest

from processors.window import window_bounds
from sinks import state as state_module
from sinks.duck import Limits
from sinks.emission_bodies import Body
from sinks.errors import StateMemoryError
from sinks.metrics import Metrics
from sinks.state import Position, StateStore
from sinks.state_files import open_state
from tests.processors.notes import brief, example_documents
from tests.state_support import (
    ENDLESS_READ,
    document_record,
    duckdb_limits,
    parsed,
    put_document,
    store_large_notes,
)

MIB = 1024 * 1024
REFUSED = "predigest_state_memory_refused_total"


class _RssSampler:
    """This process's resident memory, sampled every few milliseconds while the state writes and checkpoints."""

    def __init__(self) -> None:
        self.start = self._rss()
        self.peak = self.start
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    @staticmethod
    def _rss() -> int:
        return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    def _run(self) -> None:
        while not self._stop.wait(0.002):
            self.peak = max(self.peak, self._rss())

    def growth(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak - self.start


def _file_bytes(state: StateStore) -> int:
    row = state._db.execute("SELECT block_size * used_blocks FROM pragma_database_size()").fetchone()
    assert row is not None
    return int(row[0])


def test_the_state_opens_within_its_limits(tmp_path: Path) -> None:
    state = StateStore(tmp_path / "worker.duckdb", Limits(memory_mib=96, threads=1))
    try:
        assert duckdb_limits(state) == ("96.0 MiB", 1)
    finally:
        state.close()


def test_without_limits_duckdb_keeps_its_own_defaults(tmp_path: Path) -> None:
    state = StateStore(tmp_path / "worker.duckdb")
    try:
        memory, _ = duckdb_limits(state)
        assert memory != "96.0 MiB"  # DuckDB's 80 % of the machine's RAM
    finally:
        state.close()


@pytest.mark.timeout(120)  # ~50 MB of notes through the real write path
def test_a_state_larger_than_its_memory_limit_is_stored_within_it(tmp_path: Path) -> None:
    """The notes' text outgrows the limit; DuckDB's buffers stay under it, checkpoints included.

    Without a limit a checkpoint holds every block of the row group it rewrites (up to 122 880 rows), so a
    worker's memory grew with what it had stored (docs/performance.md).
    """
    limit = 32
    state = StateStore(tmp_path / "worker.duckdb", Limits(memory_mib=limit, threads=1))
    note = parsed("inbox/jay/2026-09-27-1000-n.md", "# note\nvLLM KV cache.")
    rng = random.Random(14)
    sampler = _RssSampler()
    offset = 0
    try:
        for _ in range(
            12
        ):  # 8 (two checkpoints) stay under 1.2 x the limit since the keys went (sinks/schema.py)
            batch = []
            for _ in range(600):
                # Random text (~10 KB): string compression cannot fold it away.
                text = base64.b64encode(rng.randbytes(7_500)).decode()
                doc = note.model_copy(
                    update={"path": f"inbox/jay/n{offset}.md", "text": text, "sections": ()}
                )
                batch.append((document_record("inference", doc, offset), Position("p.documents", 0, offset)))
                offset += 1
            state.apply_batch(batch)  # ~7 MB of WAL: DuckDB checkpoints past 16 MB, as in the worker
            del batch
        growth = sampler.growth()
        assert _file_bytes(state) > 1.2 * limit * MIB, "the test must store more than the limit"
        # The limit, and room for a batch of records in Python and DuckDB's own allocations (without a
        # limit: ~240 MiB).
        assert growth <= (limit + 80) * MIB, f"grew by {growth / MIB:.0f} MiB"
        assert state.document_count() == offset
    finally:
        sampler.growth()
        state.close()


@pytest.mark.timeout(180)  # ~160 MB of notes through the real write path
@pytest.mark.usefixtures("merging")
def test_a_checkpoint_past_the_limit_is_retried_with_more_memory_and_nothing_is_lost(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A checkpoint pins a vector (up to 2 048 rows) of the notes' text at once: ~1 000 of these are past 64 MiB.
    DuckDB invalidates the database (losing the commit it was writing); the state reopens with more memory,
    checkpoints, writes the batch again, and keeps every note."""
    path = tmp_path / "worker.duckdb"
    metrics = Metrics()
    state = StateStore(path, Limits(memory_mib=64, threads=1, ceiling_mib=512), metrics)
    try:
        stored = store_large_notes(state, until_raised=True)
        assert state.document_count() == stored
        assert state.applied_offset("p.documents", 0) == stored - 1
        assert duckdb_limits(state)[0] in ("128.0 MiB", "256.0 MiB", "512.0 MiB")
    finally:
        state.close()
    assert "Raise duckdb.memory_limit_mib to at least" in caplog.text
    # What an operator's alert sees: the retries happened, and none of them gave up.
    assert (metrics.registry.get_sample_value("predigest_state_memory_retries_total") or 0) >= 1
    assert metrics.registry.get_sample_value(REFUSED, {"operation": "checkpoint"}) == 0
    reopened = StateStore(path, Limits(memory_mib=1024, threads=1))
    try:
        assert reopened.document_count() == stored
    finally:
        reopened.close()


@pytest.mark.timeout(180)
@pytest.mark.usefixtures("merging")
def test_the_memory_raise_stops_at_its_ceiling(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Doubling 64 MiB would pass a 100 MiB ceiling (docker: the container's memory, where the kernel kills the
    worker): the raise takes the ceiling, and past it the state refuses naming the setting."""
    state = StateStore(
        tmp_path / "worker.duckdb", Limits(memory_mib=64, threads=1, ceiling_mib=100), Metrics()
    )
    try:
        with contextlib.suppress(StateMemoryError):  # refused within 100 MiB if the notes need more
            store_large_notes(state, every_seen=False, until_raised=True)
    finally:
        state.close()
    raised = [r.getMessage() for r in caplog.records if "Raise duckdb.memory_limit_mib" in r.getMessage()]
    assert raised and all("with 100 MiB." in message for message in raised), raised


def test_a_raised_memory_limit_returns_to_the_configured_one_after_a_hundred_writes(tmp_path: Path) -> None:
    """A pinch (one large note here; a briefing's read at a commit in the worker) raised the limit for good, so
    a few of them over days left no raise for the notes that need one: the raise is undone after 100 writes."""
    state = StateStore(
        tmp_path / "worker.duckdb", Limits(memory_mib=64, threads=1, ceiling_mib=128), Metrics()
    )
    text = base64.b64encode(random.Random(16).randbytes(30_000_000)).decode()  # one 40 MB string: past 64 MiB
    # In the summary too: DuckDB compresses the summaries at a checkpoint, the body it stores as its frame.
    update = {"text": text, "sections": (), "front_matter": {"x": text}}
    note = parsed("inbox/jay/big.md", "# big\n").model_copy(update=update)
    try:
        put_document(state, "inference", note, raw_offset=0, position=Position("p.documents", 0, 0))
        assert duckdb_limits(state)[0] == "128.0 MiB"
        # The large note's own write is the first of the hundred.
        for offset in range(1, state_module.RAISED_WRITES - 1):
            state.mark_applied(Position("p.documents", 0, offset))
        assert duckdb_limits(state)[0] == "128.0 MiB", "the raise serves a hundred writes"
        state.mark_applied(Position("p.documents", 0, state_module.RAISED_WRITES))
        assert duckdb_limits(state)[0] == "64.0 MiB"
        assert state.document_count() == 1
    finally:
        state.close()


@pytest.mark.timeout(180)
def test_batches_of_large_notes_are_checkpointed_within_the_limit_without_a_retry(tmp_path: Path) -> None:
    """Each checkpoint writes only the batches since the last one (no vacuum merging them with earlier ones), so
    the notes that took the memory retry above are stored at 64 MiB, without a warning to the operator."""
    metrics = Metrics()
    state = StateStore(tmp_path / "worker.duckdb", Limits(memory_mib=64, threads=1), metrics)
    try:
        stored = store_large_notes(state)
        assert state.document_count() == stored
        assert duckdb_limits(state)[0] == "64.0 MiB"
    finally:
        state.close()
    assert (metrics.registry.get_sample_value("predigest_state_memory_retries_total") or 0) == 0


@pytest.mark.timeout(180)
@pytest.mark.usefixtures("merging")
def test_a_state_too_large_to_check_within_the_limit_is_kept_and_the_error_names_the_setting(
    tmp_path: Path,
) -> None:
    """The start-up check reads every block, a vector of text at once: past the limit that is not damage, so
    the file is not set aside (and rebuilt, and set aside again); the worker says which setting to raise."""
    path = tmp_path / "worker.duckdb"
    state = StateStore(path, Limits(memory_mib=1024, threads=1))
    try:
        store_large_notes(state)
    finally:
        state.close()
    metrics = Metrics()
    with pytest.raises(StateMemoryError, match="PREDIGEST_DUCKDB__MEMORY_LIMIT_MIB"):
        open_state(path, datetime(2026, 12, 4, tzinfo=UTC), Limits(memory_mib=64, threads=1), metrics)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["worker.duckdb", "worker.duckdb.lock"]
    assert metrics.registry.get_sample_value(REFUSED, {"operation": "open"}) == 1


def test_a_briefing_larger_than_the_limit_is_recorded_within_it_byte_for_byte(tmp_path: Path) -> None:
    """A 100k window's briefing JSON (~75 MB) was one VARCHAR: past the 256 MiB default it needed the memory
    retry at every flush. Packed (sinks.emission_bodies) it is recorded within the limit, no retry."""
    end = datetime(2026, 9, 27, 14, 20, tzinfo=UTC)
    small = brief(example_documents())
    briefing = small.model_copy(update={"sources": small.sources * (60_000 // len(small.sources))})
    big_json = briefing.model_dump_json(by_alias=True)
    assert len(big_json) > 25 * MIB  # DuckDB needed a few times a string's size to insert it
    metrics = Metrics()
    state = StateStore(tmp_path / "worker.duckdb", Limits(memory_mib=64, threads=1), metrics)
    try:
        body = Body.of(briefing, big_json, "# md\n")
        assert state.record_emission(briefing, "base", "# md\n", end, body=body) is True
        record = state.emission_record(briefing.axis, briefing.window.end, briefing.trigger)
        assert (
            record is not None and record.briefing_json == big_json.encode() and record.markdown == b"# md\n"
        )
        (entry,) = state.emissions.entries()
        assert entry.sources == len(briefing.sources)
    finally:
        state.close()
    assert (metrics.registry.get_sample_value("predigest_state_memory_retries_total") or 0) == 0
    assert metrics.registry.get_sample_value(REFUSED, {"operation": "write"}) == 0


@pytest.mark.timeout(180)
@pytest.mark.usefixtures("merging")
def test_a_refused_checkpoint_keeps_naming_the_setting_on_every_later_write_and_loses_nothing_committed(
    tmp_path: Path,
) -> None:
    """Past its last raise a checkpoint is refused and the invalidated state stays closed: the worker's retries of
    the batch (and its last, CRITICAL line) must say which setting to raise, not that a connection is closed."""
    path = tmp_path / "worker.duckdb"
    metrics = Metrics()
    # Its ceiling is its limit: no raise allowed, the first failure is refused.
    state = StateStore(path, Limits(memory_mib=64, threads=1, ceiling_mib=64), metrics)
    try:
        with pytest.raises(StateMemoryError, match="PREDIGEST_DUCKDB__MEMORY_LIMIT_MIB"):
            store_large_notes(state)
        with pytest.raises(StateMemoryError, match="PREDIGEST_DUCKDB__MEMORY_LIMIT_MIB"):
            put_document(state, "inference", parsed("inbox/jay/later.md", "# later\n"), raw_offset=None)
    finally:
        state.close()
    assert metrics.registry.get_sample_value(REFUSED, {"operation": "checkpoint"}) == 1
    reopened = StateStore(path, Limits(memory_mib=1024, threads=1))
    try:
        # What was committed before the refusal is kept, with its offsets: a replay from there stores the rest.
        applied = reopened.applied_offset("p.documents", 0)
        assert applied is not None and reopened.document_count() == applied + 1
    finally:
        reopened.close()


@pytest.mark.timeout(180)
@pytest.mark.usefixtures("merging")
def test_a_write_past_the_limit_while_readers_are_busy_gets_more_memory_and_keeps_every_note(
    tmp_path: Path,
) -> None:
    """Reads running on the state's cursors (a briefing, /status or the check, in their threads) do not make a write
    past the memory limit fail the batch and stop the worker: it is retried with more memory, every note kept.
    With a read open DuckDB 2.0.1 does not checkpoint at a commit, so the write path's retry raises the limit and
    the reopen that interrupts handed-out reads (`_close_interrupting`) is not reached here (review42c)."""
    state = StateStore(
        tmp_path / "worker.duckdb", Limits(memory_mib=64, threads=1, ceiling_mib=512), Metrics()
    )
    done = state.reader()  # a read finished before (still referenced): its closed cursor is no trouble
    done.close()
    reader = state.reader()
    # /status reads a window on a cursor of the reader's cursor: it must be stopped as well.
    window = reader.window("inference", window_bounds(datetime(2026, 9, 28, tzinfo=UTC), timedelta(hours=24)))
    outcome: list[BaseException | None] = []

    def read(cursor: duckdb.DuckDBPyConnection) -> None:
        try:  # a read that runs until something stops it
            cursor.execute(ENDLESS_READ).fetchall()
            outcome.append(None)
        except Exception as exc:
            outcome.append(exc)

    busy = [threading.Thread(target=read, args=(c,), daemon=True) for c in (reader._db, window._db)]
    for thread in busy:
        thread.start()
    try:
        stored = store_large_notes(state, every_seen=False, until_raised=True)
        assert state.document_count() == stored
        assert state._limits != state._configured, "the notes never needed more memory: nothing was tested"
    finally:
        for cursor in (reader._db, window._db):
            with contextlib.suppress(duckdb.ConnectionException):  # closed with the invalidated state
                cursor.interrupt()
        for thread in busy:
            thread.join()
        state.close()
    assert len(outcome) == 2 and all(isinstance(o, duckdb.Error) for o in outcome), outcome


@pytest.mark.timeout(300)
@pytest.mark.usefixtures("merging")
def test_batches_stored_while_reads_scan_the_state_keep_every_note(tmp_path: Path) -> None:
    """Reads in other threads (a briefing, /status, the check) take memory from the same limit while batches
    commit: DuckDB then fails a statement, a commit (rolled back, or invalidating the database when it could not
    flush) or a checkpoint. Each is run again with more memory; none stops the worker or loses a note."""
    state = StateStore(
        tmp_path / "worker.duckdb", Limits(memory_mib=64, threads=1, ceiling_mib=512), Metrics()
    )
    stop = threading.Event()
    reads: list[str] = []

    def scan() -> None:
        while not stop.is_set():
            try:
                with state.reader() as reader:
                    reader._db.execute(
                        "SELECT count(*), sum(octet_length(body_zst)) FROM contents"
                    ).fetchall()
                reads.append("done")
            except (
                duckdb.Error
            ) as exc:  # out of memory itself, or interrupted by a reopen: the caller's to retry
                reads.append(type(exc).__name__)

    reader = threading.Thread(target=scan, daemon=True)
    reader.start()
    try:
        stored = store_large_notes(state, every_seen=False)
    finally:
        stop.set()
        reader.join()
    try:
        assert state.document_count() == stored
        assert state.applied_offset("p.documents", 0) == stored - 1
        assert "done" in reads, "the reads ran beside the writes"
    finally:
        state.close()
