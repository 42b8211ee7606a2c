"""The emissions outbox: each briefing recorded before its files and its topic message are made from it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import duckdb

from processors.models import Briefing, Trigger
from sinks import duck
from sinks.emission_bodies import PER_SOURCE, Body, unpack


@dataclass(frozen=True)
class EmissionRecord:
    """One recorded briefing, byte for byte: the source of truth for its files and its topic message."""

    basename: str
    briefing_json: bytes  # UTF-8, as recorded
    # UTF-8: as a str the Markdown takes 4 bytes a character (its status marks are outside the BMP), ~160 MB
    # for a 100k window against ~45 MB of bytes. None: restored from the briefings topic (JSON only).
    markdown: bytes | None
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


_PER_SOURCE = "{" + ", ".join(f'"{name}": []' for name in PER_SOURCE) + "}"
# A briefing whole: its texts packed in emission_bodies (sinks.emission_bodies) when recorded so, else the
# emissions row's own columns (recorded by a version before the bodies were packed).
_JOINED = (
    "emissions e LEFT JOIN emission_bodies b "
    "ON b.axis = e.axis AND b.window_end = e.window_end AND b.trigger = e.trigger"
)
_WHOLE_JSON = "b.briefing_zst, CASE WHEN b.briefing_zst IS NULL THEN e.briefing_json END"
# A briefing's place among the axis's: by window end, then by when it was recorded (a close and a flush can
# end at the same time).
_ORDER = "window_end, emitted_at, trigger"


class Emissions:
    """The emissions table, one row per (axis, window end, trigger), and the packed bodies of its briefings."""

    def __init__(self, db: duckdb.DuckDBPyConnection) -> None:
        self._db = db

    def record(
        self,
        briefing: Briefing,
        basename: str,
        markdown: str | bytes | None,  # None: `body` packs it already
        emitted_at: datetime,
        body: Body | None = None,  # the briefing packed, when packed already (by the caller, in a thread)
    ) -> bool:
        """Record a briefing before anything is written or sent; False if (axis, end, trigger) already was."""
        if body is None:
            body = Body.of(briefing, briefing.model_dump_json(by_alias=True), markdown)
        with duck.transaction(self._db):
            return self._insert(briefing, basename, body, emitted_at, delivered_at=None)

    def restore(self, briefing: Briefing, basename: str) -> bool:
        """Record a briefing read back from the briefings topic (so delivered); False if already held.

        In the caller's transaction (the offset it was read at is claimed in the same one)."""
        when = briefing.generated_at
        body = Body.of(briefing, briefing.model_dump_json(by_alias=True), None)
        return self._insert(briefing, basename, body, emitted_at=when, delivered_at=when)

    def _insert(
        self,
        briefing: Briefing,
        basename: str,
        body: Body,
        emitted_at: datetime,
        delivered_at: datetime | None,
    ) -> bool:
        key = [briefing.axis, briefing.window.end, briefing.trigger]
        inserted = self._db.execute(
            "INSERT OR IGNORE INTO emissions VALUES (?, ?, ?, ?, ?, ?, NULL, ?) RETURNING axis",
            [*key, basename, emitted_at, body.head_json, delivered_at],
        ).fetchall()
        if inserted:
            self._db.execute(
                "INSERT INTO emission_bodies VALUES (?, ?, ?, ?, ?, ?)",
                [*key, body.sources, body.briefing_zst, body.markdown_zst],
            )
        return bool(inserted)

    def record_of(self, axis: str, window_end: datetime, trigger: str) -> EmissionRecord | None:
        """The recorded bytes of an emission, or None if it was never recorded."""
        row = self._db.execute(
            f"SELECT e.basename, e.delivered_at, {_WHOLE_JSON}, b.markdown_zst, e.markdown FROM {_JOINED} "
            "WHERE e.axis=? AND e.window_end=? AND e.trigger=?",
            [axis, window_end, trigger],
        ).fetchone()
        if row is None:
            return None
        basename, delivered_at, briefing_zst, briefing_json, markdown_zst, markdown = row
        if briefing_zst is not None:
            briefing_json = unpack(briefing_zst)
            markdown = unpack(markdown_zst) if markdown_zst is not None else None
        else:  # recorded before bodies were packed
            briefing_json = briefing_json.encode()
            markdown = markdown.encode() if markdown is not None else None
        return EmissionRecord(basename, briefing_json, markdown, delivered_at)

    def _whole(self, where: str, params: list[object]) -> Briefing | None:
        """The first briefing the WHERE (and ORDER) clause finds, whole."""
        row = self._db.execute(
            f"SELECT {_WHOLE_JSON} FROM {_JOINED} WHERE {where} LIMIT 1",
            params,
        ).fetchone()
        if row is None:
            return None
        return Briefing.model_validate_json(unpack(row[0]) if row[0] is not None else row[1])

    def briefing(self, axis: str, window_end: datetime, trigger: str) -> Briefing | None:
        return self._whole("e.axis=? AND e.window_end=? AND e.trigger=?", [axis, window_end, trigger])

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
        return self._whole("e.axis=? ORDER BY e.emitted_at DESC", [axis])

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
            "SELECT e.axis, e.window_end, e.trigger, basename, emitted_at, "
            "coalesce(b.sources, json_array_length(briefing_json, '$.sources')), "
            "json_array_length(briefing_json, '$.increments'), json_array_length(briefing_json, '$.discrepancies') "
            f"FROM {_JOINED} ORDER BY e.axis, e.window_end, e.emitted_at, e.trigger"
        ).fetchall()
        return [
            EmissionEntry(
                str(r[0]), r[1], str(r[2]), str(r[3]), r[4], int(r[5] or 0), int(r[6] or 0), int(r[7] or 0)
            )
            for r in rows
        ]

    def by_basename(self, axis: str, basename: str) -> Briefing | None:
        """The axis's briefing written under this file name (what the briefing browser links to), or None."""
        return self._whole("e.axis=? AND e.basename=?", [axis, basename])

    def discrepancy_lists(self, axis: str) -> list[tuple[datetime, str, str]]:
        """Per briefing of the axis, in order: (window end, trigger, its D-items as JSON), the rest left unread."""
        rows = self._db.execute(
            f"SELECT window_end, trigger, CAST(briefing_json->'$.discrepancies' AS VARCHAR) FROM emissions "
            f"WHERE axis=? ORDER BY {_ORDER}",
            [axis],
        ).fetchall()
        return [(r[0], str(r[1]), r[2] or "[]") for r in rows]
