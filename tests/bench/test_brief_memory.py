"""The in-process briefing benchmark measures under the worker's conditions: its DuckDB limits, its enricher."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench import brief_memory
from streams.pipeline import Pipeline
from streams.worker_process import PROJECT
from tests.state_support import duckdb_limits

pytestmark = pytest.mark.timeout(120)


def test_the_benchmark_s_briefing_opens_the_state_within_the_worker_s_duckdb_limits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: `brief` opened the state with DuckDB's defaults (80 % of the RAM, a thread per core), its peak
    # (1.3-1.4 GiB at 100k) not the worker's (~450 MiB under 192 MiB and the box's threads).
    monkeypatch.setenv("PREDIGEST_DUCKDB__MEMORY_LIMIT_MIB", "96")
    monkeypatch.setenv("PREDIGEST_DUCKDB__THREADS", "1")
    built = brief_memory.build(20, tmp_path / "worker.duckdb", workers=1)
    pipeline = brief_memory.open_briefing(tmp_path, tmp_path / "out")
    try:
        assert duckdb_limits(pipeline.state) == ("96.0 MiB", 1)
        assert pipeline.enricher is not None  # the worker's briefing looks its arXiv ids up in the cache
    finally:
        pipeline.state.close()
    # As it is run: a process of its own (it sets the worker's heap thresholds for the process).
    cmd = [sys.executable, "-m", "bench.brief_memory", "brief", "--state", str(tmp_path / "worker.duckdb")]
    result = json.loads(subprocess.run(cmd, check=True, capture_output=True, cwd=PROJECT).stdout)
    assert result["duckdb_memory_limit_mib"] == 96 and result["duckdb_threads"] == 1
    assert result["sources"] == 20 and built["notes"] == 20  # every note briefed


def test_the_benchmark_s_briefing_closes_the_enricher_s_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: the arXiv cache's connection was left to the garbage collector: while anything held the pipeline
    # (the traceback of a failed briefing, a caller keeping it), its file stayed locked to every other process.
    brief_memory.build(5, tmp_path / "worker.duckdb", workers=1)
    opened: list[Pipeline] = []
    open_briefing = brief_memory.open_briefing

    def kept(
        state_dir: Path, out: Path
    ) -> Pipeline:  # the pipeline held, as a caller or a traceback holds it
        opened.append(open_briefing(state_dir, out))
        return opened[-1]

    monkeypatch.setattr(brief_memory, "open_briefing", kept)
    result = asyncio.run(brief_memory._brief(tmp_path / "worker.duckdb", tmp_path / "out"))
    assert result["sources"] == 5 and opened
    cache = str(tmp_path / "arxiv-cache.duckdb")
    other = subprocess.run(
        [sys.executable, "-c", "import duckdb, sys; duckdb.connect(sys.argv[1]).close()", cache],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert other.returncode == 0, other.stderr
