"""A window's rejected files are those whose own time falls in it, so re-emitting a past window lists them."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from processors.models import AxisSpec, RawFile
from processors.parse_stage import RouteParams, route_file
from processors.window import window_bounds
from processors.wire import DocumentRecord, EventHeader, decode_rows
from sinks.state import StateStore
from tests.state_support import raw_file, window_documents

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
    [rejection] = state.rejections(past, "inference")
    assert (rejection.path, rejection.reason_code) == ("inbox/jay/2026-09-27-0900-blob.md", "binary")
    assert state.rejections(window_bounds(seen + timedelta(hours=1), timedelta(hours=24)), "inference") == []


def test_a_file_without_a_stamp_is_placed_by_its_mtime(tmp_path: Path) -> None:
    state = StateStore(tmp_path / "worker.duckdb")
    seen = datetime(2026, 9, 27, 12, 0, tzinfo=SH)
    refuse(state, "inbox/jay/blob.md", seen)
    window = window_bounds(datetime(2026, 9, 27, 22, 20, tzinfo=SH), timedelta(hours=24))
    assert [r.path for r in state.rejections(window, "inference")] == ["inbox/jay/blob.md"]


def test_bytes_rejected_by_a_routing_crash_and_routed_after_the_fix_are_no_longer_listed(
    tmp_path: Path,
) -> None:
    # A dead-lettered note replayed once the bug is fixed: the same bytes, now a document; and then the same
    # bytes crashing again (a later regression, re-driven: a new raw offset) are listed again. The latest record
    # about the path decides.
    state = StateStore(tmp_path / "worker.duckdb")
    seen = datetime(2026, 9, 27, 12, 0, tzinfo=SH)
    text = b"# vLLM\n\nKV cache serving.\n"
    raw = raw_file("inbox/jay/2026-09-27-1000-kv.md", text)
    crashed = route_file(raw.model_copy(update={"content": None}), PARAMS, seen, raw_offset=1)
    assert crashed.rejection is not None  # bytes that did not travel: rejected, as a crash would be
    fixed = route_file(raw, PARAMS, seen, raw_offset=2)
    again = route_file(raw.model_copy(update={"content": None}), PARAMS, seen, raw_offset=3)
    window = window_bounds(datetime(2026, 9, 27, 22, 20, tzinfo=SH), timedelta(hours=24))

    state.apply_batch([(row, None) for _, v in crashed.records for row in decode_rows(v)])
    assert [r.path for r in state.rejections(window, "inference")] == [raw.path]
    state.apply_batch([(row, None) for _, v in fixed.records for row in decode_rows(v)])
    assert state.rejections(window, "inference") == [] and state.document_count("inference") == 1
    state.apply_batch([(row, None) for _, v in again.records for row in decode_rows(v)])
    assert [r.path for r in state.rejections(window, "inference")] == [raw.path]


TWO = RouteParams(
    axes=(AxisSpec(name="inference"), AxisSpec(name="risk")),
    zone=SH,
    max_bytes=1 << 20,
    message_limit=1 << 20,
)
NOTE = "inbox/jay/2026-09-27-1000-a.md"
WINDOW = window_bounds(datetime(2026, 9, 27, 22, 20, tzinfo=SH), timedelta(hours=24))
SEEN = datetime(2026, 9, 27, 12, 0, tzinfo=SH)


def ingest(state: StateStore, raw: RawFile, raw_offset: int) -> None:
    """One raw record through the parse stage and the window agent's write, every axis's rows."""
    routed = route_file(raw, TWO, SEEN, raw_offset=raw_offset)
    state.apply_batch([(row, None) for _, value in routed.records for row in decode_rows(value)])


def symlink(path: str) -> RawFile:
    """The watcher's refusal of a symlink at `path` (streams.root_files.refusal_record)."""
    return RawFile(
        path=path, content=b"", size=9, mtime=SEEN.timestamp(), sha256="refused-symlink",
        refused="it is a symlink", refused_code="symlink",
    )  # fmt: skip


def briefed(state: StateStore, axis: str) -> list[str]:
    """What a briefing of the axis lists: its sources' texts and its rejected paths."""
    return [d.text for d in window_documents(state, axis, WINDOW)] + [
        f"rejected {r.path} ({r.reason_code})" for r in state.rejections(WINDOW, axis)
    ]


@pytest.mark.parametrize(
    "refused",
    [symlink(NOTE), raw_file(NOTE, b"\x00\x01binary"), raw_file(NOTE, b"x" * ((1 << 20) + 1))],
    ids=["symlink", "binary", "over-max-bytes"],
)
def test_a_note_refused_after_it_was_stored_is_listed_rejected_not_briefed_from_its_old_text(
    tmp_path: Path, refused: RawFile
) -> None:
    state = StateStore(tmp_path / "worker.duckdb")
    note = raw_file(NOTE, b"# vLLM\n\nKV cache serving.\n")
    ingest(state, note, raw_offset=1)
    assert briefed(state, "risk") == ["# vLLM\n\nKV cache serving.\n"]

    ingest(state, refused, raw_offset=2)
    code = refused.refused_code or ("binary" if refused.size < 100 else "limit")
    for axis in ("inference", "risk"):
        assert briefed(state, axis) == [f"rejected {NOTE} ({code})"]

    # The same bytes back (the link replaced by the file again): briefed again, though stored once.
    ingest(state, note, raw_offset=3)
    for axis in ("inference", "risk"):
        assert briefed(state, axis) == ["# vLLM\n\nKV cache serving.\n"]
    assert state._db.execute("SELECT count(*) FROM contents").fetchone() == (1,)


def test_a_refused_file_deleted_later_is_no_longer_listed(tmp_path: Path) -> None:
    state = StateStore(tmp_path / "worker.duckdb")
    ingest(state, raw_file(NOTE, b"\x00\x01binary"), raw_offset=1)
    assert briefed(state, "inference") == [f"rejected {NOTE} (binary)"]
    ingest(state, RawFile(path=NOTE, content=b"", size=0, mtime=0.0, sha256="", deleted=True), raw_offset=2)
    assert briefed(state, "inference") == briefed(state, "risk") == []


def test_a_refused_file_fixed_later_is_a_source_and_no_longer_listed(tmp_path: Path) -> None:
    state = StateStore(tmp_path / "worker.duckdb")
    ingest(state, raw_file(NOTE, b""), raw_offset=1)  # caught between its creation and its first write
    assert briefed(state, "inference") == [f"rejected {NOTE} (empty)"]
    ingest(state, raw_file(NOTE, b"# vLLM\n"), raw_offset=2)
    assert briefed(state, "inference") == ["# vLLM\n"]


def test_a_refused_note_is_listed_in_the_windows_its_stored_version_was_dated_in(tmp_path: Path) -> None:
    # Its name has no stamp and its front matter dates it: the refusal's own time (the file's mtime, front matter
    # unread) falls in another window, but the window its text was briefed in still says what became of it.
    state = StateStore(tmp_path / "worker.duckdb")
    path = "inbox/jay/kv.md"
    ingest(state, raw_file(path, b"---\ndate: 2026-09-27T10:00:00+08:00\n---\n# vLLM\n"), raw_offset=1)
    assert [d.path for d in window_documents(state, "inference", WINDOW)] == [path]
    later = datetime(2026, 12, 3, 9, 0, tzinfo=SH).timestamp()
    ingest(state, raw_file(path, b"\x00\x01binary", later), raw_offset=2)
    assert briefed(state, "inference") == [f"rejected {path} (binary)"]


def test_a_refused_living_document_is_listed_by_every_briefing_of_its_axis(tmp_path: Path) -> None:
    state = StateStore(tmp_path / "worker.duckdb")
    living = "living/inference.md"
    ingest(state, raw_file(living, b"# inference.md v3.44\n\n## \xc2\xa71 KV cache\n\ntext\n"), raw_offset=1)
    assert state.living_document("inference") is not None
    refused = symlink(living).model_copy(update={"mtime": (SEEN - timedelta(days=5)).timestamp()})
    ingest(state, refused, raw_offset=2)
    assert state.living_document("inference") is None  # the file on disk is no living document
    week_later = window_bounds(WINDOW.end + timedelta(days=7), timedelta(hours=24))
    for window in (WINDOW, week_later):
        assert [r.path for r in state.rejections(window, "inference")] == [living]
        assert state.rejections(window, "risk") == []  # never its axis: listed only in its own time's window


def test_a_refused_living_document_fixed_later_is_listed_by_no_axis_and_its_page_says_it_is_briefed(
    tmp_path: Path,
) -> None:
    # Its refusal went to every axis (its kind unread), its fixed version only to its own: the other axes' refusals
    # are older than the path's latest record, so no briefing lists it, and its note page does not say refused.
    state = StateStore(tmp_path / "worker.duckdb")
    living = "living/inference.md"
    text = b"# inference.md v3.44\n\n## \xc2\xa71 KV cache\n\ntext\n"
    ingest(state, raw_file(living, text), raw_offset=1)
    ingest(
        state, raw_file(living, b"", SEEN.timestamp()), raw_offset=2
    )  # an editor's truncate before its write
    assert [r.path for r in state.rejections(WINDOW, "risk")] == [living]
    ingest(state, raw_file(living, text + b"more\n"), raw_offset=3)
    assert state.living_document("inference") is not None
    assert state.rejections(WINDOW, "inference") == state.rejections(WINDOW, "risk") == []
    with state.reader() as reader:
        note = reader.note(living)
        assert note is not None and note.refused == ""


def test_status_reads_every_axis_s_refused_files_at_once_each_axis_its_own_and_the_rows_without_one(
    tmp_path: Path,
) -> None:
    # `GET /status` reads them in one query (the documents' paths scanned once, not once per axis): each axis
    # still counts only its own rows and those without an axis, and names its own newest.
    state = StateStore(tmp_path / "worker.duckdb")
    blob, fixed, legacy = (
        "inbox/jay/2026-09-27-0900-blob.md",
        "inbox/jay/2026-09-27-1100-b.md",
        "inbox/old.md",
    )
    refuse(state, blob, SEEN)  # routed when inference was the only axis configured
    ingest(state, symlink(NOTE), raw_offset=2)  # to both axes
    ingest(state, raw_file(fixed, b"\x00\x01"), raw_offset=3)
    ingest(state, raw_file(fixed, b"# b\n\nreadable now\n"), raw_offset=4)
    old = EventHeader(
        type="rejection", path=legacy, sha256="x", seen_at=SEEN - timedelta(hours=1), reason="old"
    )
    state.apply_batch([(DocumentRecord(old), None)])  # a record from before rejections had an axis
    with state.reader() as reader:
        found = reader.counts.refusals(["inference", "risk", "llm-infra"])
    newest = {axis: (f.count, f.newest.path if f.newest else None) for axis, f in found.items()}
    assert newest == {"inference": (3, NOTE), "risk": (2, NOTE), "llm-infra": (1, legacy)}
