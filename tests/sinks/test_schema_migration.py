"""A schema-8 (or 7, 6, 5) state is migrated in place on open: its rows as a fresh schema-9 state holds them, and a
migration stopped half-way leaves the old file whole, migrated again at the next open."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import duckdb
import pytest

from processors.summary_parts import whole_summary
from processors.window import window_bounds
from processors.wire_frames import pack_body, unpack_body
from sinks import schema, schema_migration
from sinks.errors import StateMemoryError, StateMigrationError
from sinks.state import StateStore
from sinks.state_files import check_version, open_state, reason_to_replace
from sinks.summary_rows import with_rows
from tests.state_support import parsed, put_document, window_documents

_TABLES = "SELECT table_name FROM duckdb_tables() ORDER BY 1"
# Schema 6's contents table, as main wrote it: each body its JSON, compressed by DuckDB.
# Schemas 3 to 8's rejected table: a row per (path, sha256), whatever came after it.
_REJECTED_8 = (
    "CREATE TABLE rejected (path VARCHAR NOT NULL, sha256 VARCHAR NOT NULL, reason VARCHAR NOT NULL, seen_at "
    "TIMESTAMPTZ NOT NULL, reason_code VARCHAR, event_time TIMESTAMPTZ, PRIMARY KEY (path, sha256))"
)
_CONTENTS_6 = (
    "CREATE TABLE contents (path VARCHAR NOT NULL, sha256 VARCHAR NOT NULL, summary_json VARCHAR USING "
    "COMPRESSION zstd NOT NULL, body_json VARCHAR USING COMPRESSION zstd NOT NULL)"
)


def _fresh(path: Path, notes: int = 7) -> None:
    """A schema-7 state of `notes` notes (one of them not ASCII) stored through the window agent's path."""
    state = StateStore(path)
    t0 = datetime(2026, 9, 27, 10, 0, tzinfo=UTC)
    for i in range(notes):
        text = f"---\ntitle: KV {i}\n---\n# KV cache {i}\n\n缓存 eviction {i} " + "word " * (i * 50) + "\n"
        doc = parsed(f"inbox/jay/2026-09-27-{1000 + i}-kv.md", text)
        doc = doc.model_copy(update={"event_time": t0 + timedelta(minutes=i)})
        assert put_document(state, "inference", doc, raw_offset=i)
    state.close()


def _dump(path: Path) -> dict[str, list[tuple[object, ...]]]:
    """Every table's rows but schema_version's, in their stored order (contents by rowid)."""
    db = duckdb.connect(str(path), read_only=True)
    try:
        tables = [t for (t,) in db.execute(_TABLES).fetchall() if t != "schema_version"]
        return {t: db.execute(f"SELECT * FROM {t} ORDER BY rowid").fetchall() for t in tables}
    finally:
        db.close()


def _as_version(path: Path, version: int) -> None:
    """The file rewritten as schema `version` (5 to 8) held it: its rejections without axis or raw offset; before 8,
    each summary whole, term rows without their places; bodies as frames (7) or JSON (5, 6: no emission_bodies in
    5)."""
    db = duckdb.connect(str(path))
    db.execute(
        "CREATE TABLE rejected_8 AS SELECT path, sha256, reason, seen_at, reason_code, event_time FROM rejected"
    )
    db.execute("DROP TABLE rejected")
    db.execute(_REJECTED_8)
    db.execute("INSERT INTO rejected SELECT * FROM rejected_8")
    db.execute("DROP TABLE rejected_8")
    if version < 8:
        _contents_as(db, version)
    db.execute("UPDATE schema_version SET version = ?", [version])
    db.execute("CHECKPOINT")
    db.close()


def _contents_as(db: duckdb.DuckDBPyConnection, version: int) -> None:
    rows = db.execute(
        "SELECT c.path, c.sha256, c.summary_json, c.body_zst, r.vid, r.summary_json FROM contents c "
        "JOIN source_rows r ON r.path = c.path AND r.sha256 = c.sha256 ORDER BY c.rowid"
    ).fetchall()
    old = [(p, sha, whole_summary(summary).decode(), body) for p, sha, summary, body in with_rows(db, rows)]
    db.execute("DROP TABLE contents")
    if version == 7:
        db.execute(schema.CONTENTS.format(table="contents"))
        db.executemany("INSERT INTO contents VALUES (?, ?, ?, ?)", old)
    else:
        db.execute(_CONTENTS_6)
        json_bodies = [(*r[:3], unpack_body(r[3] or b"").decode()) for r in old]  # inner joins: each has one
        db.executemany("INSERT INTO contents VALUES (?, ?, ?, ?)", json_bodies)
    db.execute("CREATE TABLE terms_7 AS SELECT vid, term, n FROM source_terms ORDER BY rowid")
    db.execute("DROP TABLE source_terms")
    db.execute("ALTER TABLE terms_7 RENAME TO source_terms")
    if version == 5:
        db.execute("DROP TABLE emission_bodies")


def _schema_6(tmp_path: Path, notes: int = 7) -> tuple[Path, dict[str, list[tuple[object, ...]]]]:
    """A schema-6 state of `notes` notes, and the rows a fresh schema-7 one of them holds."""
    path = tmp_path / "worker.duckdb"
    _fresh(path, notes)
    fresh = _dump(path)
    _as_version(path, 6)
    return path, fresh


def _version(path: Path) -> tuple[int, list[str]]:
    db = duckdb.connect(str(path), read_only=True)
    try:
        row = db.execute("SELECT version FROM schema_version").fetchone()
        columns = db.execute(
            "SELECT column_name FROM duckdb_columns() WHERE table_name = 'contents' ORDER BY column_index"
        ).fetchall()
        return (row[0] if row else 0), [c for (c,) in columns]
    finally:
        db.close()


@pytest.mark.parametrize("version", [5, 6, 7, 8])
def test_an_older_state_is_migrated_on_open_to_the_rows_a_fresh_one_holds(
    tmp_path: Path, version: int, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "worker.duckdb"
    _fresh(path)
    fresh = _dump(path)
    _as_version(path, version)
    monkeypatch.setattr(schema_migration, "BATCH_ROWS", 3)  # several batches of the 7 notes
    with (
        caplog.at_level(logging.INFO, logger="sinks.schema_migration"),
        caplog.at_level(logging.INFO, logger="sinks.schema"),
    ):
        StateStore(path).close()
    assert _version(path) == (schema.VERSION, ["path", "sha256", "summary_json", "body_zst"])
    # Byte for byte: every summary slimmed and body the frame the parse processes would have made, every term row
    # with its place, in the rows' order.
    assert _dump(path) == fresh
    assert ("migrating to schema 8, 7 / 7 notes copied" in caplog.text) is (version < 8)
    assert (
        f"migrated from schema version {version} to 9" in caplog.text
    )  # what docs/operations.md says to wait for
    StateStore(path).close()  # and opens again as it is
    assert _dump(path) == fresh


def test_the_worker_migrates_before_it_joins_its_group(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # `predigest worker` checks the file before it starts Faust: the migration runs there, not on the event loop,
    # where ~40 s at 100k notes held Kafka's heartbeats, /healthz and a stop.
    path, fresh = _schema_6(tmp_path)
    with caplog.at_level(logging.INFO, logger="sinks.schema"):
        check_version(path)
    assert _version(path)[0] == schema.VERSION and _dump(path) == fresh
    assert "migrated from schema version 6 to 9" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="sinks.schema"):
        check_version(path)  # a current file is only read
    assert "migrated" not in caplog.text


def test_a_schema_8_state_s_rejections_are_listed_as_before_until_their_path_s_next_record(
    tmp_path: Path,
) -> None:
    # Schema 8 kept a row per (path, sha256) whatever came after it: which came last is not known, so each path's
    # latest is kept without an axis, listed on every axis and hiding no version, as before.
    path = tmp_path / "worker.duckdb"
    _fresh(path, notes=2)
    _as_version(path, 8)
    db = duckdb.connect(str(path))
    t0 = datetime(2026, 9, 27, 3, 0, tzinfo=UTC)
    kv, blob = "inbox/jay/2026-09-27-1000-kv.md", "inbox/jay/2026-09-27-0900-blob.md"
    db.executemany(
        "INSERT INTO rejected VALUES (?, ?, ?, ?, ?, ?)",
        [(kv, "refused-symlink", "it is a symlink", t0, "symlink", t0),  # refused before or after its text: not known
         (blob, "b1", "binary", t0, "binary", t0), (blob, "b2", "empty", t0 + timedelta(hours=1), "empty", t0)],
    )  # fmt: skip
    db.close()
    state = StateStore(path)
    window = window_bounds(
        datetime(2026, 9, 27, 22, 20, tzinfo=ZoneInfo("Asia/Shanghai")), timedelta(hours=24)
    )
    for axis in ("inference", "risk"):
        assert [(r.path, r.reason_code) for r in state.rejections(window, axis)] == [
            (blob, "empty"),
            (kv, "symlink"),
        ]
    assert [d.path for d in window_documents(state, "inference", window)] == [
        kv,
        "inbox/jay/2026-09-27-1001-kv.md",
    ]
    put_document(state, "inference", parsed(kv, "# KV cache\n\nnew text"), raw_offset=9)
    assert [r.path for r in state.rejections(window, "risk")] == [blob]  # superseded on every axis
    state.close()


def _failing_pack(after: int) -> object:
    calls = iter(range(after + 1))
    real = pack_body

    def pack(body: bytes) -> bytes:
        if next(calls, None) is None:
            raise RuntimeError("injected: the compress step fails half-way")
        return real(body)

    return pack


def test_a_migration_that_fails_half_way_leaves_schema_6_whole_and_is_redone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, fresh = _schema_6(tmp_path)
    old = _dump(path)
    monkeypatch.setattr(schema_migration, "BATCH_ROWS", 2)
    monkeypatch.setattr(schema_migration, "pack_body", _failing_pack(after=4))  # in the third batch
    with pytest.raises(RuntimeError, match="injected"):
        StateStore(path)
    assert _version(path) == (6, ["path", "sha256", "summary_json", "body_json"])
    assert _dump(path) == old  # no half-copied table left beside it
    monkeypatch.undo()
    StateStore(path).close()
    assert _dump(path) == fresh


_KILLED = """
import os, signal, sys
from pathlib import Path
from sinks import schema_migration
from sinks.state import StateStore
real, calls = schema_migration.pack_body, [0]
def pack(body):
    calls[0] += 1
    if calls[0] == 5:
        os.kill(os.getpid(), signal.SIGKILL)
    return real(body)
schema_migration.BATCH_ROWS = 2
schema_migration.pack_body = pack
StateStore(Path(sys.argv[1]))
"""


def test_a_migration_killed_half_way_leaves_schema_6_whole_and_is_redone(tmp_path: Path) -> None:
    path, fresh = _schema_6(tmp_path)
    old = _dump(path)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    done = subprocess.run([sys.executable, "-c", _KILLED, str(path)], env=env, check=False, timeout=120)
    assert done.returncode == -signal.SIGKILL
    assert _version(path) == (6, ["path", "sha256", "summary_json", "body_json"])
    assert _dump(path) == old
    StateStore(path).close()
    assert _dump(path) == fresh


def test_a_rebuild_sets_a_schema_6_file_aside_as_it_is(tmp_path: Path) -> None:
    path, _ = _schema_6(tmp_path)
    old = _dump(path)
    assert reason_to_replace(path) == "rebuild"
    assert _version(path)[0] == 6
    assert _dump(path) == old


def test_a_migration_that_fails_in_duckdb_keeps_the_file_and_does_not_set_it_aside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, _ = _schema_6(tmp_path)
    old = _dump(path)

    def fails(body: bytes) -> bytes:
        raise duckdb.IOException("injected: a write of the copy failed")

    monkeypatch.setattr(schema_migration, "pack_body", fails)
    with pytest.raises(StateMigrationError, match=r"schema version 6 could not be migrated.*kept as it was"):
        open_state(path, datetime(2026, 9, 28, tzinfo=UTC))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["worker.duckdb", "worker.duckdb.lock"]  # none aside
    assert _dump(path) == old


@pytest.mark.parametrize(
    "error",
    [
        # What DuckDB 2.0 raises when a commit runs out of memory (tests/sinks/test_duck.py): the migration's
        # commit appends every copied row at once.
        duckdb.TransactionException(
            "TransactionContext Error: Failed to commit: failed to pin block of size 256.0 KiB (63.9 MiB/64.0 MiB used)"
        ),
        duckdb.FatalException(
            "FATAL Error: Failed to rollback transaction. Cannot continue operation.\nOriginal Error: Out of "
            "Memory Error: failed to pin block of size 256.0 KiB (63.8 MiB/64.0 MiB used)"
        ),
    ],
    ids=["commit", "rollback"],
)
def test_a_migration_out_of_memory_names_the_limit_and_does_not_set_the_file_aside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: duckdb.Error
) -> None:
    path, _ = _schema_6(tmp_path)
    old = _dump(path)

    def fails(body: bytes) -> bytes:
        raise error

    monkeypatch.setattr(schema_migration, "pack_body", fails)
    with pytest.raises(StateMemoryError, match="PREDIGEST_DUCKDB__MEMORY_LIMIT_MIB"):
        open_state(path, datetime(2026, 9, 28, tzinfo=UTC))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["worker.duckdb", "worker.duckdb.lock"]  # none aside
    assert _dump(path) == old


_COMMITTED = """
import os, sys
from pathlib import Path
import duckdb
from sinks import schema
from sinks.state import StateStore
real = duckdb.DuckDBPyConnection.execute
def execute(self, query, *args):
    if query == "CHECKPOINT" and getattr(schema, "_migrating", False):
        os._exit(9)  # killed after the migration's commit, before its checkpoint
    return real(self, query, *args)
migrate = schema._migrate
def _migrate(db, path, found):
    db.execute("SET wal_autocheckpoint = '1TB'")
    schema._migrating = True
    migrate(db, path, found)
schema._migrate = _migrate
duckdb.DuckDBPyConnection.execute = execute
StateStore(Path(sys.argv[1]))
"""


def test_a_migration_killed_after_its_commit_is_replayed_from_the_wal(tmp_path: Path) -> None:
    path, fresh = _schema_6(tmp_path, notes=40)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    done = subprocess.run([sys.executable, "-c", _COMMITTED, str(path)], env=env, check=False, timeout=120)
    assert done.returncode == 9
    assert path.with_name(path.name + ".wal").exists()
    StateStore(path).close()  # the WAL replayed: schema 8, not set aside, not migrated twice
    assert _version(path) == (schema.VERSION, ["path", "sha256", "summary_json", "body_zst"])
    assert _dump(path) == fresh


def test_a_migration_whose_checkpoint_runs_out_of_memory_keeps_the_file_and_its_wal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, fresh = _schema_6(tmp_path)
    real = duckdb.DuckDBPyConnection.execute

    def execute(self: duckdb.DuckDBPyConnection, query: str, *args: object) -> duckdb.DuckDBPyConnection:
        if query == "CHECKPOINT":
            raise duckdb.FatalException(
                "FATAL Error: Failed to create checkpoint because of error: failed to pin block of size 256.0 KiB"
            )
        return real(self, query, *args)

    def migrate(db: duckdb.DuckDBPyConnection, at: Path, found: int) -> None:
        db.execute("SET wal_autocheckpoint = '1TB'")
        monkeypatch.setattr(duckdb.DuckDBPyConnection, "execute", execute)
        try:
            migrating(db, at, found)
        finally:
            monkeypatch.setattr(duckdb.DuckDBPyConnection, "execute", real)

    migrating = schema._migrate
    monkeypatch.setattr(schema, "_migrate", migrate)
    with pytest.raises(StateMemoryError, match="PREDIGEST_DUCKDB__MEMORY_LIMIT_MIB"):
        open_state(path, datetime(2026, 9, 28, tzinfo=UTC))
    # Nothing set aside (the close after the failure may have checkpointed the WAL already).
    assert {p.name for p in tmp_path.iterdir()} <= {
        "worker.duckdb",
        "worker.duckdb.wal",
        "worker.duckdb.lock",
    }
    monkeypatch.undo()
    StateStore(path).close()  # the committed migration kept
    assert _version(path)[0] == schema.VERSION
    assert _dump(path) == fresh


def test_a_schema_7_summary_its_rows_do_not_rebuild_is_kept_whole_and_reads_back(tmp_path: Path) -> None:
    # A summary an older writer wrote otherwise (here: indented) is not slimmed: every reader gets it back as it was.
    path = tmp_path / "worker.duckdb"
    _fresh(path, notes=3)
    state = StateStore(path)
    with state.reader() as reader:
        before = [reader.note(f"inbox/jay/2026-09-27-{1000 + i}-kv.md") for i in range(3)]
    state.close()
    _as_version(path, 7)
    db = duckdb.connect(str(path))
    odd = "inbox/jay/2026-09-27-1001-kv.md"
    [(summary,)] = db.execute("SELECT summary_json FROM contents WHERE path = ?", [odd]).fetchall()
    indented = json.dumps(json.loads(summary), indent=1, ensure_ascii=False)
    db.execute("UPDATE contents SET summary_json = ? WHERE path = ?", [indented, odd])
    db.close()
    state = StateStore(path)
    kept = dict(state._db.execute("SELECT path, summary_json FROM contents").fetchall())
    assert kept[odd] == indented
    assert all(list(json.loads(kept[p])) == ["headings", "front_matter"] for p in kept if p != odd)
    with state.reader() as reader:
        after = [reader.note(f"inbox/jay/2026-09-27-{1000 + i}-kv.md") for i in range(3)]
    state.close()
    assert after == before and all(n is not None and n.document is not None for n in after)


@pytest.mark.parametrize(
    "damage", ['{"path":"inbox/jay/2026-09-27-1001-kv.md","terms":{"kv"', '{"terms":[1]}']
)
def test_a_schema_7_summary_that_cannot_be_read_is_kept_whole_and_the_others_migrated(
    tmp_path: Path, damage: str
) -> None:
    # One damaged summary (cut short, or of another shape) must not stop the migration at every start: it is kept as
    # it was and reported unreadable when read, as before, and its term rows (window figures) kept.
    path = tmp_path / "worker.duckdb"
    _fresh(path, notes=3)
    fresh = _dump(path)
    _as_version(path, 7)
    odd = "inbox/jay/2026-09-27-1001-kv.md"
    db = duckdb.connect(str(path))
    db.execute("UPDATE contents SET summary_json = ? WHERE path = ?", [damage, odd])
    db.close()
    state = StateStore(path)
    kept = dict(state._db.execute("SELECT path, summary_json FROM contents").fetchall())
    with state.reader() as reader:
        notes = {p: reader.note(p) for p in kept}
    state.close()
    assert _version(path)[0] == schema.VERSION and kept[odd] == damage
    assert sorted(_dump(path)["source_terms"]) == sorted(fresh["source_terms"])
    damaged = notes[odd]
    assert damaged is not None and damaged.document is None and damaged.unreadable
    assert all(n is not None and n.document is not None for p, n in notes.items() if p != odd)
