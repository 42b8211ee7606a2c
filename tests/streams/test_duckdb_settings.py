"""The worker's DuckDB limits: a sane default, overridable, a value too small refused, and held by the opened state."""

from __future__ import annotations

from pathlib import Path

import pytest

from sinks.duck import Limits
from sinks.metrics import Metrics
from streams.duckdb_settings import DuckDBSettings
from streams.errors import ConfigError
from streams.services import LazyPipeline, state_limits
from streams.settings import KafkaSettings, Settings, load_settings
from tests.clocks import ManualClock
from tests.state_support import duckdb_limits


def test_the_state_is_bounded_by_default() -> None:
    """DuckDB's own default is 80 % of the machine's RAM; the worker's state takes 192 MiB unless told (its share
    of the worker's 512 MiB while ingesting), and raises it to 512 MiB at most past its memory (within the default
    1.5 GiB worker container)."""
    assert state_limits(Settings()) == Limits(memory_mib=192, threads=None, ceiling_mib=512)


def test_the_environment_sets_the_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PREDIGEST_DUCKDB__MEMORY_LIMIT_MIB", "1024")
    monkeypatch.setenv("PREDIGEST_DUCKDB__THREADS", "1")
    monkeypatch.setenv("PREDIGEST_DUCKDB__MAX_MEMORY_LIMIT_MIB", "2048")
    assert state_limits(load_settings()) == Limits(memory_mib=1024, threads=1, ceiling_mib=2048)


@pytest.mark.parametrize(
    ("name", "value"), [("MEMORY_LIMIT_MIB", "16"), ("THREADS", "0"), ("MAX_MEMORY_LIMIT_MIB", "16")]
)
def test_a_limit_too_small_is_refused_naming_its_variable(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(f"PREDIGEST_DUCKDB__{name}", value)
    with pytest.raises(ConfigError, match=f"PREDIGEST_DUCKDB__{name}"):
        load_settings()


def test_the_worker_opens_its_state_within_the_configured_limits(tmp_path: Path) -> None:
    s = Settings(
        root=tmp_path / "root",
        state_dir=tmp_path / "state",
        kafka=KafkaSettings(bootstrap="127.0.0.1:9"),
        duckdb=DuckDBSettings(memory_limit_mib=300, threads=1),
    )
    state = LazyPipeline(s, Metrics(), ManualClock())().state
    try:
        assert duckdb_limits(state) == ("300.0 MiB", 1)
    finally:
        state.close()


@pytest.mark.parametrize("memory", ["512", "1024"])
def test_a_memory_limit_with_no_room_to_raise_is_refused_in_one_line(
    monkeypatch: pytest.MonkeyPatch, memory: str
) -> None:
    """At or above its ceiling no pinch could be retried (a checkpoint of large notes would stop the worker, the
    vacuum would never run): refused at load, saying what to set."""
    monkeypatch.setenv("PREDIGEST_DUCKDB__MEMORY_LIMIT_MIB", memory)
    with pytest.raises(ConfigError) as refused:
        load_settings()
    message = str(refused.value)
    assert "\n" not in message
    assert f"duckdb.memory_limit_mib ({memory}) must be below duckdb.max_memory_limit_mib (512)" in message
    assert "PREDIGEST_DUCKDB__MAX_MEMORY_LIMIT_MIB" in message
    monkeypatch.setenv("PREDIGEST_DUCKDB__MAX_MEMORY_LIMIT_MIB", "2048")
    assert state_limits(load_settings()) == Limits(memory_mib=int(memory), threads=None, ceiling_mib=2048)
