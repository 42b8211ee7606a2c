"""A version-6 state's contents copied into schema 7's table, each body as the frame the parse processes make.

Called by sinks.schema inside the transaction of the whole migration: the rows are read and written a batch at a
time (a 100k-note state holds ~1.3 GB of bodies), in their order, and a killed or failed copy leaves no trace.
"""

from __future__ import annotations

import logging
from pathlib import Path

import duckdb
from predigest_native import TextColumns

from processors.wire_frames import pack_body
from sinks.clock import SYSTEM_CLOCK, Clock

log = logging.getLogger(__name__)

# ~14 KB of body and ~3.5 of summary a note: a batch is ~20 MB in Python, well inside the worker's budget.
BATCH_ROWS = 1_000
PROGRESS_SECONDS = 10.0  # one progress line at most this often (and at the end)


def copy_contents(db: duckdb.DuckDBPyConnection, path: Path, table: str, clock: Clock = SYSTEM_CLOCK) -> int:
    """Every row of `contents` (body_json) into `table` (body_zst), in rowid order; how many rows."""
    row = db.execute("SELECT count(*), min(rowid), max(rowid) FROM contents").fetchone()
    total, low, high = (int(row[0]), row[1], row[2]) if row else (0, None, None)
    if not total or low is None or high is None:
        return 0
    log.info("state %s: migrating to schema 7, compressing the bodies of %d notes in place", path, total)
    done, started, said = 0, clock.monotonic(), clock.monotonic()
    # Ranges of rowids, not one streamed result: a query run on the connection would end the one read from.
    for start in range(int(low), int(high) + 1, BATCH_ROWS):
        rows = db.execute(
            "SELECT path, sha256, summary_json, body_json FROM contents WHERE rowid >= ? AND rowid < ? "
            "ORDER BY rowid",
            [start, start + BATCH_ROWS],
        ).fetchall()
        if rows:
            _insert(db, table, rows)
        done += len(rows)
        if clock.monotonic() - said >= PROGRESS_SECONDS:
            said = clock.monotonic()
            log.info("state %s: migrating to schema 7, %d / %d bodies compressed", path, done, total)
    log.info(
        "state %s: migrating to schema 7, %d / %d bodies compressed in %.1f s",
        path,
        done,
        total,
        clock.monotonic() - started,
    )
    return done


def _insert(db: duckdb.DuckDBPyConnection, table: str, rows: list[tuple[str, str, str, str]]) -> None:
    """One batch as the window agent inserts contents (sinks.documents): its bodies packed as pack_body does."""
    columns = TextColumns(
        ["path", "sha256", "summary_json", "blob:body_zst"],
        [
            [r[0] for r in rows],
            [r[1] for r in rows],
            [r[2] for r in rows],
            [pack_body(r[3].encode()) for r in rows],
        ],
    )
    db.from_arrow(columns).insert_into(table)
