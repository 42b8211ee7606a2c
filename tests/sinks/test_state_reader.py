"""Reads on a cursor of their own (another thread, while the worker writes), and a damaged state replaced in place."""

from __future__ import annotations

import os
import threading
import time
from datetime import datetime, timedelta
from pathlib import Path

import duckdb
import pytest

from processors.models import Briefing, Claim, Discrepancy
from processors.window import window_bounds
from processors.window_set import window_duplicates
from sinks.errors import StateUnreadableError
from sinks.state import StateStore
from sinks.state_files import replace_state
from tests.state_support import SH, delete_path, empty_briefing, parsed, put_document, window_summaries

END = datetime(2026, 9, 27, 22, 20, tzinfo=SH)
WINDOW = window_bounds(END, timedelta(hours=24))
TEXT = (
    "# KV cache 推理\n\nvLLM serving: arXiv:2609.23130 cache hit 92.2% on a long context benchmark suite.\n"
)


def _briefing(end: datetime, trigger: str = "close", d_items: tuple[str, ...] = ()) -> Briefing:
    b = empty_briefing(end)
    found = [
        Discrepancy(
            id=d,
            kind="flagged",
            subject=f"subject of {d}",
            claims=[Claim(text="t", source="s")],
            suggestion="",
        )
        for d in d_items
    ]
    return b.model_copy(update={"trigger": trigger, "discrepancies": found})


def test_the_status_reads_on_a_cursor_match_the_state(tmp_path: Path) -> None:
    state = StateStore(tmp_path / "worker.duckdb")
    for i, path in enumerate(("inbox/jay/2026-09-27-0900-a.md", "inbox/tom/2026-09-27-1000-b.md")):
        put_document(state, "inference", parsed(path, TEXT), raw_offset=i)
    put_document(
        state,
        "inference",
        parsed("inbox/tom/2026-09-27-1100-c.md", "# other\n\nsomething else\n"),
        raw_offset=3,
    )
    before = state.counts.window_document_count("inference", WINDOW)
    with state.reader() as reader:
        window = reader.window("inference", WINDOW)
        summaries = window_summaries(state, "inference", WINDOW)
        # The same duplicates as from the whole summaries, out of the rows stored with each version.
        assert window.duplicates(0.8) == window_duplicates(summaries, 0.8) != {}
        assert window.size() == 3
        window.close()
        assert reader.counts.window_document_count("inference", WINDOW) == before == 3
    delete_path(state, "inference", "inbox/tom/2026-09-27-1100-c.md", END, raw_offset=4)
    assert state.counts.window_document_count("inference", WINDOW) == 2  # the deleted one has left the window


def test_a_reader_reads_in_another_thread_while_the_state_is_written(tmp_path: Path) -> None:
    state = StateStore(tmp_path / "worker.duckdb")
    reader = state.reader()
    seen: list[int] = []
    thread = threading.Thread(target=lambda: seen.extend(reader.counts.document_count() for _ in range(50)))
    thread.start()
    for i in range(20):
        put_document(
            state,
            "inference",
            parsed(f"inbox/jay/2026-09-27-09{i:02d}-n.md", f"# n{i}\n\ntext {i}\n"),
            raw_offset=i,
        )
    thread.join()
    reader.close()
    assert seen == sorted(seen) and seen[-1] <= 20  # each read a consistent state, never one ahead


def test_a_stored_note_comes_back_whole_with_its_versions(tmp_path: Path) -> None:
    state = StateStore(tmp_path / "worker.duckdb")
    path = "inbox/jay/2026-09-27-0900-a.md"
    put_document(state, "inference", parsed(path, TEXT), raw_offset=1)
    put_document(state, "risk", parsed(path, TEXT), raw_offset=1)
    edited = parsed(path, TEXT + "\n## §2 More\n\nedited\n")
    put_document(state, "inference", edited, raw_offset=2)
    with state.reader() as reader:
        note = reader.note(path)
        assert note is not None and note.document is not None and not note.unreadable
        assert note.sha256 == edited.sha256 and note.document.text == edited.text
        assert [v.current for v in note.versions] == [True, True]  # the old one is still current on risk
        assert [s.heading for s in note.document.sections][-1] == "§2 More"
        older = reader.note(path, next(v.sha256 for v in note.versions if v.sha256 != edited.sha256))
        assert older is not None and older.document is not None and "edited" not in older.document.text
        assert reader.note("inbox/jay/never.md") is None
        assert not note.deleted
    delete_path(state, "inference", path, END, raw_offset=3)
    delete_path(state, "risk", path, END, raw_offset=3)
    with state.reader() as reader:
        gone = reader.note(path)
        assert gone is not None and gone.deleted


def test_the_index_and_the_history_reads_of_the_emissions(tmp_path: Path) -> None:
    state = StateStore(tmp_path / "worker.duckdb")
    day = timedelta(days=1)
    for end, trigger, ds in (
        (END - day, "close", ("D1",)),
        (END, "flush", ("D1", "D2")),
        (END, "close", ("D2",)),
    ):
        b = _briefing(end, trigger, ds)
        state.record_emission(
            b,
            f"{end:%m%d}-{trigger}",
            "# md\n",
            emitted_at=end + timedelta(minutes=1 if trigger == "close" else 0),
        )
    entries = state.emissions.entries()
    assert [(e.window_end, e.trigger, e.discrepancies) for e in entries] == [
        (END - day, "close", 1),
        (END, "flush", 2),
        (END, "close", 1),
    ]
    found = state.emissions.by_basename("inference", f"{END:%m%d}-flush")
    assert (
        found is not None and found.trigger == "flush" and [d.id for d in found.discrepancies] == ["D1", "D2"]
    )
    assert state.emissions.by_basename("risk", f"{END:%m%d}-flush") is None  # another axis's name
    lists = state.emissions.discrepancy_lists("inference")
    assert [(t, '"D2"' in d) for _, t, d in lists] == [("close", False), ("flush", True), ("close", True)]


def test_the_integrity_check_on_a_cursor_finds_a_cut_file(tmp_path: Path) -> None:
    path = tmp_path / "worker.duckdb"
    state = StateStore(path)
    for i in range(30):
        put_document(
            state,
            "inference",
            parsed(f"inbox/jay/2026-09-27-09{i:02d}-n.md", TEXT * 20 + str(i)),
            raw_offset=i,
        )
    state._db.execute("CHECKPOINT")
    with state.reader() as reader:
        reader.check()
    os.truncate(path, path.stat().st_size // 2)
    with state.reader() as reader, pytest.raises(StateUnreadableError, match="truncated"):
        reader.check()


def test_a_replaced_state_closes_every_cursor_and_opens_a_fresh_file(tmp_path: Path) -> None:
    path = tmp_path / "worker.duckdb"
    state = StateStore(path)
    put_document(state, "inference", parsed("inbox/jay/2026-09-27-0900-a.md", TEXT), raw_offset=1)
    reader = state.reader()  # a status read still holding its cursor
    fresh, aside = replace_state(state, path, END)
    assert aside is not None and aside.name.startswith("worker.duckdb.unreadable-")
    # DuckDB would hand a new connection the old database if any connection to it stayed open.
    assert fresh.document_count() == 0
    with pytest.raises(duckdb.Error):
        reader.counts.document_count()
    fresh.close()


def test_a_state_closed_while_a_read_runs_stops_the_read_and_closes(tmp_path: Path) -> None:
    """A clean shutdown with a briefing or /status still reading: DuckDB refused to close ("ResourceInUse"); the
    read is interrupted instead, and the file is closed, so it opens again at once (one writer per file)."""
    path = tmp_path / "worker.duckdb"
    state = StateStore(path)
    put_document(state, "inference", parsed("inbox/jay/2026-09-27-1000-kv.md", TEXT), raw_offset=0)
    reader = state.reader()
    running = threading.Event()
    outcome: list[BaseException | None] = []

    def read() -> None:
        running.set()
        try:  # a read that runs until something stops it
            reader._db.execute("SELECT sum(i * i) FROM range(1000000000000000) t(i)").fetchall()
            outcome.append(None)
        except duckdb.Error as exc:
            outcome.append(exc)

    busy = threading.Thread(target=read, daemon=True)
    busy.start()
    running.wait()
    time.sleep(0.05)  # the query is running
    state.close()
    busy.join(timeout=10)
    assert len(outcome) == 1 and isinstance(outcome[0], duckdb.Error), outcome
    again = StateStore(path)
    try:
        assert again.document_count() == 1
    finally:
        again.close()
