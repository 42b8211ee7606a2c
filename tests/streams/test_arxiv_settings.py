"""The arXiv settings: environment overrides, the cache file and its DuckDB limits, and politeness towards arxiv.org."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from sinks.metrics import Metrics
from streams.pipeline import make_enricher
from streams.settings import ArxivSettings, load_settings
from tests.clocks import ManualClock


def test_environment_turns_the_api_on(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PREDIGEST_ARXIV__ENABLED", "true")
    monkeypatch.setenv("PREDIGEST_ARXIV__BATCH_SIZE", "20")
    monkeypatch.setenv("PREDIGEST_ARXIV__NEGATIVE_TTL_HOURS", "6")
    s = load_settings(state_dir=tmp_path)
    assert s.arxiv.enabled and s.arxiv.batch_size == 20 and s.arxiv.negative_ttl_hours == 6
    assert s.arxiv.min_interval_seconds == 3.0
    assert s.arxiv_cache_file == tmp_path / "arxiv-cache.duckdb"
    assert s.arxiv_cache_file != s.state_file


def test_off_by_default() -> None:
    assert ArxivSettings().enabled is False


@pytest.mark.parametrize("url", ["https://export.arxiv.org/api/query", "http://arxiv.org/api/query"])
def test_faster_than_one_request_per_3s_is_refused_against_arxiv(url: str) -> None:
    with pytest.raises(ValidationError, match="terms of use"):
        ArxivSettings(base_url=url, min_interval_seconds=1.0)


def test_a_local_server_may_go_faster() -> None:
    assert (
        ArxivSettings(
            base_url="http://127.0.0.1:8080/api/query", min_interval_seconds=0.1
        ).min_interval_seconds
        == 0.1
    )


def test_nonsense_numbers_are_refused() -> None:
    with pytest.raises(ValidationError):
        ArxivSettings(batch_size=0)


def _cache_limits(tmp_path: Path) -> tuple[str, int]:
    """The memory limit and threads DuckDB holds for the worker's arXiv cache, as it reports them."""
    enricher = make_enricher(load_settings(state_dir=tmp_path), Metrics(), ManualClock())
    try:
        row = enricher.cache._db.execute(
            "SELECT current_setting('memory_limit'), current_setting('threads')"
        ).fetchone()
    finally:
        enricher.cache.close()
    assert row is not None
    return str(row[0]), int(row[1])


def test_the_cache_is_bounded_by_default(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # DuckDB's own default is 80 % of the machine's RAM and a thread per core, for a file of short rows.
    assert _cache_limits(tmp_path) == ("32.0 MiB", 1)


def test_the_environment_sets_the_caches_limits(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PREDIGEST_ARXIV__CACHE_MEMORY_LIMIT_MIB", "48")
    monkeypatch.setenv("PREDIGEST_ARXIV__CACHE_THREADS", "2")
    assert _cache_limits(tmp_path) == ("48.0 MiB", 2)
