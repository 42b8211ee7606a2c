"""A state file of another schema version is refused with one error that names `predigest rebuild`."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest
from predigest_native import FactRows

from processors.source_facts import source_facts
from processors.wire import store_document
from sinks import schema
from sinks.documents import CONTENT_COLUMNS, DOCUMENT_COLUMNS
from sinks.errors import RebuildRequiredError
from sinks.source_rows import SOURCE_ROW_COLUMNS
from sinks.state import StateStore
from sinks.state_files import check_version, open_state
from tests.state_support import parsed, put_document

NOW = datetime(2026, 9, 28, 1, 2, 3, tzinfo=UTC)


def _file_of_version_1(path: Path) -> None:
    """The tables as predigest wrote them before the version was recorded (columns added in place later)."""
    db = duckdb.connect(str(path))
    db.execute(
        "CREATE SEQUENCE doc_seq; CREATE TABLE documents (axis VARCHAR NOT NULL, path VARCHAR NOT NULL, "
        "sha256 VARCHAR NOT NULL, seq BIGINT NOT NULL, event_time TIMESTAMPTZ NOT NULL, kind VARCHAR NOT NULL, "
        "current BOOLEAN NOT NULL, doc_json VARCHAR NOT NULL, PRIMARY KEY (axis, path, sha256));"
        "CREATE TABLE emissions (axis VARCHAR NOT NULL, window_end TIMESTAMPTZ NOT NULL, trigger VARCHAR NOT NULL,"
        " basename VARCHAR NOT NULL, emitted_at TIMESTAMPTZ NOT NULL, briefing_json VARCHAR NOT NULL,"
        " PRIMARY KEY (axis, window_end, trigger))"
    )
    db.close()


def test_a_file_of_the_older_schema_asks_for_a_rebuild_and_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "worker.duckdb"
    _file_of_version_1(path)
    before = path.read_bytes()
    with pytest.raises(
        RebuildRequiredError, match=r"schema version 1, written by an older .*`predigest rebuild`"
    ):
        StateStore(path)
    # The worker stops on it too (nothing set aside behind the operator's back) and the file is untouched.
    with pytest.raises(RebuildRequiredError):
        open_state(path, NOW)
    assert path.read_bytes() == before
    assert sorted(tmp_path.iterdir()) == [path, tmp_path / "worker.duckdb.lock"]  # its claim's, kept


def test_a_file_of_a_newer_schema_is_refused_too(tmp_path: Path) -> None:
    path = tmp_path / "worker.duckdb"
    StateStore(path).close()
    db = duckdb.connect(str(path))
    db.execute("UPDATE schema_version SET version = ?", [schema.VERSION + 1])
    db.close()
    with pytest.raises(RebuildRequiredError, match="written by a newer predigest"):
        StateStore(path)


def test_a_new_file_records_its_version_and_opens_again(tmp_path: Path) -> None:
    path = tmp_path / "worker.duckdb"
    StateStore(path).close()
    StateStore(path).close()
    db = duckdb.connect(str(path))
    assert db.execute("SELECT version FROM schema_version").fetchall() == [(schema.VERSION,)]
    db.close()


def test_the_worker_checks_the_version_before_it_starts(tmp_path: Path) -> None:
    path = tmp_path / "worker.duckdb"
    check_version(path)  # absent: the worker creates it
    _file_of_version_1(path)
    with pytest.raises(RebuildRequiredError):
        check_version(path)
    path.write_bytes(b"not a database" * 100)
    check_version(path)  # damaged: left to open_state, which sets it aside and counts it


def test_a_file_of_schema_4_is_rebuilt_not_migrated(tmp_path: Path) -> None:
    """Only versions 5 and 6 are migrated in place (tests/sinks/test_schema_migration.py): an older one is refused
    with the rebuild's instructions, never read half old, half new."""
    path = tmp_path / "worker.duckdb"
    state = StateStore(path)
    state._db.execute("UPDATE schema_version SET version = 4")
    state.close()
    with pytest.raises(
        RebuildRequiredError, match=r"version 4, written by an older predigest.*predigest rebuild"
    ):
        StateStore(path)
    with pytest.raises(RebuildRequiredError):
        check_version(path)


def test_the_batches_a_store_inserts_name_the_tables_columns_in_their_order(tmp_path: Path) -> None:
    # The Arrow batches are inserted by position (`insert_into`): a column added to a table, or moved, must fail
    # here rather than store each value under its neighbour's name.
    db = duckdb.connect(str(tmp_path / "worker.duckdb"))
    schema.ensure(db, tmp_path / "worker.duckdb")
    inserted = {
        "documents": DOCUMENT_COLUMNS,
        "contents": CONTENT_COLUMNS,
        "source_rows": SOURCE_ROW_COLUMNS,
        "source_terms": tuple(db.from_arrow(FactRows.terms([1], ['{"a":1}'])).columns),
        "source_signatures": tuple(db.from_arrow(FactRows.signatures([1], ["[1]"], 1)).columns),
    }
    for table, columns in inserted.items():
        rows = db.execute(
            "SELECT column_name FROM duckdb_columns() WHERE table_name = ? ORDER BY column_index", [table]
        ).fetchall()
        assert tuple(name for (name,) in rows) == columns, table
    db.close()


def test_a_stored_note_s_rows_hold_each_value_under_its_own_column() -> None:
    # The rows are built as tuples and inserted by position: a tuple reordered against its column names would
    # store the topic as the text hash (both text), which the name-order test above does not see.
    doc = parsed(
        "inbox/jay/2026-09-27-1000-kv.md",
        "---\ntitle: KV cache eviction\n---\n# KV cache eviction\n\nSee arXiv:2401.00001 on vLLM paging.\n",
    )
    state = StateStore(Path(":memory:"))
    assert put_document(state, "inference", doc, raw_offset=7)
    facts = source_facts(store_document(doc).summary_json)
    got = state._db.execute(
        "SELECT path, sha256, text_hash, length, counted, arxiv_ids, topic, summary_json FROM source_rows"
    ).fetchall()
    assert got == [
        (
            doc.path,
            doc.sha256,
            facts.text_hash,
            facts.length,
            facts.counted,
            list(facts.arxiv_ids),
            facts.topic,
            facts.summary_json,
        )
    ]
    documents = state._db.execute(
        "SELECT axis, path, sha256, raw_offset, event_time, kind, current FROM documents"
    ).fetchall()
    assert documents == [("inference", doc.path, doc.sha256, 7, doc.event_time, doc.kind, True)]
    state.close()
