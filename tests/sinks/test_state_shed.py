"""Shedding DuckDB's cache between a briefing's reads and what it makes of them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from processors.window import window_bounds
from sinks.duck import Limits
from sinks.state import StateStore
from tests.state_support import duckdb_limits

MIB = 1 << 20


def _cached_mib(state: StateStore) -> float:
    row = state._db.execute(
        "SELECT sum(memory_usage_bytes) FROM duckdb_memory() WHERE tag = 'BASE_TABLE'"
    ).fetchone()
    return float(row[0] or 0) / MIB if row else 0.0


def test_shedding_the_cache_evicts_what_reads_left_and_keeps_the_memory_limit_unless_a_reader_is_open(
    tmp_path: Path,
) -> None:
    """What a briefing's reads left in DuckDB's pool goes before its model and files are made (the worker's
    resident set), the limit as configured after; never while another thread's read could meet the lowered one."""
    state = StateStore(tmp_path / "worker.duckdb", Limits(memory_mib=96, threads=1))
    try:
        state._db.execute(
            "CREATE TABLE filler AS SELECT range AS i, md5(range::VARCHAR) AS s FROM range(4000000)"
        )
        state._db.execute("CHECKPOINT")
        state._db.execute("SELECT max(s), sum(i) FROM filler").fetchall()
        assert _cached_mib(state) > 32
        reader = state.reader()
        assert not state.shed_cache()  # a read may be running in another thread
        reader.close()
        del reader
        assert state.shed_cache()
        assert _cached_mib(state) <= 16
        assert duckdb_limits(state)[0] == "96.0 MiB"
    finally:
        state.close()


def test_a_briefings_own_idle_window_does_not_keep_the_cache_from_being_shed(tmp_path: Path) -> None:
    """Between a briefing's window reads and its model, the pool its reads filled goes (the worker's peak with a
    large window), its own window's cursor still open; another reader's cursor still keeps it."""
    state = StateStore(tmp_path / "worker.duckdb", Limits(memory_mib=96, threads=1))
    try:
        state._db.execute(
            "CREATE TABLE filler AS SELECT range AS i, md5(range::VARCHAR) AS s FROM range(4000000)"
        )
        state._db.execute("CHECKPOINT")
        window = state.window(
            "inference", window_bounds(datetime(2026, 9, 28, tzinfo=UTC), timedelta(days=1))
        )
        state._db.execute("SELECT max(s), sum(i) FROM filler").fetchall()
        assert not state.shed_cache()  # whose the cursor is, and whether it reads now, is the caller's to say
        reader = state.reader()
        assert not state.shed_cache(idle=window)
        reader.close()
        del reader
        assert state.shed_cache(idle=window)
        assert _cached_mib(state) <= 16
        assert window.size() == 0  # the window reads on
        window.close()
    finally:
        state.close()
