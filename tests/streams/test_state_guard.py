"""The running worker's check of its state file and the worker's memory: the blocks it read are not kept in
DuckDB's cache, and it does not run beside a briefing (whose model and texts need that room)."""

from __future__ import annotations

from pathlib import Path

from sinks.metrics import Metrics
from streams.duckdb_settings import DuckDBSettings
from streams.ownership import Ownership
from streams.services import LazyPipeline
from streams.settings import KafkaSettings, Settings
from streams.state_guard import QUIET_SECONDS, StateGuard
from streams.state_sync import StateSync
from tests.clocks import ManualClock
from tests.state_support import FILLER, cached_mib


def _guarded(tmp_path: Path) -> tuple[LazyPipeline, StateGuard, ManualClock]:
    """A guard over an opened state holding ~70 MB of blocks on disk, none of them cached."""
    s = Settings(
        root=tmp_path / "root",
        state_dir=tmp_path / "state",
        kafka=KafkaSettings(bootstrap="127.0.0.1:9"),
        duckdb=DuckDBSettings(memory_limit_mib=96, max_memory_limit_mib=192),
    )
    clock, metrics = ManualClock(), Metrics()
    pipeline = LazyPipeline(s, metrics, clock)
    guard = StateGuard(s, pipeline, StateSync(s, pipeline, Ownership([], 1), metrics, clock), metrics, clock)
    state = pipeline().state
    state._db.execute(FILLER)
    state._db.execute("CHECKPOINT")
    assert state.shed_cache() and cached_mib(state) <= 16
    return pipeline, guard, clock


async def test_the_blocks_a_check_read_leave_duckdbs_cache_once_it_is_over(tmp_path: Path) -> None:
    pipeline, guard, clock = _guarded(tmp_path)
    state = pipeline().state
    try:
        await guard.check()
        assert guard.checked_at == clock.now() and guard.problem is None
        # Read whole, the state filled the cache to its limit (96 MiB); ~190 MiB at 100k notes, under a briefing.
        assert cached_mib(state) <= 16
    finally:
        state.close()


async def test_no_check_runs_while_a_briefing_does(tmp_path: Path) -> None:
    pipeline, guard, clock = _guarded(tmp_path)
    state = pipeline().state
    try:
        async with pipeline().briefing_lock:
            await guard.check()
            assert guard.checked_at is None and cached_mib(state) <= 16
        await guard.check()  # the next tick
        assert guard.checked_at == clock.now()
    finally:
        state.close()


async def test_an_idle_workers_check_reads_a_step_at_a_time_and_leaves_the_cache_shed(tmp_path: Path) -> None:
    # No batch stored for QUIET_SECONDS: the check sheds as it reads (tests/sinks/test_state_shed.py), its
    # answer the same.
    pipeline, guard, clock = _guarded(tmp_path)
    state = pipeline().state
    try:
        clock.advance(QUIET_SECONDS)
        await guard.check()
        assert guard.checked_at == clock.now() and guard.problem is None
        assert cached_mib(state) <= 16
    finally:
        state.close()
