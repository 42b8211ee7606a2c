"""The `rejected` table: each (axis, path) whose latest record refused its file, written from the version plan,
and what a window's briefing lists of them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import duckdb

from processors.models import Rejection, WindowBounds
from processors.reasons import REJECTION_CODES, RejectionCode
from processors.versions import BatchPlan, Refused
from sinks.duck import unnest_columns

LEGACY_AXIS = ""  # a row without an axis (schema 8 or before, or a record without one): listed on every axis
# A path refused on the axis since its current version was written: that version is not briefed.
NOT_REFUSED = "NOT EXISTS (SELECT 1 FROM rejected r WHERE r.axis=d.axis AND r.path=d.path)"
# A refusal no axis holds a later version of: a refusal goes to every axis, a living document's version only to
# its own, so the other axes' refusals of a living document fixed since stay behind it (not listed).
LATEST = "NOT EXISTS (SELECT 1 FROM documents o WHERE o.path = r.path AND o.raw_offset > r.raw_offset)"


# A refusal's own time (else when the worker saw it) in the window; or the version it hides, where a briefing would
# have listed it: dated in the window (a note's front matter may date it apart from its file), or the axis's
# living document, which every briefing of the axis reads.
_LISTED = (
    "coalesce(r.event_time, r.seen_at) >= $3 AND coalesce(r.event_time, r.seen_at) < $4 OR EXISTS (SELECT 1 FROM "
    "documents d WHERE d.axis = r.axis AND d.path = r.path AND d.current AND (d.kind = 'living' OR "
    "d.event_time >= $3 AND d.event_time < $4))"
)


def rejections(db: duckdb.DuckDBPyConnection, window: WindowBounds, axis: str) -> list[Rejection]:
    """The files of the axis refused by their latest record that the window's briefing lists (`_LISTED`)."""
    rows = db.execute(
        f"SELECT path, reason, reason_code FROM rejected r WHERE axis IN ($1, $2) AND {LATEST} AND ({_LISTED}) "
        "ORDER BY path",
        [axis, LEGACY_AXIS, window.start, window.end],
    ).fetchall()
    return [Rejection(path=r[0], reason=r[1], reason_code=_code(r[2])) for r in rows]


@dataclass(frozen=True)
class Refusal:
    """A refusal as the state holds it: the file, why (its code, None before codes, and message), when seen."""

    path: str
    reason: str
    code: RejectionCode | None
    seen_at: datetime


@dataclass(frozen=True)
class AxisRefusals:
    """What `predigest status` says of an axis's refused files: how many, and the one the worker saw last."""

    count: int
    newest: Refusal | None


# The worker's time of the refusal, then the raw record's order: the newest first.
_ORDER = "seen_at DESC, raw_offset DESC NULLS LAST, path"
_NEWEST = f"ORDER BY {_ORDER} LIMIT 1"
# Each asked axis's standing refusals (a row without an axis on every one): how many, and the newest. One query for
# every axis: LATEST scans the documents' paths (~400k rows at 100k notes) once, not per axis; an ordered `first`,
# not a window's row_number (whose sort of every refusal was half the read).
_PER_AXIS = (
    f"SELECT a.axis, count(*), first(struct_pack(path, reason, reason_code, seen_at) ORDER BY {_ORDER}) FROM "
    f"(SELECT * FROM rejected r WHERE {LATEST}) s JOIN (SELECT unnest($1) AS axis) a ON s.axis IN (a.axis, $2) "
    "GROUP BY a.axis"
)


def axes_refusals(db: duckdb.DuckDBPyConnection, axes: Sequence[str]) -> dict[str, AxisRefusals]:
    """Per axis, its files its briefings list as rejected in the windows they fall in, whatever the window."""
    rows = db.execute(_PER_AXIS, [list(axes), LEGACY_AXIS]).fetchall()
    found = {str(r[0]): AxisRefusals(int(r[1]), _refusal(tuple(r[2].values()))) for r in rows}
    return {axis: found.get(axis, AxisRefusals(0, None)) for axis in axes}


def path_refusal(db: duckdb.DuckDBPyConnection, path: str) -> Refusal | None:
    """The refusal of the path's latest record on any axis (or a row without one); None if none stands."""
    row = db.execute(
        f"SELECT r.path, r.reason, r.reason_code, r.seen_at FROM rejected r WHERE path = $1 AND {LATEST} {_NEWEST}",
        [path],
    ).fetchone()
    return _refusal(row) if row else None


def _refusal(row: tuple[object, ...]) -> Refusal:
    seen_at = row[3]
    assert isinstance(seen_at, datetime)  # TIMESTAMPTZ NOT NULL
    return Refusal(str(row[0]), str(row[1]), _code(row[2] if isinstance(row[2], str) else None), seen_at)


def _code(value: str | None) -> RejectionCode | None:
    """A stored code this version knows; None for another version's (the message still says why)."""
    return next((c for c in REJECTION_CODES if c == value), None)


def write_refusals(db: duckdb.DuckDBPyConnection, plan: BatchPlan) -> None:
    """The refusals the plan set or cleared, and its rows without an axis, in the caller's transaction."""
    changed = plan.refusals_changed()
    gone = [*changed, *((LEGACY_AXIS, p) for p in plan.legacy_dropped | set(plan.legacy))]
    if gone:
        db.execute(
            "DELETE FROM rejected USING (SELECT unnest($1) AS axis, unnest($2) AS path) k "
            "WHERE rejected.axis = k.axis AND rejected.path = k.path",
            unnest_columns(gone),
        )
    rows = [_row(*k, r) for k, r in changed.items() if r is not None]
    rows += [_row(LEGACY_AXIS, p, r) for p, r in plan.legacy.items()]
    if rows:
        db.execute(
            "INSERT INTO rejected SELECT unnest($1), unnest($2), unnest($3), unnest($4), "
            "unnest($5::TIMESTAMPTZ[]), unnest($6::VARCHAR[]), unnest($7::TIMESTAMPTZ[]), unnest($8::BIGINT[])",
            unnest_columns(rows),
        )


def _row(axis: str, path: str, r: Refused) -> tuple[object, ...]:
    """A row of `rejected`, its columns in order."""
    return (axis, path, r.sha256, r.reason, r.seen_at, r.code, r.event_time, r.raw_offset)
