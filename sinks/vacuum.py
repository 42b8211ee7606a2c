"""The state's occasional checkpoint with DuckDB's vacuum on, which merges the small row groups the state's
checkpoints leave without it (sinks/state.py, `STATE.settings`; docs/performance.md)."""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from sinks import duck

ROW_GROUP_ROWS = 122_880  # DuckDB's row group size: a table needs one per this many rows
VACUUM_TASKS = 100  # DuckDB's default max_vacuum_tasks
# Once row groups are merged, DuckDB reads a column this many rows at a time (the state's check reads every
# column of `contents` so), allocated rounded up to a power of two: hence twice this many notes' bytes.
VECTOR_ROWS = 2_048


@dataclass(frozen=True)
class Vacuumed:
    """The most row groups a table of the state holds beyond what its rows need, before and after a vacuum."""

    before: int
    after: int


def excess_row_groups(db: duckdb.DuckDBPyConnection) -> int:
    """The most row groups a table of the state holds beyond what its rows need (each checkpoint without the
    vacuum adds one to every table it wrote to)."""
    tables = db.execute(
        "SELECT table_name, estimated_size FROM duckdb_tables() WHERE database_name = current_database()"
    ).fetchall()
    excess = 0
    for table, rows in tables:
        row = db.execute(
            "SELECT count(DISTINCT row_group_id) FROM pragma_storage_info(?) WHERE persistent", [table]
        ).fetchone()
        groups = int(row[0]) if row else 0
        excess = max(excess, groups - -(-int(rows or 0) // ROW_GROUP_ROWS))
    return excess


def merged_reads_fit(db: duckdb.DuckDBPyConnection, memory_mib: int | None) -> bool:
    """Whether `contents` would still read within memory_mib once merged: small row groups of large notes read
    a few MB at a time, full ones a vector of 2 048 notes (80 KB notes: 256 MiB), and the check fails past it."""
    if memory_mib is None:  # no limit set: DuckDB's own, most of the machine's memory
        return True
    mean = None
    for sample in ("USING SAMPLE 10 PERCENT (system)", ""):  # a small table's system sample holds no rows
        row = db.execute(
            f"SELECT avg(strlen(summary_json) + octet_length(body_zst)) FROM contents {sample}"
        ).fetchone()
        mean = row[0] if row else None
        if mean is not None:
            break
    return 2 * VECTOR_ROWS * float(mean or 0) <= memory_mib * 2**20


def run(db: duckdb.DuckDBPyConnection) -> Vacuumed:
    """One checkpoint with the vacuum on, then off again (an invalidated database is reopened with it off)."""
    before = excess_row_groups(db)
    db.execute(f"SET max_vacuum_tasks = {VACUUM_TASKS}")
    try:
        # DuckDB's checkpoint vacuums only the tables changed since the last one, and all of them after a change
        # of its catalog (2.0.1): a table made and dropped in one transaction, which leaves nothing behind.
        with duck.transaction(db):
            db.execute("CREATE TABLE vacuum_mark (x INTEGER)")
            db.execute("DROP TABLE vacuum_mark")
        try:
            db.execute("CHECKPOINT")
        except duckdb.TransactionException as exc:
            # A read begun before that catalog change (/status, the state's check) keeps DuckDB from checkpointing
            # until it ends: nothing merged, tried again later.
            if "CHECKPOINT" not in str(exc):
                raise
            return Vacuumed(before, before)
    finally:
        try:
            db.execute("SET max_vacuum_tasks = 0")
        except duckdb.Error as exc:
            if not duck.unusable(exc):
                raise
    return Vacuumed(before, excess_row_groups(db))
