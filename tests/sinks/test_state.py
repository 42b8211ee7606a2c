"""The worker's DuckDB state on a real file: idempotent writes, supersede, deletions, emissions."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import duckdb
import pytest

from processors.documents import parse_document
from processors.models import Document, RawFile
from processors.window import window_bounds
from sinks.errors import StateLockedError
from sinks.state import StateStore
from tests.state_support import delete_path, put_document, superseded_summaries, window_documents

SH = ZoneInfo("Asia/Shanghai")
WINDOW = window_bounds(datetime(2026, 9, 27, 22, 20, tzinfo=SH), timedelta(hours=24))


def parsed(path: str, text: str) -> Document:
    data = text.encode()
    raw = RawFile(path=path, content=data, size=len(data), mtime=0.0, sha256=hashlib.sha256(data).hexdigest())
    return parse_document(raw, zone=SH)


@pytest.fixture
def state(tmp_path: Path) -> StateStore:
    return StateStore(tmp_path / "worker.duckdb")


def test_a_replayed_document_changes_nothing(state: StateStore) -> None:
    doc = parsed("inbox/jay/2026-09-27-1000-a.md", "# a\nvLLM")
    assert put_document(state, "inference", doc, raw_offset=7) is True
    assert put_document(state, "inference", doc, raw_offset=7) is False
    assert [d.path for d in window_documents(state, "inference", WINDOW)] == [doc.path]


def test_a_new_version_of_a_path_supersedes_the_old_one(state: StateStore) -> None:
    old = parsed("inbox/jay/2026-09-27-1000-a.md", "# a\nfirst")
    new = parsed("inbox/jay/2026-09-27-1000-a.md", "# a\nsecond, edited")
    put_document(state, "inference", old, raw_offset=1)
    put_document(state, "inference", new, raw_offset=2)
    assert [d.sha256 for d in window_documents(state, "inference", WINDOW)] == [new.sha256]
    assert [d.sha256 for d in superseded_summaries(state, "inference", WINDOW)] == [old.sha256]
    # Replaying the old version after the new one must not bring it back.
    assert put_document(state, "inference", old, raw_offset=1) is False
    assert [d.sha256 for d in window_documents(state, "inference", WINDOW)] == [new.sha256]


def test_a_deleted_path_leaves_the_window(state: StateStore) -> None:
    doc = parsed("inbox/jay/2026-09-27-1000-a.md", "# a")
    put_document(state, "inference", doc, raw_offset=1)
    delete_path(state, "inference", doc.path, datetime.now(UTC), raw_offset=2)
    assert window_documents(state, "inference", WINDOW) == []


def test_documents_outside_the_window_are_left_out(state: StateStore) -> None:
    put_document(state, "inference", parsed("inbox/tom/2026-09-20-0900-old.md", "# old"), raw_offset=1)
    put_document(
        state, "inference", parsed("inbox/tom/2026-09-27-2220-at-end.md", "# end is open"), raw_offset=2
    )
    put_document(
        state, "inference", parsed("inbox/tom/2026-09-26-2220-at-start.md", "# start is closed"), raw_offset=3
    )
    assert [d.path for d in window_documents(state, "inference", WINDOW)] == [
        "inbox/tom/2026-09-26-2220-at-start.md"
    ]


def test_a_second_process_gets_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "worker.duckdb"
    held = StateStore(path)
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(1) as pool:
        message = pool.apply(_open_in_child, (str(path),))
    assert "Only the worker or a rebuild opens it, one at a time" in message
    held.close()


def _open_in_child(path: str) -> str:
    try:
        StateStore(Path(path))
    except StateLockedError as exc:
        return str(exc)
    return "opened"


def test_a_state_left_in_a_transaction_does_not_answer(tmp_path: Path) -> None:
    # What a command that failed every attempt is judged by (streams.command_failures): a count alone answers inside
    # a transaction a failed answer left open, and every later write's BEGIN then fails; one left aborted too.
    state = StateStore(tmp_path / "state.duckdb")
    assert state.answers() == 0
    state._db.begin()
    assert state.document_count() == 0  # the count alone
    with pytest.raises(duckdb.TransactionException):
        state.answers()
    with pytest.raises(duckdb.Error):
        state._db.execute("SELECT CAST('x' AS INTEGER)")  # the transaction aborted
    with pytest.raises(duckdb.TransactionException):
        state.answers()
    state._db.rollback()
    assert state.answers() == 0
    state.close()
