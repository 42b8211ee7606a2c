"""A stored note whose body does not read back: reported like any damaged one, and what mends it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from processors.summary_parts import SummaryRows
from processors.wire import StoredDocument, store_document
from processors.wire_frames import pack_body
from sinks.state import StateStore
from sinks.unreadable import Unreadable, whole_documents
from tests.state_support import document_record, parsed


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
