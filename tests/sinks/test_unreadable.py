"""A stored note whose body does not read back: reported like any damaged one, and what mends it."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest

from processors.models import WindowBounds
from processors.summary_parts import SummaryRows
from processors.wire import StoredDocument, store_document
from processors.wire_frames import pack_body
from sinks.state import StateStore
from sinks.unreadable import Unreadable, whole_documents
from tests.state_support import document_record, parsed
from tests.streams.agent_support import END


def test_a_body_of_the_wrong_shape_is_reported_and_the_others_read() -> None:
    good = store_document(parsed("inbox/jay/a.md", "# KV cache\nvLLM paged attention\n"))
    summary, frame = good.summary_json, good.body_frame()
    assert isinstance(summary, str)
    unreadable = Unreadable()
    whole = SummaryRows(summary, summary)  # every field kept in `contents`' part of it
    rows = [
        ("inbox/jay/a.md", "inference", whole, frame),
        ("inbox/jay/b.md", "inference", whole, pack_body(b'{"txt":"x","sections":[]}')),
        ("inbox/jay/c.md", "inference", SummaryRows(summary, '{"headings":['), frame),  # its rest damaged
    ]
    [doc] = whole_documents(rows, unreadable)
    assert doc.path == "inbox/jay/a.md"
    listed = unreadable.of("inference")
    assert [(r.path, r.reason_code) for r in listed] == [
        ("inbox/jay/b.md", "damaged"),
        ("inbox/jay/c.md", "damaged"),
    ]


def test_a_briefing_lists_only_its_own_axiss_damaged_notes() -> None:
    # A briefing reads every axis's living document: another axis's damaged one is that axis's briefing's to list.
    unreadable = Unreadable()
    unreadable.report("living/serving.md", "serving", ValueError("not UTF-8"))
    unreadable.report("inbox/jay/a.md", "inference", ValueError("not UTF-8"))
    assert [r.path for r in unreadable.of("inference")] == ["inbox/jay/a.md"]
    assert [r.path for r in unreadable.of("serving")] == ["living/serving.md"]


def test_the_same_content_ingested_again_keeps_the_damaged_copy(tmp_path: Path) -> None:
    # What the alert and docs/guarantees.md tell the operator: a stored (path, sha256) is never written again, so
    # neither the same file again nor a rebuild (which replays the same record) mends it; a new version does.
    state = StateStore(tmp_path / "worker.duckdb")
    doc = parsed("inbox/jay/2026-09-27-1000-kv.md", "# KV\nvLLM paged attention KV cache\n")
    good = document_record("inference", doc, 1)
    assert good.stored is not None
    frame = pack_body(b'{"text":"\xff","sections":[]}')
    damaged = replace(good, stored=StoredDocument(good.stored.summary_json, frame, packed=True))
    state.apply_batch([(damaged, None)])
    state.apply_batch([(document_record("inference", doc, 2), None)])
    with state.reader() as reader:
        note = reader.note(doc.path)
        assert note is not None and note.document is None and "not UTF-8" in note.unreadable
    edited = parsed(doc.path, "# KV\nvLLM paged attention KV cache, edited\n")
    state.apply_batch([(document_record("inference", edited, 3), None)])
    with state.reader() as reader:
        note = reader.note(doc.path)
        assert note is not None and note.document is not None and note.document.text == edited.text
    state.close()


@pytest.mark.parametrize("table", ["source_rows", "contents"])
def test_a_version_missing_a_stored_row_is_reported_by_every_whole_reader(tmp_path: Path, table: str) -> None:
    # Each reader of whole notes (the briefing's baseline, living documents, window; the browser's note) joined
    # `contents` to `source_rows`: a version lacking either row was left out without a word.
    state = StateStore(tmp_path / "worker.duckdb")
    paths = [
        ("inbox/jay/2026-09-27-1000-kv.md", "# KV\nvLLM paged attention KV cache\n"),
        ("inbox/jay/2026-09-27-1100-spec.md", "# Spec\nspeculative decoding vLLM draft model\n"),
        ("inbox/tom/2026-09-26-inference-e1prep.md", "# inference · E1\n\n| 2605.01604 | 七大失败模式 |\n"),
        ("living/inference.md", "# inference.md v3\n\nvLLM serving\n"),
    ]
    docs = [parsed(p, t) for p, t in paths]
    state.apply_batch([(document_record("inference", d, n), None) for n, d in enumerate(docs)])
    good, *gone = (d.path for d in docs)
    state._db.execute(f"DELETE FROM {table} WHERE path = ANY(?)", [gone])
    unreadable, window = state.unreadable(), WindowBounds(start=END - timedelta(days=1), end=END)
    assert (
        state.latest_baseline("inference", window.start, window.start - timedelta(days=1), unreadable) is None
    )
    assert state.living_documents(["inference"], unreadable) == {"inference": None}
    stored = state.window("inference", window)
    assert [d.path for d in stored.load([good, gone[0]])] == [good]
    stored.close()
    row = "source" if table == "source_rows" else "contents"
    listed = [*unreadable.of("inference"), *stored.unreadable.of("inference")]
    assert sorted((r.path, r.reason_code) for r in listed) == sorted((p, "row_missing") for p in gone)
    assert all(f"its {row} row is missing from the state" in r.reason for r in listed)
    with state.reader() as reader:
        note = reader.note(gone[0])
        assert note is not None and note.document is None and f"its {row} row is missing" in note.unreadable
    state.close()


def test_a_superseded_version_missing_its_source_row_is_listed_when_its_note_is_not_otherwise(
    tmp_path: Path,
) -> None:
    # A note edited after the window (its new version dated after it) is listed by the window's briefing as its
    # superseded version alone: that version's source row missing, the pin set it apart without a line.
    state = StateStore(tmp_path / "worker.duckdb")
    window = WindowBounds(start=END - timedelta(days=1), end=END)
    old = parsed("inbox/jay/kv.md", "# KV\nvLLM paged attention KV cache\n")
    old = old.model_copy(update={"event_time": END - timedelta(hours=2)})
    new = parsed(old.path, "# KV\nvLLM paged attention KV cache, edited\n")
    new = new.model_copy(update={"event_time": END + timedelta(hours=2)})
    kept = parsed("inbox/jay/spec.md", "# Spec\nspeculative decoding vLLM draft model\n")
    kept = kept.model_copy(update={"event_time": END - timedelta(hours=3)})
    edit = parsed(kept.path, "# Spec\nspeculative decoding vLLM draft model, edited\n")
    edit = edit.model_copy(update={"event_time": END - timedelta(hours=1)})
    docs = [old, kept, new, edit]
    state.apply_batch([(document_record("inference", d, n), None) for n, d in enumerate(docs)])
    before = state.window("inference", window)
    assert sorted(r.doc.path for r in before.superseded(())) == [old.path, kept.path]
    before.close()
    # Both superseded versions lose their source rows: the one whose note is a source of the window says nothing
    # more (its note is listed, as its current version); the other is listed damaged.
    state._db.execute("DELETE FROM source_rows WHERE sha256 = ANY(?)", [[old.sha256, kept.sha256]])
    stored = state.window("inference", window)
    assert stored.superseded(()) == [] and [d.path for d in stored.load([kept.path])] == [kept.path]
    listed = stored.unreadable.of("inference")
    assert [(r.path, r.reason_code) for r in listed] == [(old.path, "row_missing")]
    assert "its source row is missing from the state" in listed[0].reason
    stored.close()
    state.close()
