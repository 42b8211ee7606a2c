"""The worker's briefing in two phases: summaries of the whole window from the state, then a few notes whole."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from uuid import uuid4

import pytest

from processors.briefing import assemble_briefing
from processors.briefing_request import BriefingHistory, BriefingRequest
from processors.models import Briefing, ControlCommand, Document, RawFile, Trigger
from processors.window import window_bounds
from sinks.metrics import Metrics
from sinks.state import StateStore
from streams.pipeline import Pipeline
from streams.settings import KafkaSettings, Settings
from tests.clocks import ManualClock
from tests.state_support import EXAMPLES, SH, superseded_summaries, window_documents
from tests.streams.pipeline_support import ingest, raw_file

END = datetime(2026, 9, 27, 22, 20, tzinfo=SH)


@pytest.fixture
def pipeline(tmp_path: Path) -> Pipeline:
    s = Settings(
        root=EXAMPLES,
        state_dir=tmp_path / "state",
        out_dir=tmp_path / "out",
        kafka=KafkaSettings(bootstrap="127.0.0.1:9"),
    )
    p = Pipeline(s, StateStore(s.state_file), Metrics(), clock=ManualClock(END))
    for offset, path in enumerate(sorted(EXAMPLES.rglob("*.md"))):
        data = path.read_bytes()
        raw = RawFile(
            path=path.relative_to(EXAMPLES).as_posix(),
            content=data,
            size=len(data),
            mtime=END.timestamp(),
            sha256=hashlib.sha256(data).hexdigest(),
        )
        ingest(p, raw, offset)
    return p


def test_the_stored_window_loads_its_sources_whole_in_window_order(pipeline: Pipeline) -> None:
    window = window_bounds(END, pipeline.settings.window_length)
    whole = window_documents(pipeline.state, "inference", window)
    assert len(whole) > 3
    stored = pipeline.state.window("inference", window)
    try:
        assert [r.doc.path for r in sorted(stored.rows(()), key=lambda r: r.position)] == [
            d.path for d in whole
        ]
        assert stored.load([d.path for d in reversed(whole[:3])]) == whole[:3]
    finally:
        stored.close()


async def test_the_two_phase_briefing_is_the_one_the_whole_window_gives(pipeline: Pipeline) -> None:
    state, s = pipeline.state, pipeline.settings
    window = window_bounds(END, s.window_length)
    command = ControlCommand(
        axis="inference", trigger="close", end=END, requested_at=END, request_id=uuid4().hex
    )
    emission = await pipeline.brief(command)
    assert emission is not None
    documents = window_documents(state, "inference", window)
    baseline = state.latest_baseline("inference", window.start, window.start - s.window_length)
    whole = [*documents, *([baseline] if baseline else [])]
    request = BriefingRequest(
        axis=s.require_axis("inference"),
        trigger="close",
        window=window,
        generated_at=END,
        zone=s.tz,
        documents=whole,
        living=state.living_document("inference"),
        axes=s.axes,
        other_living={a.name: state.living_document(a.name) for a in s.axes if a.name != "inference"},
        superseded=superseded_summaries(state, "inference", window),
        rejected=state.rejections(window, "inference"),
        # What the worker does: D numbers continue from the whole baselines' texts.
        history=BriefingHistory.of([], (d.text for d in whole if d.kind == "baseline")),
        lang=s.lang,
        rules=s.briefing_rules,
    )
    assert emission.briefing == assemble_briefing(request)


async def test_the_window_loads_the_versions_it_pinned_from_another_thread(pipeline: Pipeline) -> None:
    """A newer version stored while a briefing runs is not what that briefing quotes: it reads its window as it was."""
    state = pipeline.state
    window = window_bounds(END, pipeline.settings.window_length)
    whole = window_documents(state, "inference", window)
    stored = state.window("inference", window)
    try:
        edited = (EXAMPLES / whole[0].path).read_text() + "\n\n补充：vLLM 推理又快了 5%。\n"
        ingest(pipeline, raw_file(whole[0].path, edited, END.timestamp()), raw_offset=10_000)
        assert whole[0].sha256 not in {d.sha256 for d in window_documents(state, "inference", window)}
        paths: Sequence[str] = [d.path for d in whole[:3]]
        got: list[Document] = await asyncio.to_thread(stored.load, [*paths, "inbox/nobody/gone.md"])
    finally:
        stored.close()
    assert got == whole[:3]


async def test_d_numbers_hold_across_the_worker_s_briefings_in_any_order(pipeline: Pipeline) -> None:
    """A later window's briefing emitted first (a re-run of a past window after it) and the close and flush
    ending at the same time: every discrepancy has one D number in all of them."""
    late = b"# daily\n\n## inference\nvLLM inference paper arXiv:2610.00999 released.\n"
    raw = RawFile(
        path="inbox/tom/2026-09-27-2300-late.md",
        content=late,
        size=len(late),
        mtime=END.timestamp(),
        sha256=hashlib.sha256(late).hexdigest(),
    )
    ingest(pipeline, raw, raw_offset=10_000)

    async def d_items(end: datetime, trigger: Trigger) -> dict[str, str]:
        command = ControlCommand(
            axis="inference", trigger=trigger, end=end, requested_at=END, request_id=uuid4().hex
        )
        emission = await pipeline.brief(command)
        assert emission is not None
        return {d.key or "": d.id for d in Briefing.model_validate_json(emission.json_bytes()).discrepancies}

    later = await d_items(END + timedelta(hours=1), "flush")
    assert later["future:2610.00999"] == "D198" and len(later) == 7
    close = await d_items(END, "close")
    flush = await d_items(END, "flush")
    assert "future:2610.00999" not in close
    assert close == flush == {k: n for k, n in later.items() if k in close}
