"""A note deleted and then put back with the same bytes (undo, restore from the trash) must count again."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from processors.documents import parse_document
from processors.models import RawFile
from processors.window import window_bounds
from sinks.state import StateStore
from tests.state_support import delete_path, put_document, window_documents

SH = ZoneInfo("Asia/Shanghai")
WINDOW = window_bounds(datetime(2026, 9, 27, 22, 20, tzinfo=SH), timedelta(hours=24))


def test_a_note_restored_with_the_same_bytes_is_in_the_window_again(tmp_path: Path) -> None:
    state = StateStore(tmp_path / "worker.duckdb")
    data = b"# vLLM note\nKV cache serving\n"
    raw = RawFile(
        path="inbox/jay/2026-09-27-1000-a.md", content=data, size=len(data), mtime=0.0,
        sha256=hashlib.sha256(data).hexdigest(),
    )  # fmt: skip
    doc = parse_document(raw, zone=SH)
    # Raw offsets order one path's records (raw is keyed by path): written, deleted, restored.
    put_document(state, "inference", doc, raw_offset=1)
    delete_path(state, "inference", doc.path, datetime(2026, 9, 27, 11, 0, tzinfo=UTC), raw_offset=2)
    assert window_documents(state, "inference", WINDOW) == []
    put_document(state, "inference", doc, raw_offset=3)  # the same bytes published again after the restore
    assert [d.path for d in window_documents(state, "inference", WINDOW)] == [doc.path]
    # A replay of the first record (offset 1) after all that changes nothing.
    put_document(state, "inference", doc, raw_offset=1)
    assert [d.path for d in window_documents(state, "inference", WINDOW)] == [doc.path]
