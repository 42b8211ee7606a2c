"""Each ingest table's checkpoints with DuckDB's choice of compression against the same choice forced per column
(`USING COMPRESSION`, so no other method is analysed): the 10k state's rows copied in five appends, a CHECKPOINT
after each, process CPU a note. Needs a state kept from a 10k run (itemise.py's batches stored into it).

    python -m bench.store45.compression --state /tmp/store45/kept/worker.duckdb
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import duckdb

# What DuckDB chose for each column of the 10k state (pragma_storage_info).
FORCED = {
    "documents": {
        "axis": "dict_fsst",
        "path": "dict_fsst",
        "sha256": "dict_fsst",
        "kind": "dict_fsst",
        "seq": "bitpacking",
        "raw_offset": "bitpacking",
        "event_time": "rle",
    },
    "source_terms": {"term": "dict_fsst", "vid": "bitpacking", "n": "bitpacking", "k": "bitpacking"},
    "source_rows": {
        "path": "dict_fsst",
        "sha256": "dict_fsst",
        "text_hash": "dict_fsst",
        "topic": "dict_fsst",
        "vid": "bitpacking",
        "length": "bitpacking",
    },
    "contents": {"path": "dict_fsst", "sha256": "dict_fsst"},
    "source_signatures": {"vid": "bitpacking"},
}
SCHEMA_CHOSEN = {"summary_json": "zstd", "body_zst": "uncompressed"}  # sinks/schema.py's own
APPENDS = 5


def _columns(state: Path, table: str, forced: bool) -> str:
    with duckdb.connect(str(state), read_only=True) as src:
        cols = src.execute(
            "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = ? "
            "ORDER BY ordinal_position",
            [table],
        ).fetchall()
    parts = []
    for name, kind in cols:
        method = SCHEMA_CHOSEN.get(name) or (FORCED[table].get(name) if forced else None)
        parts.append(f"{name} {kind}" + (f" USING COMPRESSION {method}" if method else ""))
    return ", ".join(parts)


def checkpoints(state: Path, table: str, forced: bool) -> tuple[float, int]:
    """(µs of process CPU a note in the checkpoints, the file's size)."""
    with tempfile.TemporaryDirectory() as work, duckdb.connect(f"{work}/x.duckdb") as db:
        db.execute(f"CREATE TABLE {table} ({_columns(state, table, forced)})")
        db.execute("SET max_vacuum_tasks = 0")
        db.execute("SET checkpoint_threshold = '1TB'")
        db.execute(f"ATTACH '{state}' AS k (READ_ONLY)")
        notes = db.execute("SELECT count(*) FROM k.contents").fetchall()[0][0]
        rows = db.execute(f"SELECT count(*) FROM k.{table}").fetchall()[0][0]
        step = rows // APPENDS + 1
        spent = 0
        for i in range(APPENDS):
            db.execute(f"INSERT INTO {table} SELECT * FROM k.{table} LIMIT {step} OFFSET {i * step}")
            t = time.process_time_ns()
            db.execute("CHECKPOINT")
            spent += time.process_time_ns() - t
        return spent / 1e3 / notes, os.path.getsize(f"{work}/x.duckdb")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--state", type=Path, default=Path("/tmp/store45/kept/worker.duckdb"))
    p.add_argument("--rounds", type=int, default=2)
    a = p.parse_args()
    for table in FORCED:
        for r in range(a.rounds):
            for forced in (False, True) if r % 2 == 0 else (True, False):
                us, size = checkpoints(a.state, table, forced)
                print(
                    f"{table} {'forced' if forced else 'chosen by DuckDB'}: {us:.1f} µs a note, {size} bytes"
                )


if __name__ == "__main__":
    main()
