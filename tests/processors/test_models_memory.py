"""What reading the window's summaries leaves in the worker's memory once they are dropped."""

from __future__ import annotations

import gc
import sys
from datetime import UTC, datetime

from processors.models import DocumentSummary


def test_summaries_read_from_json_leave_no_strings_behind_once_dropped() -> None:
    # A 100k window's summaries are read and dropped by each briefing: strings kept after it (pydantic's string
    # cache holds the last 16 384 short values of a validation by default) each pin a pool of Python's memory,
    # ~100 MiB of the live worker's resident set after a 100k briefing.
    stamp = datetime(2026, 9, 27, 12, 0, tzinfo=UTC)
    rows = [
        DocumentSummary(
            path=f"inbox/jay/2026-09-27-{i}.md",
            sha256=f"{i:064x}",
            writer="jay",
            kind="inbox",
            event_time=stamp,
            bytes=i,
            title=f"note {i}",
            text_hash=f"{i:064x}",
            tags=(f"tag-{i}",),
        ).model_dump_json()
        for i in range(20_000)
    ]
    gc.collect()
    before = sys.getallocatedblocks()
    summaries = [DocumentSummary.model_validate_json(row) for row in rows]
    assert summaries[-1].title == "note 19999"
    del summaries
    gc.collect()
    assert sys.getallocatedblocks() - before < 1_000
