"""A stored version's summary rows read for a whole-document reader (processors.summary_parts, schema 8)."""

from __future__ import annotations

from collections.abc import Sequence

import duckdb

from processors.summary_parts import SummaryRows

# What each whole-document read selects of a version, after its own columns, from its `documents` row `d` (or a
# row of its path and sha256) and its `contents` and `source_rows` rows, left joined: a version lacking either
# (the schema's invariant says it cannot, a bug or a hand edit could) is read as damaged, never left out silently.
SUMMARY_COLUMNS = "c.summary_json, c.body_zst, r.vid, r.summary_json"


def summary_joins(paths: str) -> str:
    """The joins of `contents` c and `source_rows` r to `d`, each scan filtered by the paths read (the parameter
    `paths`: DuckDB cannot push a join's keys into a scan)."""
    return (
        f"LEFT JOIN contents c ON c.path = d.path AND c.sha256 = d.sha256 AND c.path = ANY({paths}::VARCHAR[]) "
        f"LEFT JOIN source_rows r ON r.path = d.path AND r.sha256 = d.sha256 AND r.path = ANY({paths}::VARCHAR[])"
    )


# path, axis, rest, body, vid, slim: None where its row is missing
StoredRow = tuple[str, str, str | bytes | None, bytes | None, int | None, str | bytes | None]
WholeRow = tuple[str, str, SummaryRows, bytes | None]  # path, axis, summary rows, body frame
Pair = tuple[str, str, str, bool, int]


def with_rows(db: duckdb.DuckDBPyConnection, rows: Sequence[StoredRow]) -> list[WholeRow]:
    """The rows of each version's summary: its term counts in their place's order, whole signature, stated
    titles in theirs (three reads of the versions' ids, whatever their number)."""
    if not rows:
        return []
    vids = sorted({int(r[4]) for r in rows if r[4] is not None})
    terms: dict[int, list[tuple[str, int]]] = {}
    for vid, term, n in db.execute(
        "SELECT vid, term, n FROM source_terms WHERE vid = ANY($1::BIGINT[]) ORDER BY vid, k", [vids]
    ).fetchall():
        terms.setdefault(vid, []).append((term, n))
    signatures, titled = whole_signatures(db, vids), stated_titles(db, vids)
    return [
        (
            path,
            axis,
            SummaryRows(slim, rest, terms.get(vid, ()), signatures.get(vid), titled.get(vid, ()))
            if vid is not None
            else SummaryRows(None, rest),
            body,
        )
        for path, axis, rest, body, vid, slim in rows
    ]


def whole_signatures(db: duckdb.DuckDBPyConnection, vids: list[int]) -> dict[int, list[int]]:
    rows = db.execute("SELECT vid, signature FROM source_signatures WHERE vid = ANY($1::BIGINT[])", [vids])
    return dict(rows.fetchall())


def stated_titles(db: duckdb.DuckDBPyConnection, vids: list[int]) -> dict[int, list[Pair]]:
    """Each version's stated (id, title, source, strong, rank), in their order."""
    titled: dict[int, list[Pair]] = {}
    for vid, *pair in db.execute(
        "SELECT vid, id, title, source, strong, rank FROM source_titles WHERE vid = ANY($1::BIGINT[]) "
        "ORDER BY vid, n",
        [vids],
    ).fetchall():
        titled.setdefault(vid, []).append((pair[0], pair[1], pair[2], pair[3], pair[4]))
    return titled
