"""A note's summary and body reach `contents` as they came, whatever their characters: the state hands them to
DuckDB as Arrow columns encoded outside the GIL (predigest_native.TextColumns), not through the appender."""

from __future__ import annotations

import gc
from datetime import datetime, timedelta
from pathlib import Path

import duckdb
import pytest
from predigest_native import TextColumns, is_utf8

from processors.summary_parts import whole_summary
from processors.window import window_bounds
from processors.wire import DocumentRecord, StoredDocument
from processors.wire_frames import unpack_body
from sinks.state import Position, StateStore
from sinks.summary_rows import with_rows
from tests.state_support import SH, document_record, parsed, window_documents

WINDOW = window_bounds(datetime(2026, 9, 27, 22, 20, tzinfo=SH), timedelta(hours=24))
# Python keeps each string as 1, 2 or 4 bytes a character, by its widest: each is encoded its own way.
TEXTS = {
    "ascii": "# Serving notes\n\nKV cache paging.\n",
    "latin-1": "# Café notes\n\nÿ, é and naïve.\n",
    "cjk": "# 笔记：推理\n\n思维链（CoT）推理已广泛应用。\n",
    "astral": "# Emoji 😀 notes\n\n𝔘𝔫𝔦𝔠𝔬𝔡𝔢 and 🚀.\n",
    "large": "# Long\n\n" + "一段很长的文字。 a long line of a note\n" * 20_000,
}


def test_every_kind_of_text_is_stored_and_read_back_as_it_came(tmp_path: Path) -> None:
    docs = [
        parsed(f"inbox/jay/2026-09-27-10{i:02d}-{name}.md", t) for i, (name, t) in enumerate(TEXTS.items())
    ]
    records = [document_record("inference", doc, raw_offset=i) for i, doc in enumerate(docs)]
    state = StateStore(tmp_path / "state.duckdb")
    items = [(record, Position("predigest.documents", 0, i)) for i, record in enumerate(records)]
    assert state.apply_batch(items) == [True] * len(records)
    state.close()
    with duckdb.connect(str(tmp_path / "state.duckdb"), read_only=True) as db:
        stored = db.execute(
            "SELECT c.path, c.sha256, c.summary_json, c.body_zst, r.vid, r.summary_json FROM contents c "
            "JOIN source_rows r ON r.path = c.path AND r.sha256 = c.sha256"
        ).fetchall()
        whole = with_rows(db, stored)  # (path, sha256 in the axis's place, its summary rows, body)
    # Each summary rebuilt from its rows as it came; each body its zstd frame, which unpacks to its JSON as the
    # record carried it.
    rows = [
        (path, sha, whole_summary(summary).decode(), bytes(unpack_body(body or b"")).decode())
        for path, sha, summary, body in whole  # inner joins: each with its body
    ]
    expected = []
    for record in records:
        assert record.stored is not None
        expected.append(
            (record.header.path, record.header.sha256, record.stored.summary_json, record.stored.body_json)
        )
    assert sorted(rows) == sorted(expected)
    reopened = StateStore(tmp_path / "state.duckdb")
    assert [d.text for d in window_documents(reopened, "inference", WINDOW)] == [d.text for d in docs]
    reopened.close()


@pytest.mark.parametrize("text", ["\ud800", "x\ud83d\ude00", "é\udfff", "😀\ud800"])
def test_a_text_python_cannot_encode_is_refused_before_duckdb_sees_it(text: str) -> None:
    # Surrogates cannot come from decoded bytes (a pair in a str is two of them, not an emoji); `str.encode`, and
    # so the appender before, refused them too.
    with pytest.raises(UnicodeEncodeError):
        text.encode()
    with pytest.raises(ValueError, match="surrogate"):
        TextColumns(["path", "text"], [["a.md"], [text]])


def test_a_batch_of_texts_reads_alike_twice_with_zero_rows_or_its_object_gone() -> None:
    # DuckDB may read an Arrow stream more than once (a retried insert) and after the batch's Python object is
    # dropped: the texts must come back the same each time, and an empty batch must read as no rows.
    texts = [*TEXTS.values(), "", "\x00 inside"]
    con = duckdb.connect()
    try:
        columns = TextColumns(["path", "text"], [[str(i) for i in range(len(texts))], texts])
        relation = con.from_arrow(columns)
        del columns
        gc.collect()
        expected = [(str(i), t) for i, t in enumerate(texts)]
        assert relation.fetchall() == expected
        assert relation.fetchall() == expected
        assert con.from_arrow(TextColumns(["path", "text"], [[], []])).fetchall() == []
    finally:
        con.close()


def test_summaries_and_bodies_kept_as_their_utf8_bytes_are_stored_as_the_same_text(tmp_path: Path) -> None:
    # A decoded record's summary and body are the UTF-8 its record carried (processors.wire): DuckDB gets those
    # bytes as they are, and every kind of text reads back as from a `str`.
    docs = [parsed(f"inbox/jay/2026-09-27-11{i:02d}-{n}.md", t) for i, (n, t) in enumerate(TEXTS.items())]
    records = []
    for i, doc in enumerate(docs):
        record = document_record("inference", doc, raw_offset=i)
        stored = record.stored
        assert (
            stored is not None and isinstance(stored.summary_json, str) and isinstance(stored.body_json, str)
        )
        carried = StoredDocument(stored.summary_json.encode(), stored.body_json.encode())
        records.append(DocumentRecord(record.header, carried))
    state = StateStore(tmp_path / "state.duckdb")
    items = [(record, Position("predigest.documents", 0, i)) for i, record in enumerate(records)]
    assert state.apply_batch(items) == [True] * len(records)
    assert [d.text for d in window_documents(state, "inference", WINDOW)] == [d.text for d in docs]
    state.close()


def test_bytes_cells_are_read_as_their_text_and_refused_unless_utf8() -> None:
    con = duckdb.connect()
    try:
        texts = list(TEXTS.values())
        columns = TextColumns(["s", "b"], [texts, [t.encode() for t in texts]])
        assert con.from_arrow(columns).fetchall() == [(t, t) for t in texts]
    finally:
        con.close()
    for damaged in (b"\xff", "é".encode()[:1], "\ud800".encode(errors="surrogatepass")):
        assert not is_utf8(damaged)
        with pytest.raises(ValueError, match="not UTF-8"):
            TextColumns(["b"], [[b"ok", damaged]])
    assert all(is_utf8(t.encode()) for t in texts)


def test_a_blob_column_holds_its_bytes_as_they_are_and_refuses_text() -> None:
    # A note's body is stored as the zstd frame its record carried (contents.body_zst): any bytes, not UTF-8.
    frames = [b"\x28\xb5\x2f\xfd\xff\x00", b"", b"\n\x00\xff" * 1000]
    con = duckdb.connect()
    try:
        columns = TextColumns(["path", "blob:body"], [["a", "b", "c"], frames])
        assert con.from_arrow(columns).fetchall() == list(zip(["a", "b", "c"], frames, strict=True))
        assert con.from_arrow(columns).types[1] == "BLOB"
    finally:
        con.close()
    with pytest.raises(ValueError, match="not bytes"):
        TextColumns(["blob:body"], [["text"]])


def test_a_stored_body_frame_that_does_not_unpack_leaves_its_note_out_naming_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    docs = [
        parsed(f"inbox/jay/2026-09-27-10{i:02d}-kv.md", f"# KV {i}\n\nKV cache paging {i}.\n")
        for i in range(3)
    ]
    path = tmp_path / "state.duckdb"
    state = StateStore(path)
    items = [
        (document_record("inference", d, raw_offset=i), Position("predigest.documents", 0, i))
        for i, d in enumerate(docs)
    ]
    assert state.apply_batch(items) == [True] * 3
    state.close()
    with duckdb.connect(str(path)) as db:  # a damaged frame in the state: a header that declares no size
        db.execute(
            "UPDATE contents SET body_zst = '\\x28\\xb5\\x2f\\xfd\\x00'::BLOB WHERE path = ?", [docs[1].path]
        )
    state = StateStore(path)
    window = state.window("inference", WINDOW)  # as a briefing reads its sources (StoredWindow.load)
    try:
        kept = window.load([d.path for d in docs])
    finally:
        window.close()
        state.close()
    assert [d.path for d in kept] == [docs[0].path, docs[2].path]
    assert docs[1].path in caplog.text and "body frame" in caplog.text
