"""A briefing's memory past its model does not grow with the window: once recorded, no per-source object is left,
its texts stay packed until written, and its files are the recorded bytes."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from processors.models import ControlCommand, NoIncrementSource, SourceEntry
from sinks.files import pretty_json_bytes
from streams.pipeline import Pipeline
from tests.clocks import ManualClock
from tests.state_support import SH
from tests.streams.pipeline_support import ingest, offline_pipeline, raw_file

END = datetime(2026, 9, 27, 22, 20, tzinfo=SH)
NOTES = 40


@pytest.fixture
def pipeline(tmp_path: Path) -> Iterator[Pipeline]:
    p = offline_pipeline(tmp_path, ManualClock(END + timedelta(minutes=10)))
    for i in range(NOTES):
        text = f"# vLLM 推理 {i}\nKV cache serving, note {i} of the window arXiv:2609.{23100 + i}\n"
        ingest(p, raw_file(f"inbox/jay/2026-09-27-{1000 + i}-kv.md", text))
    yield p
    p.state.close()


def per_source_objects() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, SourceEntry | NoIncrementSource))


async def test_a_recorded_briefing_holds_no_per_source_object_and_keeps_its_texts_packed(
    pipeline: Pipeline,
) -> None:
    before = per_source_objects()
    command = ControlCommand(axis="inference", trigger="flush", end=END, requested_at=END, request_id="r")
    emission = await pipeline.brief(command)
    assert emission is not None and emission.fresh
    # The model of the window (one entry per source, twice) is gone once the briefing is recorded.
    assert per_source_objects() == before
    recorded = pipeline.state.emission_record("inference", END, "flush")
    assert recorded is not None and recorded.markdown is not None
    assert emission.packed and len(emission.recorded_json) < len(recorded.briefing_json)
    assert emission.json_bytes() == recorded.briefing_json
    assert len(emission.briefing.sources) == NOTES

    written = {p.suffix: p.read_bytes() for p in pipeline.write_files(emission)}
    assert written == {".json": pretty_json_bytes(recorded.briefing_json), ".md": recorded.markdown}


async def test_the_model_is_gone_before_the_briefing_is_recorded(
    pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The record's write (DuckDB's buffers for ~15 MB of packed texts) must not come on top of the model.
    before = per_source_objects()
    at_record: list[int] = []
    record = pipeline.state.record_emission

    def recording(*args: Any, **kwargs: Any) -> bool:
        at_record.append(per_source_objects())
        return record(*args, **kwargs)

    monkeypatch.setattr(pipeline.state, "record_emission", recording)
    command = ControlCommand(axis="inference", trigger="flush", end=END, requested_at=END, request_id="r")
    emission = await pipeline.brief(command)
    assert emission is not None and at_record == [before]
    sample = pipeline.metrics.registry.get_sample_value
    assert sample("predigest_briefings_emitted_total", {"axis": "inference", "trigger": "flush"}) == 1
