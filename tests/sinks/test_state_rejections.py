"""A window's rejected files are those whose own time falls in it, so re-emitting a past window lists them."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from processors.models import AxisSpec
from processors.parse_stage import RouteParams, route_file
from processors.window import window_bounds
from processors.wire import decode_rows
from sinks.state import StateStore
from tests.state_support import raw_file

SH = ZoneInfo("Asia/Shanghai")
PARAMS = RouteParams(axes=(AxisSpec(name="inference"),), zone=SH, max_bytes=1 << 20, message_limit=1 << 20)


def refuse(state: StateStore, path: str, seen_at: datetime) -> None:
    """A binary file through the parse stage and the window agent's write, as the worker handles it."""
    raw = raw_file(path, b"\x00\x01binary", seen_at.timestamp())
    routed = route_file(raw, PARAMS, seen_at, raw_offset=1)
    state.apply_batch([(row, None) for _, value in routed.records for row in decode_rows(value)])


def test_a_past_window_lists_the_files_stamped_in_it_with_their_code(tmp_path: Path) -> None:
    state = StateStore(tmp_path / "worker.duckdb")
    seen = datetime(2026, 12, 3, 16, 0, tzinfo=SH)  # the worker saw it long after its stamp
    refuse(state, "inbox/jay/2026-09-27-0900-blob.md", seen)

    past = window_bounds(datetime(2026, 9, 27, 22, 20, tzinfo=SH), timedelta(hours=24))
    [rejection] = state.rejections(past)
    assert (rejection.path, rejection.reason_code) == ("inbox/jay/2026-09-27-0900-blob.md", "binary")
    assert state.rejections(window_bounds(seen + timedelta(hours=1), timedelta(hours=24))) == []


def test_a_file_without_a_stamp_is_placed_by_its_mtime(tmp_path: Path) -> None:
    state = StateStore(tmp_path / "worker.duckdb")
    seen = datetime(2026, 9, 27, 12, 0, tzinfo=SH)
    refuse(state, "inbox/jay/blob.md", seen)
    window = window_bounds(datetime(2026, 9, 27, 22, 20, tzinfo=SH), timedelta(hours=24))
    assert [r.path for r in state.rejections(window)] == ["inbox/jay/blob.md"]


def test_bytes_rejected_by_a_routing_crash_and_routed_after_the_fix_are_no_longer_listed(
    tmp_path: Path,
) -> None:
    # A dead-lettered note replayed once the bug is fixed: the same bytes, now a document; and then the same
    # bytes crashing again (a later regression) are listed again. The latest record about them decides.
    state = StateStore(tmp_path / "worker.duckdb")
    seen = datetime(2026, 9, 27, 12, 0, tzinfo=SH)
    text = b"# vLLM\n\nKV cache serving.\n"
    raw = raw_file("inbox/jay/2026-09-27-1000-kv.md", text)
    crashed = route_file(raw.model_copy(update={"content": None}), PARAMS, seen, raw_offset=1)
    assert crashed.rejection is not None  # bytes that did not travel: rejected, as a crash would be
    fixed = route_file(raw, PARAMS, seen, raw_offset=2)
    window = window_bounds(datetime(2026, 9, 27, 22, 20, tzinfo=SH), timedelta(hours=24))

    state.apply_batch([(row, None) for _, v in crashed.records for row in decode_rows(v)])
    assert [r.path for r in state.rejections(window)] == [raw.path]
    state.apply_batch([(row, None) for _, v in fixed.records for row in decode_rows(v)])
    assert state.rejections(window) == [] and state.document_count("inference") == 1
    state.apply_batch([(row, None) for _, v in crashed.records for row in decode_rows(v)])
    assert [r.path for r in state.rejections(window)] == [raw.path]
