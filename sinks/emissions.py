"""The emissions outbox: each briefing recorded before its files and its topic message are made from it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import duckdb

from processors.models import Briefing, Trigger
from sinks import duck


@dataclass(frozen=True)
class EmissionRecord:
    """One recorded briefing, byte for byte: the source of truth for its files and its topic message."""

    basename: str
    briefing_json: str
    markdown: str | None  # None: restored from the briefings topic, which carries the JSON only
    delivered_at: datetime | None  # None until the briefing topic acknowledged it

    @property
    def delivered(self) -> bool:
        return self.delivered_at is not None


@dataclass(frozen=True)
class EmissionEntry:
    """One recorded briefing as an index lists it: its key, its time and its sizes, no JSON decoded."""

    axis: str
    window_end: datetime
    trigger: str
    basename: str
    emitted_at: datetime
    sources: int
    increments: int
    discrepancies: int


_PER_SOURCE = '{"sources": [], "no_increment_sources": [], "rejected": []}'
# A briefing's place among the axis's: by window end, then by when it was recorded (a close and a flush can
# end at the same time).
_ORDER = "window_end, emitted_at, trigger"


class Emissions:
    """The emissions table, one row per (axis, window end, trigger)."""

    def __init__(self, db: duckdb.DuckDBPyConnection) -> None:
        self._db = db

    def record(
        self,
        briefing: Briefing,
        basename: str,
        markdown: str,
        emitted_at: datetime,
        briefing_json: str
        | None = None,  # the briefing's JSON, when made already (by the caller, in a thread)
    ) -> bool:
        """Record a briefing before anything is written or sent; False if (axis, end, trigger) already was."""
        with duck.transaction(self._db):
            inserted = self._insert(briefing, basename, None, emitted_at, None, briefing_json)
            if inserted:
                # The Markdown in a statement of its own: DuckDB's transient for a statement is a few times the
                # strings it carries (~0.9 GiB for the ~80 + ~45 MB of a 100k window's in one; less in two).
                self._db.execute(
                    "UPDATE emissions SET markdown=? WHERE axis=? AND window_end=? AND trigger=?",
                    [markdown, briefing.axis, briefing.window.end, briefing.trigger],
                )
        return inserted

    def restore(self, briefing: Briefing, basename: str) -> bool:
        """Record a briefing read back from the briefings topic (so delivered); False if already held."""
        when = briefing.generated_at
        return self._insert(briefing, basename, None, emitted_at=when, delivered_at=when)

    def _insert(
        self,
        briefing: Briefing,
        basename: str,
        markdown: str | None,
        emitted_at: datetime,
        delivered_at: datetime | None,
        briefing_json: str | None = None,
    ) -> bool:
        inserted = self._db.execute(
            "INSERT OR IGNORE INTO emissions VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING axis",
            [
                briefing.axis,
                briefing.window.end,
                briefing.trigger,
                basename,
                emitted_at,
                briefing_json if briefing_json is not None else briefing.model_dump_json(by_alias=True),
                markdown,
                delivered_at,
            ],
        ).fetchall()
        return bool(inserted)

    def record_of(self, axis: str, window_end: datetime, trigger: str) -> EmissionRecord | None:
        """The recorded bytes of an emission, or None if it was never recorded."""
        row = self._db.execute(
            "SELECT basename, briefing_json, markdown, delivered_at FROM emissions "
            "WHERE axis=? AND window_end=? AND trigger=?",
            [axis, window_end, trigger],
        ).fetchone()
        if row is None:
            return None
        return EmissionRecord(basename=row[0], briefing_json=row[1], markdown=row[2], delivered_at=row[3])

    def briefing(self, axis: str, window_end: datetime, trigger: str) -> Briefing | None:
        row = self._db.execute(
            "SELECT briefing_json FROM emissions WHERE axis=? AND window_end=? AND trigger=?",
            [axis, window_end, trigger],
        ).fetchone()
        return Briefing.model_validate_json(row[0]) if row else None

    def mark_delivered(self, axis: str, window_end: datetime, trigger: str, when: datetime) -> None:
        """Note that the briefing topic acknowledged the recorded briefing (the first time stays)."""
        self._db.execute(
            "UPDATE emissions SET delivered_at=? WHERE axis=? AND window_end=? AND trigger=? "
            "AND delivered_at IS NULL",
            [when, axis, window_end, trigger],
        )

    def undelivered(self) -> list[tuple[str, datetime, Trigger]]:
        """(axis, window end, trigger) of every emission the briefing topic has not acknowledged, oldest first."""
        rows = self._db.execute(
            "SELECT axis, window_end, trigger FROM emissions WHERE delivered_at IS NULL ORDER BY emitted_at, axis"
        ).fetchall()
        return [(str(a), w, "close" if t == "close" else "flush") for a, w, t in rows]

    def earlier(self, axis: str, before: datetime) -> list[Briefing]:
        """The axis's briefings of windows ending before `before`, oldest first, without their per-source lists
        (sources, no-increment reasons, rejections): what later briefings continue from is their ids, titles and
        D numbers, and a briefing of a 100k window lists 100k sources (DuckDB drops them before they are read)."""
        rows = self._db.execute(
            f"SELECT json_merge_patch(briefing_json, '{_PER_SOURCE}') FROM emissions WHERE axis=? AND window_end < ? "
            "ORDER BY window_end",
            [axis, before],
        ).fetchall()
        return [Briefing.model_validate_json(r[0]) for r in rows]

    def latest(self, axis: str) -> Briefing | None:
        row = self._db.execute(
            "SELECT briefing_json FROM emissions WHERE axis=? ORDER BY emitted_at DESC LIMIT 1", [axis]
        ).fetchone()
        return Briefing.model_validate_json(row[0]) if row else None

    def last_close_end(self, axis: str) -> datetime | None:
        return self._latest("max(window_end)", "axis=? AND trigger='close'", axis)

    def last_emitted_at(self, axis: str) -> datetime | None:
        """When the axis's latest briefing (any trigger) was recorded."""
        return self._latest("max(emitted_at)", "axis=?", axis)

    def _latest(self, column: str, where: str, axis: str) -> datetime | None:
        row = self._db.execute(f"SELECT {column} FROM emissions WHERE {where}", [axis]).fetchone()
        value = row[0] if row else None
        return value if isinstance(value, datetime) else None

    def entries(self) -> list[EmissionEntry]:
        """Every recorded briefing, by axis and in order; sizes counted by DuckDB from the JSON."""
        rows = self._db.execute(
            "SELECT axis, window_end, trigger, basename, emitted_at, "
            "json_array_length(briefing_json, '$.sources'), json_array_length(briefing_json, '$.increments'), "
            f"json_array_length(briefing_json, '$.discrepancies') FROM emissions ORDER BY axis, {_ORDER}"
        ).fetchall()
        return [
            EmissionEntry(
                str(r[0]), r[1], str(r[2]), str(r[3]), r[4], int(r[5] or 0), int(r[6] or 0), int(r[7] or 0)
            )
            for r in rows
        ]

    def by_basename(self, axis: str, basename: str) -> Briefing | None:
        """The axis's briefing written under this file name (what the briefing browser links to), or None."""
        row = self._db.execute(
            "SELECT briefing_json FROM emissions WHERE axis=? AND basename=?", [axis, basename]
        ).fetchone()
        return Briefing.model_validate_json(row[0]) if row else None

    def discrepancy_lists(self, axis: str) -> list[tuple[datetime, str, str]]:
        """Per briefing of the axis, in order: (window end, trigger, its D-items as JSON), the rest left unread."""
        rows = self._db.execute(
            f"SELECT window_end, trigger, CAST(briefing_json->'$.discrepancies' AS VARCHAR) FROM emissions "
            f"WHERE axis=? ORDER BY {_ORDER}",
            [axis],
        ).fetchall()
        return [(r[0], str(r[1]), r[2] or "[]") for r in rows]
