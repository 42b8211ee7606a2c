"""Shedding DuckDB's cache between a briefing's reads and what it makes of them."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

from processors.window import window_bounds
from sinks.duck import Limits
from sinks.offsets import Position
from sinks.state import StateStore
from tests.state_support import FILLER, cached_mib, duckdb_limits


def test_shedding_the_cache_evicts_what_reads_left_and_keeps_the_memory_limit_unless_a_reader_is_open(
    tmp_path: Path,
) -> None:
    """What a briefing's reads left in DuckDB's pool goes before its model and files are made (the worker's
    resident set), the limit as configured after; never while another thread's read could meet the lowered one."""
    state = StateStore(tmp_path / "worker.duckdb", Limits(memory_mib=96, threads=1))
    try:
        state._db.execute(FILLER)
        state._db.execute("CHECKPOINT")
        state._db.execute("SELECT max(s), sum(i) FROM filler").fetchall()
        assert cached_mib(state) > 32
        reader = state.reader()
        assert not state.shed_cache()  # a read may be running in another thread
        reader.close()
        del reader
        assert state.shed_cache()
        assert cached_mib(state) <= 16
        assert duckdb_limits(state)[0] == "96.0 MiB"
    finally:
        state.close()


def test_a_briefings_own_idle_window_does_not_keep_the_cache_from_being_shed(tmp_path: Path) -> None:
    """Between a briefing's window reads and its model, the pool its reads filled goes (the worker's peak with a
    large window), its own window's cursor still open; another reader's cursor still keeps it."""
    state = StateStore(tmp_path / "worker.duckdb", Limits(memory_mib=96, threads=1))
    try:
        state._db.execute(FILLER)
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
        assert cached_mib(state) <= 16
        assert window.size() == 0  # the window reads on
        window.close()
    finally:
        state.close()


def test_a_write_from_another_thread_waits_while_the_limit_is_lowered_and_finds_it_restored(
    tmp_path: Path,
) -> None:
    """The window agent writes in a thread of its own: it must never run under a briefing's lowered limit, where
    its batch could run out of memory."""
    state = StateStore(tmp_path / "worker.duckdb", Limits(memory_mib=96, threads=1))
    limits_seen: list[str] = []

    def write() -> None:
        state.mark_applied(Position("p.documents", 0, 7))
        limits_seen.append(duckdb_limits(state)[0])

    try:
        with state.lowered_limit(16) as lowered:
            assert lowered
            writer = threading.Thread(target=write)
            writer.start()
            writer.join(timeout=0.5)
            assert writer.is_alive() and not limits_seen  # the write waits for the state's lock
        writer.join(timeout=10)
        assert limits_seen == ["96.0 MiB"]
        assert state.applied_offset("p.documents", 0) == 7
    finally:
        state.close()


def test_a_reader_opened_while_the_limit_is_lowered_waits_and_reads_under_the_configured_one(
    tmp_path: Path,
) -> None:
    """/status, /latest and the readiness check open readers while a briefing reads its notes under a lowered
    limit: under it, their reads would run out of memory (a readiness check failing for nothing)."""
    state = StateStore(tmp_path / "worker.duckdb", Limits(memory_mib=96, threads=1))
    window = state.window("inference", window_bounds(datetime(2026, 9, 28, tzinfo=UTC), timedelta(days=1)))
    seen: list[str] = []

    def read() -> None:
        reader = state.reader()
        row = reader._db.execute("SELECT current_setting('memory_limit')").fetchone()
        seen.append(str(row[0] if row else None))
        reader.close()

    try:
        with state.lowered_limit(16, idle=window) as lowered:
            assert lowered
            opener = threading.Thread(target=read)
            opener.start()
            opener.join(timeout=0.3)
            assert opener.is_alive() and not seen
        opener.join(timeout=10)
        assert seen == ["96.0 MiB"]
    finally:
        window.close()
        state.close()


def test_the_check_sheds_as_it_reads_so_duckdbs_cache_never_holds_the_whole_state(tmp_path: Path) -> None:
    """An idle worker's check (streams.state_guard) reads every block a few thousand rows at a time, the cache
    shed after each step: read whole, the state fills the pool to its limit (~190 MiB at 100k notes), on top of
    what the worker's last briefing left."""
    state = StateStore(tmp_path / "worker.duckdb", Limits(memory_mib=96, threads=1))
    try:
        state._db.execute(FILLER)
        state._db.execute("CHECKPOINT")
        assert state.shed_cache()
        cached: list[float] = []

        def shed() -> None:
            cached.append(cached_mib(state))
            state.shed_cache()

        state.check(shed)
        assert len(cached) >= 32 and max(cached) <= 24
        with state.reader() as reader:  # the whole check, as while notes come in
            reader.check()
        assert cached_mib(state) > 64
    finally:
        state.close()
