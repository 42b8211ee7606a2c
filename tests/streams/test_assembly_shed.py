"""The worker's memory while a briefing's model is made: DuckDB's pool shed once the window's reads are over."""

from __future__ import annotations

import asyncio
import hashlib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from processors.increment_search import find_increments
from processors.models import ControlCommand, RawFile
from sinks.duck import Limits
from sinks.metrics import Metrics
from sinks.state import StateStore
from streams.pipeline import Pipeline
from streams.settings import KafkaSettings, Settings
from tests.clocks import ManualClock
from tests.state_support import EXAMPLES, SH
from tests.streams.pipeline_support import ingest

END = datetime(2026, 9, 27, 22, 20, tzinfo=SH)
MIB = 1 << 20


def _cached_mib(state: StateStore) -> float:
    row = state._db.execute(
        "SELECT sum(memory_usage_bytes) FROM duckdb_memory() WHERE tag = 'BASE_TABLE'"
    ).fetchone()
    return float(row[0] or 0) / MIB if row else 0.0


def _pipeline(tmp_path: Path) -> Pipeline:
    s = Settings(
        root=EXAMPLES,
        state_dir=tmp_path,
        out_dir=tmp_path / "out",
        kafka=KafkaSettings(bootstrap="127.0.0.1:9"),
    )
    p = Pipeline(
        s, StateStore(s.state_file, Limits(memory_mib=96, threads=1)), Metrics(), clock=ManualClock(END)
    )
    for offset, path in enumerate(sorted(EXAMPLES.rglob("*.md"))):
        data = path.read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        path_in_root = path.relative_to(EXAMPLES).as_posix()
        ingest(
            p,
            RawFile(path=path_in_root, content=data, size=len(data), mtime=END.timestamp(), sha256=digest),
            offset,
        )
    return p


def test_the_pool_a_briefings_reads_filled_is_shed_before_its_increments_are_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pipeline = _pipeline(tmp_path)
    db = pipeline.state._db
    db.execute("CREATE TABLE filler AS SELECT range AS i, md5(range::VARCHAR) AS s FROM range(4000000)")
    db.execute("CHECKPOINT")
    db.execute("SELECT max(s), sum(i) FROM filler").fetchall()  # as a 100k window's reads fill it
    assert _cached_mib(pipeline.state) > 32
    cached: list[float] = []

    def finding(*args: Any) -> Any:
        cached.append(_cached_mib(pipeline.state))
        return find_increments(*args)

    monkeypatch.setattr("processors.briefing.find_increments", finding)
    command = ControlCommand(
        axis="inference", trigger="flush", end=END, requested_at=datetime.now(UTC), request_id="t"
    )
    try:
        assert asyncio.run(pipeline.brief(command)) is not None
    finally:
        pipeline.state.close()
    assert cached and cached[0] <= 16
