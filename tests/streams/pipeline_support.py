"""Files through the worker's own steps, in process: routed as the parse agent does, stored as the window agent does."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path

from processors.fan_out import DocumentEvent
from processors.models import RawFile
from processors.parse_stage import route_file
from processors.wire import decode_rows, to_record
from sinks.clock import Clock
from sinks.metrics import Metrics
from sinks.state import Position, StateStore
from streams.pipeline import Pipeline, route_params
from streams.settings import KafkaSettings, Settings


def raw_file(path: str, text: str | bytes, mtime: float = 0.0) -> RawFile:
    data = text.encode() if isinstance(text, str) else text
    return RawFile(
        path=path, content=data, size=len(data), mtime=mtime, sha256=hashlib.sha256(data).hexdigest()
    )


def ingest(
    pipeline: Pipeline, raw: RawFile, raw_offset: int | None = None, position: Position | None = None
) -> list[bool]:
    """Route one raw file (logged and counted by `Pipeline.note`), then apply its documents records."""
    routed = route_file(raw, route_params(pipeline.settings), pipeline.clock.now(), raw_offset)
    pipeline.note(routed)
    rows = [row for _, value in routed.records for row in decode_rows(value)]
    # Every row at the one position given, as the rows of one record.
    at = [None if position is None else replace(position, row=i) for i in range(len(rows))]
    return pipeline.store_batch(list(zip(rows, at, strict=True)))


def store_event(pipeline: Pipeline, event: DocumentEvent) -> bool:
    """Apply one hand-built event as its documents record; True if a briefing now sees it."""
    return pipeline.store_batch([(to_record(event), None)])[0]


def offline_pipeline(tmp_path: Path, clock: Clock) -> Pipeline:
    """A pipeline over a fresh state under `tmp_path`, with a broker address nothing dials; close its state after."""
    s = Settings(
        root=tmp_path / "root",
        state_dir=tmp_path / "state",
        out_dir=tmp_path / "out",
        kafka=KafkaSettings(bootstrap="127.0.0.1:9"),
    )
    return Pipeline(s, StateStore(s.state_file), Metrics(), clock=clock)
