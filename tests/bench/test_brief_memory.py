"""The in-process briefing benchmark measures under the worker's conditions: its DuckDB limits, its enricher."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench import brief_memory
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
