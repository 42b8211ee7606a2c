"""A note refused since it was stored, through the worker's own steps in process: its briefings list it among the
rejected only, never its old text as a source, and brief it again once the file is back with the same bytes."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from processors.models import Briefing, ControlCommand, RawFile, Trigger
from streams.pipeline import Pipeline
from tests.clocks import ManualClock
from tests.streams.pipeline_support import ingest, offline_pipeline, raw_file

SH = ZoneInfo("Asia/Shanghai")
END = datetime(2026, 9, 27, 22, 20, tzinfo=SH)
NOTE = "inbox/jay/2026-09-27-1000-a.md"
TEXT = "# vLLM paged attention\n\nvLLM serves the KV cache in pages (arXiv:2309.06180): 24x the throughput.\n"


@pytest.fixture
def pipeline(tmp_path: Path) -> Iterator[Pipeline]:
    p = offline_pipeline(tmp_path, ManualClock(END + timedelta(minutes=10)))
    yield p
    p.state.close()


async def brief(p: Pipeline, trigger: Trigger, end: datetime = END) -> Briefing:
    command = ControlCommand(axis="inference", trigger=trigger, end=end, requested_at=end, request_id=trigger)
    emission = await p.brief(command)
    assert emission is not None
    return emission.briefing


def symlink(path: str) -> RawFile:
    """The watcher's refusal of a note replaced by a symlink (streams.root_files.refusal_record)."""
    return RawFile(
        path=path, content=b"", size=9, mtime=END.timestamp(), sha256="refused-symlink",
        refused="is a symlink (never followed)", refused_code="symlink",
    )  # fmt: skip


async def test_a_note_replaced_by_a_symlink_is_briefed_as_rejected_only_and_again_once_it_is_back(
    pipeline: Pipeline,
) -> None:
    ingest(pipeline, raw_file(NOTE, TEXT), raw_offset=1)
    before = await brief(pipeline, "flush")
    assert [s.path for s in before.sources] == [NOTE] and before.rejected == []

    ingest(pipeline, symlink(NOTE), raw_offset=2)
    refused = await brief(pipeline, "close")
    assert [(r.path, r.reason_code) for r in refused.rejected] == [(NOTE, "symlink")]
    assert refused.sources == [] and refused.increments == []  # its old text is not the file on disk
    assert "2309.06180" not in refused.model_dump_json()

    ingest(pipeline, raw_file(NOTE, TEXT), raw_offset=3)  # the link replaced by the same bytes again
    back = await brief(pipeline, "flush", END + timedelta(minutes=1))
    assert [s.path for s in back.sources] == [NOTE] and back.rejected == []
    assert [i.arxiv for i in back.increments] == [i.arxiv for i in before.increments]


async def test_a_living_document_refused_since_it_was_stored_is_said_refused_not_never_reached(
    pipeline: Pipeline, caplog: pytest.LogCaptureFixture
) -> None:
    living = "living/inference.md"
    ingest(pipeline, raw_file(NOTE, TEXT), raw_offset=1)
    ingest(
        pipeline,
        raw_file(living, "# inference.md v3.44\n\n## §1 KV cache\n\npaged attention\n"),
        raw_offset=2,
    )
    assert (await brief(pipeline, "flush")).living_doc.path == living
    ingest(pipeline, symlink(living), raw_offset=3)
    with caplog.at_level(logging.WARNING, logger="streams.assembly"):
        refused = await brief(pipeline, "close")
    assert [(r.path, r.reason_code) for r in refused.rejected] == [(living, "symlink")]
    assert refused.living_doc.version is None and [s.path for s in refused.sources] == [NOTE]
    [line] = [r.getMessage() for r in caplog.records if "without its living document" in r.getMessage()]
    assert "is refused at the door since it was stored (" in line and "never reached" not in line
