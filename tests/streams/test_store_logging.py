"""What storing a batch logs: one line per note while they trickle in, one per batch behind a backlog or a big one."""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from processors.parse_stage import route_file
from processors.wire import DocumentRecord, decode_rows
from sinks.metrics import Metrics
from sinks.state import Position, StateStore
from streams.pipeline import Pipeline, route_params
from streams.settings import KafkaSettings, Settings
from streams.store_report import LOG_EACH_UP_TO
from tests.clocks import ManualClock
from tests.streams.pipeline_support import raw_file

NOW = datetime(2026, 9, 27, 14, 0, tzinfo=UTC)


@pytest.fixture
def pipeline(tmp_path: Path) -> Pipeline:
    s = Settings(
        root=tmp_path / "root",
        state_dir=tmp_path / "state",
        out_dir=tmp_path / "out",
        kafka=KafkaSettings(bootstrap="127.0.0.1:9"),
    )
    return Pipeline(s, StateStore(s.state_file), Metrics(), clock=ManualClock(NOW))


def _records(pipeline: Pipeline, notes: int, first: int = 0) -> list[tuple[DocumentRecord, Position]]:
    out: list[tuple[DocumentRecord, Position]] = []
    for i in range(first, first + notes):
        raw = raw_file(
            f"inbox/jay/2026-09-27-{i:04d}-kv.md", f"# vLLM {i}\nKV cache serving for LLM inference\n"
        )
        routed = route_file(raw, route_params(pipeline.settings), NOW, i)
        for _, value in routed.records:
            position = Position("p.documents", 0, len(out) + first * 10)
            out += [(row, replace(position, row=n)) for n, row in enumerate(decode_rows(value))]
    return out


def _lines(caplog: pytest.LogCaptureFixture) -> tuple[int, int]:
    infos = [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.INFO and r.name == "streams.store_report"
    ]
    return sum(m.startswith("stored ") for m in infos), sum(m.startswith("applied ") for m in infos)


def test_a_trickle_logs_each_stored_note(pipeline: Pipeline, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "streams.store_report")
    seen = pipeline.store_batch(_records(pipeline, 2))
    assert _lines(caplog) == (sum(seen), 0) and sum(seen) >= 2  # the latency benchmark times these lines


def test_a_batch_behind_a_backlog_logs_one_line(pipeline: Pipeline, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "streams.store_report")
    pipeline.store_batch(_records(pipeline, 2), backlog=True)
    assert _lines(caplog) == (0, 1)
    caplog.clear()
    pipeline.store_batch(_records(pipeline, LOG_EACH_UP_TO + 1, first=10))
    assert _lines(caplog) == (0, 1)


def test_the_batch_line_counts_records_not_their_axis_rows(
    pipeline: Pipeline, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "streams.store_report")
    items = _records(pipeline, 3)
    assert len(items) > 3, "each note is one record of a row per axis"
    seen = pipeline.store_batch(items, backlog=True)
    assert all(seen), "every row of every record is stored"
    (line,) = [r.getMessage() for r in caplog.records if r.getMessage().startswith("applied ")]
    assert line.startswith(f"applied 3 documents record(s) ({len(items)} axis rows) in ")
    assert line.endswith(f": {len(items)} row(s) stored, 0 deleted")
