"""The state file's tables and schema version: a file of versions 5, 6 and 7 is migrated in place on open, one of
another version rebuilt from Kafka."""

from __future__ import annotations

import logging
from pathlib import Path

import duckdb

from sinks.duck import out_of_memory, transaction
from sinks.errors import (
    DuckFileError,
    RebuildRequiredError,
    StateLocationError,
    StateMemoryError,
    StateMigrationError,
)
from sinks.schema_migration import Target, copy_contents

# 1: every file written before the version was recorded (its columns added in place as the code grew).
# 3: rejections keep their code and their file's time (a past window re-emitted lists its own).
# 4: each version's source facts (summary without its bulk, term rows, signature columns) for briefings.
# 5: the titles each version states for its ids, as rows (source_titles), no longer in its slim summary.
# 6: a briefing's texts as zstd frames (sinks.emission_bodies); its emissions row holds its JSON without the
#    per-source lists (what SQL reads of it) and no Markdown.
# 7: a note's body as the zstd frame the parse processes made (contents.body_zst), stored as it is.
# 8: of a note's summary `contents` keeps only what its source rows do not hold (headings, front matter: processors.
#    summary_parts); a term row its place among its version's counts (source_terms.k), which a summary is rebuilt in.
# 9: a rejection per (axis, path), kept while it is the path's latest record, with its raw offset (sinks.rejections).
VERSION = 9
# Reached in place on open, in one transaction (a process killed half-way leaves the file as it was, and the next
# open starts again): 5 gains emission_bodies (its emissions keep their texts in their own columns, read as
# before); the contents of 5, 6 and 7 are copied into a table of 8's, each summary slimmed and (5, 6) each body
# compressed, and their term rows into one with their places (sinks.schema_migration), the old tables dropped;
# the rejections of 5 to 8, one per (path, sha256) whatever came after them, are kept as rows without an axis, the
# latest seen per path: listed on every axis as before, until any later record of the path supersedes them.
# Any other version is rebuilt (`predigest rebuild`).
MIGRATED = (5, 6, 7, 8)
_NEW_CONTENTS = "contents_v8"
_NEW_TERMS = "source_terms_v8"
_NEW_REJECTED = "rejected_v9"

log = logging.getLogger(__name__)

_BODIES = """
CREATE TABLE IF NOT EXISTS emission_bodies (
    axis VARCHAR NOT NULL, window_end TIMESTAMPTZ NOT NULL, trigger VARCHAR NOT NULL,
    sources INTEGER NOT NULL, briefing_zst BLOB NOT NULL, markdown_zst BLOB,
    PRIMARY KEY (axis, window_end, trigger)
);
"""

# The contents and source_terms tables of this version; sinks.schema_migration makes them beside an older file's.
CONTENTS = """CREATE TABLE {table} (
    path VARCHAR NOT NULL, sha256 VARCHAR NOT NULL,
    summary_json VARCHAR USING COMPRESSION zstd NOT NULL,
    body_zst BLOB USING COMPRESSION uncompressed NOT NULL
);
"""
# Each (axis, path) whose latest record refused its file (processors.versions.Refused); axis '' for a row
# without one. event_time: the file's stamp or mtime (NULL for a record that carried none: then seen_at stands in).
REJECTED = """CREATE TABLE {table} (
    axis VARCHAR NOT NULL, path VARCHAR NOT NULL, sha256 VARCHAR NOT NULL, reason VARCHAR NOT NULL,
    seen_at TIMESTAMPTZ NOT NULL, reason_code VARCHAR, event_time TIMESTAMPTZ, raw_offset BIGINT,
    PRIMARY KEY (axis, path)
);
"""
TERMS = "CREATE TABLE {table} (vid BIGINT NOT NULL, term VARCHAR NOT NULL, n INTEGER NOT NULL, k INTEGER NOT NULL);\n"

_TABLES = (
    """
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE SEQUENCE doc_seq;
-- One row per version of a path on an axis; processors.versions says which one is current. documents, contents
-- and source_rows have no key: the write plan stores a version only when the state holds no row of it (it reads
-- every path it touches whole, sinks.documents), and DuckDB's index of each key cost ~14 % of a batch at 100k
-- notes and a seventh to a quarter of the file, without serving a read. A file made before keeps them, to the
-- same effect.
CREATE TABLE documents (
    axis VARCHAR NOT NULL,
    path VARCHAR NOT NULL,
    sha256 VARCHAR NOT NULL,
    seq BIGINT NOT NULL,        -- arrival order (doc_seq)
    raw_offset BIGINT,          -- offset of the raw record; NULL for a record that carried none
    event_time TIMESTAMPTZ NOT NULL,
    kind VARCHAR NOT NULL,
    current BOOLEAN NOT NULL
);
-- Each version's summary and body once, whatever the number of its axes (processors.wire). Of the summary, only
-- what its source rows below do not hold (processors.summary_parts: its headings and front matter), as JSON
-- stored as zstd, chosen here: left to DuckDB, each checkpoint also tried dictionary and FSST on every byte of it
-- (a quarter of the window agent's commit), and zstd packs it tighter than FSST. The body is its JSON's zstd frame
-- as a v7 record carries it (processors.wire_frames), stored uncompressed: DuckDB's zstd of the bodies at each
-- checkpoint cost the window agent ~65 µs a note, and a read unpacked vectors of 2 048 of them.
"""
    + CONTENTS.format(table="contents")
    + """CREATE TABLE deletions (
    axis VARCHAR NOT NULL, path VARCHAR NOT NULL, deleted_at TIMESTAMPTZ NOT NULL, raw_offset BIGINT,
    PRIMARY KEY (axis, path)
);
"""
    + REJECTED.format(table="rejected")
    + """-- Each briefing as recorded before its files and its topic message are made from it. markdown is NULL for
-- one restored from predigest.briefings (the topic carries the JSON); delivered_at is set once the topic has it.
CREATE TABLE emissions (
    axis VARCHAR NOT NULL, window_end TIMESTAMPTZ NOT NULL, trigger VARCHAR NOT NULL,
    basename VARCHAR NOT NULL, emitted_at TIMESTAMPTZ NOT NULL, briefing_json VARCHAR NOT NULL,
    markdown VARCHAR, delivered_at TIMESTAMPTZ,
    PRIMARY KEY (axis, window_end, trigger)
);
"""
    + _BODIES
    + """
-- What a briefing reads of each version besides its text, worked out when it is stored (processors.source_facts,
-- sinks.source_rows): its summary without its bulk, its topic line, its term counts as rows, and its
-- signature, so that window figures are DuckDB aggregates.
CREATE SEQUENCE source_seq;
CREATE TABLE source_rows (
    vid BIGINT NOT NULL,        -- source_seq
    path VARCHAR NOT NULL,
    sha256 VARCHAR NOT NULL,
    text_hash VARCHAR NOT NULL,
    length INTEGER NOT NULL,    -- BM25 length
    counted BOOLEAN NOT NULL,   -- it has term counts
    arxiv_ids VARCHAR[] NOT NULL,
    topic VARCHAR NOT NULL,     -- the line its headings make
    -- without signature, term counts and headings; zstd as in contents
    summary_json VARCHAR USING COMPRESSION zstd NOT NULL
);
-- k: the term's place among its version's counts, the order its whole summary lists them in.
"""
    + TERMS.format(table="source_terms")
    + """CREATE TABLE source_signatures (vid BIGINT NOT NULL, signature UBIGINT[] NOT NULL);  -- whole ones only
-- The (id, title) pairs each version states (processors.id_titles), the nth of its own, with what the window's
-- best title of each id and its id conflicts are ranked by (processors.source_facts.StatedTitle).
CREATE TABLE source_titles (
    vid BIGINT NOT NULL, n INTEGER NOT NULL, id VARCHAR NOT NULL, title VARCHAR NOT NULL, source VARCHAR NOT NULL,
    strong BOOLEAN NOT NULL, rank INTEGER NOT NULL,
    mark_id VARCHAR NOT NULL, mark_title VARCHAR NOT NULL, bounded BOOLEAN NOT NULL
);
-- The last record applied per (topic, partition), written in the transaction of what it brought.
CREATE TABLE applied (
    topic VARCHAR NOT NULL, part INTEGER NOT NULL, last_offset BIGINT NOT NULL,
    PRIMARY KEY (topic, part)
);
"""
)


def ensure(db: duckdb.DuckDBPyConnection, path: Path) -> None:
    """Create the tables in an empty file, migrate one of MIGRATED; raise RebuildRequiredError for a file of
    another schema version."""
    if check(db, path):
        found = _version(db)
        if found in MIGRATED:
            _migrate(db, path, found)
        return
    with transaction(db):
        db.execute(_TABLES)
        db.execute("INSERT INTO schema_version VALUES (?)", [VERSION])
    # DDL left in the WAL is what DuckDB has failed to replay after a crash (duckdb#19712, #22044).
    db.execute("CHECKPOINT")


def _migrate(db: duckdb.DuckDBPyConnection, path: Path, found: int) -> None:
    """A file of version `found` (in MIGRATED) brought to VERSION in one transaction, then checkpointed."""
    try:
        with transaction(db):
            if found < 8:
                _contents_8(db, path, found)
            _rejected_9(db)
            db.execute("UPDATE schema_version SET version = ?", [VERSION])
    except duckdb.Error as exc:
        raise _failed(exc, path, found, "it is kept as it was, and the next start migrates it again") from exc
    try:
        db.execute("CHECKPOINT")
    except duckdb.Error as exc:
        raise _failed(exc, path, found, "it is migrated in its WAL, which the next start replays") from exc
    log.info("state %s: migrated from schema version %d to %d", path, found, VERSION)


def _contents_8(db: duckdb.DuckDBPyConnection, path: Path, found: int) -> None:
    if found == 5:
        db.execute(_BODIES)
    db.execute(CONTENTS.format(table=_NEW_CONTENTS))
    db.execute(TERMS.format(table=_NEW_TERMS))
    copy_contents(db, path, Target(_NEW_CONTENTS, _NEW_TERMS, packed=found == 7))
    _replace(db, ("contents", _NEW_CONTENTS), ("source_terms", _NEW_TERMS))


def _rejected_9(db: duckdb.DuckDBPyConnection) -> None:
    """Schema 8's rejections, one per (path, sha256), as rows without an axis: the latest seen of each path."""
    db.execute(REJECTED.format(table=_NEW_REJECTED))
    db.execute(
        f"INSERT INTO {_NEW_REJECTED} SELECT '', path, sha256, reason, seen_at, reason_code, event_time, NULL "
        "FROM rejected QUALIFY row_number() OVER (PARTITION BY path ORDER BY seen_at DESC, sha256) = 1"
    )
    _replace(db, ("rejected", _NEW_REJECTED))


def _replace(db: duckdb.DuckDBPyConnection, *tables: tuple[str, str]) -> None:
    """Each (old, new) table: the old dropped, the new renamed to its name."""
    for old, new in tables:
        db.execute(f"DROP TABLE {old}")
        db.execute(f"ALTER TABLE {new} RENAME TO {old}")


def _failed(exc: duckdb.Error, path: Path, found: int, kept: str) -> DuckFileError:
    """What a migration's failure means. The file passed its integrity check: a failure here is not its damage, and
    it must not be set aside; DuckDB 2.0 words a commit out of memory as a TransactionException (a failed rollback
    or checkpoint a FatalException), which duck.error would take for damage: named here by what ran out."""
    what = f"the state file {path} of schema version {found} could not be migrated to {VERSION}"
    if (reason := out_of_memory(exc)) is not None:
        return StateMemoryError(
            f"{what} within its memory ({reason}); raise duckdb.memory_limit_mib "
            f"(PREDIGEST_DUCKDB__MEMORY_LIMIT_MIB) and restart the worker; {kept}"
        )
    if "No space left" in str(exc):
        return StateLocationError(
            f"{what}: its disk is full ({str(exc).splitlines()[0]}); free space (the file grows ~2.8x as it is "
            f"migrated, docs/operations.md) and restart the worker; {kept}"
        )
    return StateMigrationError(f"{what} ({exc}); {kept}")


def migrates(db: duckdb.DuckDBPyConnection, path: Path) -> bool:
    """True for a file of a schema version `ensure` migrates (RebuildRequiredError as `check`)."""
    return check(db, path) and _version(db) in MIGRATED


def _version(db: duckdb.DuckDBPyConnection) -> int:
    row = db.execute("SELECT max(version) FROM schema_version").fetchone()
    return int(row[0]) if row and row[0] is not None else 1


def check(db: duckdb.DuckDBPyConnection, path: Path) -> bool:
    """True for a file of this schema version (or one migrated on open), False for an empty one; else
    RebuildRequiredError."""
    tables = {
        str(row[0])
        for row in db.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database()"
        ).fetchall()
    }
    if not tables:
        return False
    found = _version(db) if "schema_version" in tables else 1
    if found != VERSION and found not in MIGRATED:
        written_by = "an older" if found < VERSION else "a newer"
        raise RebuildRequiredError(
            f"the state file {path} has schema version {found}, written by {written_by} predigest; this one "
            f"reads version {VERSION}. Stop the worker and run `predigest rebuild`: it sets the file aside and "
            "replays the retained topics into a new one."
        )
    return True
