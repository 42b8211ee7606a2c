"""An older state's contents and term rows copied into schema 8's tables: each summary slimmed to what its source
rows do not hold (processors.summary_parts), each term row given its place, each body (schema 5 and 6: its JSON)
the frame the parse processes make.

Called by sinks.schema inside the transaction of the whole migration: the rows are read and written a batch at a
time (a 100k-note state holds ~1.3 GB of bodies), in their order, and a killed or failed copy leaves no trace.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pydantic_core
from predigest_native import FactRows, TextColumns

from processors.summary_parts import SummaryRows, rest_of, whole_summary
from processors.wire_frames import pack_body
from sinks.clock import SYSTEM_CLOCK, Clock
from sinks.summary_rows import stated_titles, whole_signatures

log = logging.getLogger(__name__)

# ~14 KB of body and ~3.5 of summary a note: a batch is ~20 MB in Python, well inside the worker's budget.
BATCH_ROWS = 1_000
PROGRESS_SECONDS = 10.0  # one progress line at most this often (and at the end)


@dataclass(frozen=True)
class Target:
    """Where a migration copies to: schema 8's contents and source_terms tables, made beside the old ones."""

    contents: str
    terms: str
    packed: bool  # the old bodies are frames already (schema 7), else JSON (5, 6)


def copy_contents(db: duckdb.DuckDBPyConnection, path: Path, to: Target, clock: Clock = SYSTEM_CLOCK) -> int:
    """Every row of `contents` into `to.contents`, in rowid order, and its version's term counts into
    `to.terms`; how many rows."""
    row = db.execute("SELECT count(*), min(rowid), max(rowid) FROM contents").fetchone()
    total, low, high = (int(row[0]), row[1], row[2]) if row else (0, None, None)
    if not total or low is None or high is None:
        return 0
    log.info("state %s: migrating to schema 8, slimming the summaries of %d notes in place", path, total)
    body = "c.body_zst" if to.packed else "c.body_json"
    done, started, said = 0, clock.monotonic(), clock.monotonic()
    # Ranges of rowids, not one streamed result: a query run on the connection would end the one read from.
    for start in range(int(low), int(high) + 1, BATCH_ROWS):
        rows = db.execute(
            f"SELECT c.path, c.sha256, c.summary_json, {body}, r.vid, r.summary_json FROM contents c "
            "LEFT JOIN source_rows r ON r.path = c.path AND r.sha256 = c.sha256 "
            "WHERE c.rowid >= ? AND c.rowid < ? ORDER BY c.rowid",
            [start, start + BATCH_ROWS],
        ).fetchall()
        if rows:
            _insert(db, to, rows)
        done += len(rows)
        if clock.monotonic() - said >= PROGRESS_SECONDS:
            said = clock.monotonic()
            log.info("state %s: migrating to schema 8, %d / %d notes copied", path, done, total)
    log.info(
        "state %s: migrating to schema 8, %d / %d notes copied in %.1f s",
        path,
        done,
        total,
        clock.monotonic() - started,
    )
    return done


def _insert(db: duckdb.DuckDBPyConnection, to: Target, rows: Sequence[tuple[Any, ...]]) -> None:
    """One batch as the window agent stores it (sinks.documents, sinks.source_rows), the terms read from each
    summary in its order."""
    datas = [_readable(r[2]) for r in rows]
    columns = TextColumns(
        ["path", "sha256", "summary_json", "blob:body_zst"],
        [
            [r[0] for r in rows],
            [r[1] for r in rows],
            _rests(db, rows, datas),
            [bytes(r[3]) if to.packed else pack_body(r[3].encode()) for r in rows],
        ],
    )
    db.from_arrow(columns).insert_into(to.contents)
    counted = [
        (r[4], d.get("terms")) for r, d in zip(rows, datas, strict=True) if r[4] is not None and d is not None
    ]
    terms = FactRows.terms([v for v, _ in counted], [pydantic_core.to_json(t) for _, t in counted])
    if len(terms):
        db.from_arrow(terms).insert_into(to.terms)
    if unread := [int(r[4]) for r, d in zip(rows, datas, strict=True) if r[4] is not None and d is None]:
        # Their term rows as they were (the window figures count them), placed in the order they were stored.
        db.execute(
            f"INSERT INTO {to.terms} SELECT vid, term, n, row_number() OVER (PARTITION BY vid ORDER BY rowid) - 1 "
            "FROM source_terms WHERE vid = ANY($1::BIGINT[]) ORDER BY vid, rowid",
            [unread],
        )


def _readable(summary: str) -> dict[str, Any] | None:
    """A summary's fields; None for one that cannot be read (damaged, another shape): it is kept whole, and
    reported unreadable when read, as before, rather than failing the migration at every start."""
    try:
        data = pydantic_core.from_json(summary, cache_strings="keys")
    except ValueError:
        return None
    return data if isinstance(data, dict) and isinstance(data.get("terms") or {}, dict) else None


def _rests(
    db: duckdb.DuckDBPyConnection, rows: Sequence[tuple[Any, ...]], datas: Sequence[dict[str, Any] | None]
) -> list[bytes]:
    """What `contents` keeps of each summary: its rest, or the summary whole where its rows would not rebuild it
    byte for byte (one an older writer wrote otherwise or that cannot be read, a version without source rows)."""
    vids = sorted(int(r[4]) for r in rows if r[4] is not None)
    signatures, titled = whole_signatures(db, vids), stated_titles(db, vids)
    out = []
    for (_, _, whole, _, vid, slim), data in zip(rows, datas, strict=True):
        whole_bytes = rest = whole.encode()
        if vid is not None and data is not None:
            slimmed = rest_of(whole_bytes)
            terms = list((data.get("terms") or {}).items())
            kept = SummaryRows(slim, slimmed, terms, signatures.get(vid), titled.get(vid, ()))
            rest = slimmed if whole_summary(kept) == whole_bytes else whole_bytes
        out.append(rest)
    return out
